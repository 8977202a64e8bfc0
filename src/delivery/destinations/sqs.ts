import { SQSClient, SendMessageCommand, type MessageAttributeValue } from '@aws-sdk/client-sqs';
import type { Connect, Publication } from './types.js';
import { awsClientConfig, awsConnection } from './aws.js';

// Amazon SQS through the AWS SDK v3: one SendMessage per attempt, the signed body as the message body and
// the headers as String message attributes. SQS takes at most 10 attributes: the signature and trace
// headers go first, then the endpoint's own while there is room (docs/destinations.md). A FIFO queue (its
// URL ends in .fifo) gets MessageGroupId = the endpoint id (its messages in order) and
// MessageDeduplicationId = the webhook-id (SQS drops a repeat within its five-minute window). The
// MessageId is the answer.

const MAX_ATTRIBUTES = 10;
const FIRST = /^(webhook-|svix-|traceparent$|tracestate$)/;

export const connectSqs: Connect = async (destination, network, timeoutMs) => {
  const client = new SQSClient(awsClientConfig(destination, network, timeoutMs));
  const queueUrl = destination.url;
  const fifo = new URL(queueUrl).pathname.endsWith('.fifo');
  return awsConnection(client, async (message: Publication) => {
    const names = Object.keys(message.headers).sort((a, b) => Number(!FIRST.test(a)) - Number(!FIRST.test(b)));
    const attributes: Record<string, MessageAttributeValue> = {};
    for (const name of names.slice(0, MAX_ATTRIBUTES))
      attributes[name] = { DataType: 'String', StringValue: message.headers[name]! };
    const sent = await client.send(
      new SendMessageCommand({
        QueueUrl: queueUrl,
        MessageBody: message.body,
        MessageAttributes: attributes,
        ...(fifo ? { MessageGroupId: message.values.endpoint_id, MessageDeduplicationId: message.id } : {}),
      }),
    );
    return `sqs: MessageId ${sent.MessageId}`;
  });
};

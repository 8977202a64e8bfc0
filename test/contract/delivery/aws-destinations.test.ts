import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { ReceiveMessageCommand, SQSClient } from '@aws-sdk/client-sqs';
import { GetObjectCommand, S3Client } from '@aws-sdk/client-s3';
import { startFauxqs } from 'fauxqs';
import { setup } from '../../support/delivery.js';
import { verified } from '../../support/brokers.js';

// SQS and S3 destinations against the fauxqs emulator (started on a free port; it listens on every
// interface, so these tests address it on loopback only): the signed body as the message or the object,
// the headers as message attributes or object metadata, the MessageId or the ETag as the answer; a FIFO
// queue's group and dedupe ids; a queue that does not exist yet gives failed attempts until it does.

const ENV = { HERALD_RETRY_SCHEDULE: '0s,300ms,600ms,1s,1s,1s' };
const CREDENTIALS = { accessKeyId: 'herald-test', secretAccessKey: 'herald-test-secret' };

async function emulator(t: TestContext) {
  // Its queue URLs name sqs.<region>.localhost; the requests go to endpoint_url, on loopback.
  const server = await startFauxqs({ port: 0, logger: false });
  t.after(() => server.stop());
  const endpointUrl = `http://127.0.0.1:${server.port}`;
  const config = {
    region: 'us-east-1',
    access_key_id: CREDENTIALS.accessKeyId,
    secret_access_key: CREDENTIALS.secretAccessKey,
    endpoint_url: endpointUrl,
  };
  const client = { region: 'us-east-1', endpoint: endpointUrl, credentials: CREDENTIALS };
  return { server, endpointUrl, config, client };
}

test('sqs: a message with the signature headers as attributes; FIFO queues get group and dedupe ids', async (t) => {
  const s = await setup(t, ENV);
  const aws = await emulator(t);
  const { queueUrl } = aws.server.createQueue('herald-standard');
  const { queueUrl: fifoUrl } = aws.server.createQueue('herald-ordered.fifo', { attributes: { FifoQueue: 'true' } });
  const sqs = new SQSClient(aws.client);
  t.after(() => sqs.destroy());

  const endpoint = await s.endpoint(queueUrl, { type: 'sqs', config: aws.config });
  const read = await s.api.get(`/api/v1/endpoints/${endpoint.id}`);
  assert.equal(read.body.config.secret_access_key, '<redacted>');
  const message = await s.emit({ amount: 3 });
  const delivery = await s.until(message.deliveryIds[0]!, (d) => d.status === 'success', 'delivered');
  const received = await sqs.send(
    new ReceiveMessageCommand({ QueueUrl: queueUrl, MessageAttributeNames: ['All'], MaxNumberOfMessages: 10 }),
  );
  assert.equal(received.Messages?.length, 1);
  const [sqsMessage] = received.Messages!;
  const headers = Object.fromEntries(
    Object.entries(sqsMessage!.MessageAttributes ?? {}).map(([k, v]) => [k, v.StringValue!]),
  );
  verified({ body: sqsMessage!.Body!, headers, meta: {} }, endpoint.secret);
  assert.equal(delivery.attempts[0]!.response_body, `sqs: MessageId ${sqsMessage!.MessageId}`);

  await s.api.delete(`/api/v1/endpoints/${endpoint.id}`);
  const fifo = await s.endpoint(fifoUrl, { type: 'sqs', config: aws.config });
  const second = await s.emit({ amount: 4 });
  await s.until(second.deliveryIds[0]!, (d) => d.status === 'success', 'delivered to the FIFO queue');
  const fromFifo = await sqs.send(
    new ReceiveMessageCommand({
      QueueUrl: fifoUrl,
      MessageAttributeNames: ['All'],
      MessageSystemAttributeNames: ['MessageGroupId', 'MessageDeduplicationId'],
    }),
  );
  const [ordered] = fromFifo.Messages!;
  assert.equal(ordered!.Attributes?.MessageGroupId, fifo.id);
  assert.equal(ordered!.Attributes?.MessageDeduplicationId, second.id);
});

test('sqs: a queue that does not exist yet gives failed attempts, then delivers once it does', async (t) => {
  const s = await setup(t, ENV);
  const aws = await emulator(t);
  // The emulator's own form of a queue URL (its host a name that is never resolved: requests go to endpoint_url).
  const queueUrl = aws.server.createQueue('herald-probe').queueUrl.replace('herald-probe', 'herald-later');
  await s.endpoint(queueUrl, { type: 'sqs', config: aws.config });
  const message = await s.emit({ n: 1 });
  const failed = await s.until(message.deliveryIds[0]!, (d) => d.attempts.length >= 1, 'a failed attempt');
  assert.match(failed.attempts[0]!.error!, /^sqs: .*(NonExistentQueue|QueueDoesNotExist)/);
  assert.ok(!failed.attempts[0]!.error!.includes(CREDENTIALS.secretAccessKey));
  aws.server.createQueue('herald-later');
  await s.until(message.deliveryIds[0]!, (d) => d.status === 'success', 'delivered once the queue exists');
});

test('s3: one object per delivery at the key template, metadata for the headers, the ETag as the answer', async (t) => {
  const s = await setup(t, ENV);
  const aws = await emulator(t);
  aws.server.createBucket('herald-archive');
  const s3 = new S3Client({ ...aws.client, forcePathStyle: true });
  t.after(() => s3.destroy());
  const endpoint = await s.endpoint('s3://herald-archive', { type: 's3', config: aws.config });
  const message = await s.emit({ amount: 8 });
  const delivery = await s.until(message.deliveryIds[0]!, (d) => d.status === 'success', 'delivered');
  const key = `${s.appId}/invoice.paid/${message.id}.json`;
  const object = await s3.send(new GetObjectCommand({ Bucket: 'herald-archive', Key: key }));
  const body = await object.Body!.transformToString();
  verified({ body, headers: object.Metadata ?? {}, meta: {} }, endpoint.secret);
  assert.equal(object.ContentType, 'application/json');
  assert.equal(delivery.attempts[0]!.response_body, `s3: s3://herald-archive/${key} ETag ${object.ETag}`);
});

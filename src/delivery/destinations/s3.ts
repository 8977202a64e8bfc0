import { PutObjectCommand, S3Client } from '@aws-sdk/client-s3';
import { renderedProblem, renderTemplate } from '../../domain/destinations.js';
import type { Connect, Publication } from './types.js';
import { awsClientConfig, awsConnection } from './aws.js';

// Amazon S3 (and S3-compatible stores through endpoint_url) through the AWS SDK v3: one object per
// attempt at the key template's value, the signed body as its content (application/json) and the headers
// as its metadata (x-amz-meta-*). A retry writes the same key again. The ETag is the answer.

export const connectS3: Connect = async (destination, network, timeoutMs) => {
  const config = awsClientConfig(destination, network, timeoutMs);
  // An endpoint of its own (an emulator, MinIO) takes buckets in the path; AWS takes them in the host name.
  const client = new S3Client({ ...config, forcePathStyle: 'endpoint' in config });
  const bucket = new URL(destination.url).hostname;
  return awsConnection(client, async (message: Publication, settings) => {
    const key = renderTemplate(String(settings.key ?? '{app_id}/{event_type}/{message_id}.json'), message.values);
    const problem = renderedProblem('s3', 'key', key);
    if (problem) throw new Error(problem);
    const written = await client.send(
      new PutObjectCommand({
        Bucket: bucket,
        Key: key,
        Body: message.body,
        ContentType: 'application/json',
        Metadata: message.headers,
      }),
    );
    return `s3: s3://${bucket}/${key} ETag ${written.ETag}`;
  });
};

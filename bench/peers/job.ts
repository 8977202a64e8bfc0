import { Agent } from 'undici';
import { outboundBody } from '../../src/domain/envelope.js';
import { signPayload } from '../../src/domain/secrets.js';
import { emitBody } from '../lib/herald.js';

// The delivery job both peers run: the body Herald would send for the same emitted payload, signed with
// Herald's own signing function (Standard Webhooks, HMAC-SHA256 over `{id}.{timestamp}.{body}`), POSTed
// to the job's endpoint with an undici Agent capped at the same number of connections per origin as a
// Herald worker.

/** What one queued job carries: the message, as an application would hand it to its queue. */
export interface DeliveryJob {
  id: string;
  type: string;
  createdAt: number;
  payload: unknown;
  /** The endpoint's URL; without one, the sender's own. */
  url?: string;
}

/** The endpoint's signing secret (one fixed secret: the peers look no endpoint up). */
export const PEER_SECRET = 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw';
const USER_AGENT = 'Herald-Bench-Peer/1';

/** Message n: the payload of Herald's emit number n (the same size and shape, and the same `more` fields). */
export function peerJob(n: number, createdAt: number, more: Record<string, unknown> = {}): DeliveryJob {
  const { payload } = JSON.parse(emitBody('app', n, more)) as { payload: unknown };
  return { id: `evt_peer${String(n).padStart(22, '0')}`, type: 'invoice.paid', createdAt, payload };
}

export interface JobSender {
  /** Signs and POSTs one job; rejects on a non-2xx answer, so the queue counts it failed. */
  deliver(job: DeliveryJob): Promise<void>;
  close(): Promise<void>;
}

/** How the application hands a job to its queue, one at a time, as each message is emitted. */
export interface JobProducer {
  add(job: DeliveryJob): Promise<void>;
  close(): Promise<void>;
}

export function jobSender(url: string, connections: number, secret = PEER_SECRET): JobSender {
  const endpoint = new URL(url);
  const agent = new Agent({ connections, keepAliveTimeout: 4_000 });
  return {
    async deliver(job) {
      const { origin, pathname } = job.url ? new URL(job.url) : endpoint;
      const body = outboundBody(job.type, job.createdAt, JSON.stringify(job.payload));
      const timestamp = Math.floor(Date.now() / 1000);
      const response = await agent.request({
        origin,
        path: pathname,
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          'user-agent': USER_AGENT,
          'webhook-id': job.id,
          'webhook-timestamp': String(timestamp),
          'webhook-signature': signPayload(secret, job.id, timestamp, body),
        },
        body,
      });
      await response.body.dump();
      if (response.statusCode < 200 || response.statusCode >= 300)
        throw new Error(`endpoint answered ${response.statusCode}`);
    },
    close: () => agent.close(),
  };
}

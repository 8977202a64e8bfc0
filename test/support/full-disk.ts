import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { closeSync, mkdtempSync, openSync, rmSync, writeSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type Kysely, sql } from 'kysely';
import type { Database } from '../../src/store/schema.js';
import type { Client } from './client.js';
import { eventually, type Receiver } from './receiver.js';

// A disk that fills up while a test runs: a size-limited tmpfs (mounting one needs root), a file that
// takes whatever room is left on it, and the emits and checks the full-disk tests share.

/**
 * A tmpfs of `mb` megabytes at a new directory, or why it cannot be mounted here. `unmount` removes it
 * (lazily, so that a file still open elsewhere does not keep it).
 */
export function mountSmallDisk(mb: number): { dir: string; unmount(): void } | { skip: string } {
  const dir = mkdtempSync(join(tmpdir(), 'herald-full-disk-'));
  try {
    execFileSync('mount', ['-t', 'tmpfs', '-o', `size=${mb}m,mode=0700`, 'tmpfs', dir], { stdio: 'pipe' });
  } catch (error) {
    rmSync(dir, { recursive: true, force: true });
    const why = (error as { stderr?: Buffer }).stderr?.toString().trim() || (error as Error).message;
    return { skip: `cannot mount a size-limited tmpfs here (needs root): ${why}` };
  }
  return {
    dir,
    unmount() {
      execFileSync('umount', ['-l', dir], { stdio: 'pipe' });
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** Writes a file in `dir` until the filesystem refuses (ENOSPC); returns its path. */
export function fill(dir: string): string {
  const file = join(dir, 'filler');
  const fd = openSync(file, 'w');
  try {
    for (const size of [1 << 20, 1 << 12]) {
      const chunk = Buffer.alloc(size, 7);
      for (;;) {
        try {
          writeSync(fd, chunk);
        } catch (error) {
          if ((error as NodeJS.ErrnoException).code === 'ENOSPC') break;
          throw error;
        }
      }
    }
  } finally {
    closeSync(fd);
  }
  return file;
}

/**
 * Emits with idempotency keys to a store whose disk fills up: each emit is answered 201/200 (`acked`,
 * one message id per key) or 503 storage_full with Retry-After (`refused`), never anything else.
 */
export function emitter(api: Client, appId: string, payloadOf: (key: string) => Record<string, unknown>) {
  const acked = new Map<string, string>(); // key → message id
  const refused: string[] = [];
  const emit = async (key: string) => {
    const reply = await api.post(
      '/api/v1/messages',
      { app_id: appId, event_type: 'invoice.paid', payload: { key, ...payloadOf(key) } },
      { 'idempotency-key': key },
    );
    assert.ok(
      reply.status === 201 || reply.status === 200 || reply.status === 503,
      `emit ${key}: ${reply.status} ${JSON.stringify(reply.body).slice(0, 300)}`,
    );
    if (reply.status === 503) {
      assert.equal(reply.body.error.code, 'storage_full', JSON.stringify(reply.body));
      assert.equal(typeof reply.body.error.request_id, 'string');
      assert.equal(reply.headers.get('retry-after'), '5');
      refused.push(key);
    } else {
      assert.equal(acked.get(key) ?? reply.body.id, reply.body.id, `key ${key} answered one id`);
      acked.set(key, reply.body.id);
    }
    return reply.status;
  };
  return { emit, acked, refused };
}

/**
 * Everything acknowledged arrived with its payload and is recorded as a success, and the store holds one
 * message and one payload per key: none saved without an answer.
 */
export async function assertAcknowledgedDelivered(
  acked: Map<string, string>,
  receiver: Receiver,
  db: Kysely<Database>,
): Promise<void> {
  const arrived = () => new Set(receiver.received.map((r) => String(r.headers['webhook-id'])));
  await eventually(async () => [...acked.values()].every((id) => arrived().has(id)), 30_000, 'every message delivered');
  await eventually(
    async () => {
      const row = await sql<{
        n: number | string;
      }>`select count(*) as n from deliveries where status != 'success'`.execute(db);
      return Number(row.rows[0]!.n) === 0;
    },
    30_000,
    'every delivery recorded as a success',
  );
  const count = async (table: 'messages' | 'payloads') =>
    Number((await sql<{ n: number | string }>`select count(*) as n from ${sql.table(table)}`.execute(db)).rows[0]!.n);
  assert.equal(await count('messages'), acked.size, 'one stored message per key, none saved without an answer');
  assert.equal(await count('payloads'), acked.size, 'each stored message has its payload');
  for (const [key, id] of acked) {
    const bodies = receiver.received.filter((r) => r.headers['webhook-id'] === id).map((r) => r.body);
    assert.ok(
      bodies.length > 0 && bodies.every((b) => b.includes(`"key":"${key}"`)),
      `${id} delivered with its payload`,
    );
  }
}

// Runs on a worker thread started by ReadsOffLoop (reads-off-loop.ts): long reads of the embedded store,
// such as a month of stats, on a connection of its own, so that the service's event loop, which every
// tenant shares, never waits for them. The connection only reads (query_only), and WAL lets it read while
// the service writes.
import { parentPort, workerData } from 'node:worker_threads';
import Database from 'better-sqlite3';
import type { ReadCall, ReadReply } from './reads-off-loop.js';

const db = new Database((workerData as { file: string }).file, { fileMustExist: true });
db.pragma('busy_timeout = 5000');
db.pragma('query_only = ON');
/** Prepared statements by SQL text: the reads sent here are a few fixed statements. */
const statements = new Map<string, Database.Statement>();
const port = parentPort!;

port.on('message', (call: ReadCall | 'close') => {
  if (call === 'close') {
    db.close();
    port.close();
    return;
  }
  let reply: ReadReply;
  try {
    let statement = statements.get(call.sql);
    if (!statement) {
      statement = db.prepare(call.sql);
      if (statements.size < 100) statements.set(call.sql, statement);
    }
    reply = { id: call.id, rows: statement.all(...call.parameters) };
  } catch (error) {
    reply = { id: call.id, error: (error as Error).message };
  }
  port.postMessage(reply);
});

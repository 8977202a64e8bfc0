// Runs on a worker thread started by openSqlite (db.ts): copies committed WAL pages into the database
// file with a connection of its own, so that work happens on another core instead of inside a commit on
// the event loop. PASSIVE checkpoints never wait for the service's connection and never block it.
import { parentPort, workerData } from 'node:worker_threads';
import Database from 'better-sqlite3';

interface CheckpointResult {
  busy: number;
  log: number;
  checkpointed: number;
}

/** Between looks when nothing changed; commits are copied within this long. */
const IDLE_MS = 20;
/** Checkpoints failing in a row before the thread gives up; the service then checkpoints itself (db.ts). */
const MAX_FAILURES = 50;
/** Between tries while the disk is full: the thread waits for space instead of giving up. */
const FULL_MS = 500;

const db = new Database((workerData as { file: string }).file, { fileMustExist: true });
let last = '';
let failures = 0;
let timer = setTimeout(checkpoint, IDLE_MS);

function checkpoint() {
  let delay = IDLE_MS;
  try {
    const [result] = db.pragma('wal_checkpoint(PASSIVE)') as CheckpointResult[];
    if (!result) throw new Error('wal_checkpoint answered no row');
    const now = `${result.busy}|${result.log}|${result.checkpointed}`;
    // Still busy, or the WAL moved since the last look: look again at once. Catching up right after a
    // commit is what lets the next commit start the WAL over from its beginning. (Each checkpoint that
    // copies pages syncs the WAL and the database file: up to about two syncs per commit under load.)
    if (now !== last || result.busy !== 0) delay = 1;
    last = now;
    failures = 0;
  } catch (error) {
    const code = (error as { code?: string }).code;
    // A full disk is an operator's to fix and passes once space is freed: the thread waits it out, so
    // checkpoints go on off the event loop afterwards.
    if (code === 'SQLITE_FULL') delay = FULL_MS;
    // Locked for a moment (a schema change, say) is fine; another error that persists ends the thread.
    else if (++failures >= MAX_FAILURES) throw error;
  }
  timer = setTimeout(checkpoint, delay);
}

parentPort!.on('message', () => {
  clearTimeout(timer);
  db.close();
  parentPort!.close();
});

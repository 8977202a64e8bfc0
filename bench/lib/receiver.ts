import { benchFile, spawnNode, type Child } from './procs.js';

// The bench side of the receiver process (bench/receiver.ts).
/** A request's webhook-id, its arrival time, its path and, when its body carries one, its emit time. */
export type Arrival = [id: string, at: number, path: string, emittedAt?: number];

export class ReceiverProcess {
  private nextId = 1;
  private waiting = new Map<number, (message: any) => void>();
  url = '';

  private constructor(readonly child: Child) {
    child.proc.on('message', (message: any) => {
      const resolve = this.waiting.get(message.id);
      if (resolve) {
        this.waiting.delete(message.id);
        resolve(message);
      }
    });
  }

  static async start(logDir: string): Promise<ReceiverProcess> {
    const child = spawnNode({ name: 'receiver', script: benchFile('receiver.js'), ipc: true, logDir });
    const receiver = new ReceiverProcess(child);
    const port = await new Promise<number>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error('receiver did not start in 20 s')), 20_000);
      child.proc.on('message', (message: any) => {
        if (message.type === 'ready') {
          clearTimeout(timer);
          resolve(message.port);
        }
      });
      child.proc.once('exit', () => reject(new Error('receiver exited during start')));
    });
    receiver.url = `http://127.0.0.1:${port}`;
    return receiver;
  }

  private call(cmd: string, extra: Record<string, unknown> = {}, timeoutMs = 30_000): Promise<any> {
    const id = this.nextId++;
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.waiting.delete(id);
        reject(new Error(`receiver: no answer to ${cmd} in ${timeoutMs} ms`));
      }, timeoutMs);
      this.waiting.set(id, (message) => {
        clearTimeout(timer);
        resolve(message);
      });
      this.child.proc.send({ cmd, id, ...extra });
    });
  }

  async reset(): Promise<void> {
    await this.call('reset');
  }

  /** Requests arrived since the last reset (only those whose path starts with `prefix`, when given). */
  async count(prefix?: string): Promise<number> {
    return (await this.call('count', prefix ? { prefix } : {})).count;
  }

  /** Cuts off the slow answers still waiting, and every slow request until the next reset. */
  async cutSlow(): Promise<void> {
    await this.call('cut');
  }

  /** Resolves with the arrival time of the count-th request, or rejects after timeoutMs. */
  async waitFor(count: number, timeoutMs: number): Promise<number> {
    const reply = await this.call('expect', { count }, timeoutMs).catch(async (error) => {
      throw new Error(`${(error as Error).message} (receiver has ${await this.count().catch(() => '?')} of ${count})`);
    });
    return reply.at as number;
  }

  async arrivals(): Promise<Arrival[]> {
    return (await this.call('arrivals')).arrivals;
  }

  stop(): Promise<void> {
    return this.child.stop(2_000);
  }
}

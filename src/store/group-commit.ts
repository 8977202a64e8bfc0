// Group commit: requests that arrive while a batch is being written wait and go together in the next
// batch (one transaction, or one statement). One commit then serves many requests, which is what lifts
// ingest past one fsync per emit.
interface Waiting<In, Out> {
  input: In;
  resolve: (value: Out) => void;
  reject: (error: unknown) => void;
}

export interface GroupCommitOptions<In> {
  /** Batches written at once. */
  maxParallel: number;
  /** Most requests in one batch. */
  maxBatch?: number;
  /**
   * Most total `sizeOf` in one batch (a request larger than this still goes, alone): bounds what one
   * batch holds in memory and sends in one statement when requests are large.
   */
  maxBatchSize?: number;
  sizeOf?: (input: In) => number;
  /**
   * Under load, the least time between the end of one batch and the start of the next. A commit's fixed
   * cost (on SQLite the WAL writes of every B-tree page it touched, ~0.4 ms whether it holds one emit or
   * fifty) is then shared by more requests instead of being paid per request, which is what saturated the
   * CPU. "Under load" means the last batch held more than one request: a client sending one request at a
   * time is never held back.
   */
  minSpacingMs?: number;
}

export class GroupCommit<In, Out> {
  private queue: Waiting<In, Out>[] = [];
  private running = 0;
  private scheduled = false;
  private lastCommitAt = -Infinity;
  private lastBatchSize = 0;
  private readonly maxParallel: number;
  private readonly maxBatch: number;
  private readonly maxBatchSize: number;
  private readonly sizeOf: (input: In) => number;
  private readonly minSpacingMs: number;

  constructor(
    private readonly writeBatch: (inputs: In[]) => Promise<Out[]>,
    options: GroupCommitOptions<In>,
  ) {
    if (!(options.maxParallel >= 1 && (options.maxBatch ?? 1) >= 1))
      throw new Error('GroupCommit needs maxParallel and maxBatch of at least 1');
    this.maxParallel = options.maxParallel;
    this.maxBatch = options.maxBatch ?? 500;
    this.maxBatchSize = options.maxBatchSize ?? Infinity;
    this.sizeOf = options.sizeOf ?? (() => 0);
    this.minSpacingMs = options.minSpacingMs ?? 0;
  }

  submit(input: In): Promise<Out> {
    return new Promise<Out>((resolve, reject) => {
      this.queue.push({ input, resolve, reject });
      this.schedule();
    });
  }

  private schedule(): void {
    if (this.scheduled || this.running >= this.maxParallel || this.queue.length === 0) return;
    this.scheduled = true;
    const cut = () => {
      this.scheduled = false;
      this.flush();
    };
    // Let the requests of this event-loop turn join before the batch is cut; under load, also those of
    // the next `minSpacingMs` after the previous commit, so commits stay few and batches grow.
    const wait = this.lastBatchSize > 1 ? this.lastCommitAt + this.minSpacingMs - performance.now() : 0;
    if (wait >= 1) setTimeout(cut, wait);
    else setImmediate(cut);
  }

  private flush(): void {
    if (this.running >= this.maxParallel || this.queue.length === 0) return;
    const batch = this.queue.splice(0, this.batchLength());
    this.lastBatchSize = batch.length;
    this.running++;
    this.write(batch).finally(() => {
      this.running--;
      this.lastCommitAt = performance.now();
      this.schedule();
    });
    this.schedule();
  }

  /** How many of the waiting requests the next batch takes: at least one, within both limits. */
  private batchLength(): number {
    let length = 0;
    let size = 0;
    while (length < this.queue.length && length < this.maxBatch) {
      size += this.sizeOf(this.queue[length]!.input);
      if (length > 0 && size > this.maxBatchSize) break;
      length++;
    }
    return length;
  }

  private async write(batch: Waiting<In, Out>[]): Promise<void> {
    try {
      const outputs = await this.writeBatch(batch.map((w) => w.input));
      for (const [i, w] of batch.entries()) w.resolve(outputs[i]!);
    } catch (error) {
      if (batch.length === 1) return batch[0]!.reject(error);
      // One bad input must not fail the requests that happened to share its transaction: write each alone.
      for (const waiting of batch) {
        await this.writeBatch([waiting.input]).then(([output]) => waiting.resolve(output!), waiting.reject);
      }
    }
  }
}

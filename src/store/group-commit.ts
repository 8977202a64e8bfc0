// Group commit: requests that arrive while a batch is being written wait and go together in the next
// transaction. One commit then serves many requests, which is what lifts ingest past one fsync per emit.
interface Waiting<In, Out> {
  input: In;
  resolve: (value: Out) => void;
  reject: (error: unknown) => void;
}

export class GroupCommit<In, Out> {
  private queue: Waiting<In, Out>[] = [];
  private running = 0;
  private scheduled = false;

  constructor(
    private readonly writeBatch: (inputs: In[]) => Promise<Out[]>,
    private readonly maxParallel: number,
    private readonly maxBatch = 500,
  ) {}

  submit(input: In): Promise<Out> {
    return new Promise<Out>((resolve, reject) => {
      this.queue.push({ input, resolve, reject });
      this.schedule();
    });
  }

  private schedule(): void {
    if (this.scheduled || this.running >= this.maxParallel || this.queue.length === 0) return;
    this.scheduled = true;
    // Let the requests of this event-loop turn join before the batch is cut.
    setImmediate(() => {
      this.scheduled = false;
      this.flush();
    });
  }

  private flush(): void {
    if (this.running >= this.maxParallel || this.queue.length === 0) return;
    const batch = this.queue.splice(0, this.maxBatch);
    this.running++;
    this.write(batch).finally(() => {
      this.running--;
      this.schedule();
    });
    this.schedule();
  }

  private async write(batch: Waiting<In, Out>[]): Promise<void> {
    try {
      const outputs = await this.writeBatch(batch.map((w) => w.input));
      batch.forEach((w, i) => w.resolve(outputs[i]!));
    } catch (error) {
      if (batch.length === 1) return batch[0]!.reject(error);
      // One bad input must not fail the requests that happened to share its transaction: write each alone.
      for (const waiting of batch) {
        await this.writeBatch([waiting.input]).then(([output]) => waiting.resolve(output!), waiting.reject);
      }
    }
  }
}

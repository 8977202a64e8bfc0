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
    this.writeBatch(batch.map((w) => w.input))
      .then(
        (outputs) => batch.forEach((w, i) => w.resolve(outputs[i]!)),
        (error) => batch.forEach((w) => w.reject(error)),
      )
      .finally(() => {
        this.running--;
        this.schedule();
      });
    this.schedule();
  }
}

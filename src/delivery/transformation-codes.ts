// Endpoints' transformation code as a worker runs it: read from the store once per endpoint version and
// kept, the least recently used dropped first, within a bound on what the kept code weighs. A worker that
// delivers for many transformed endpoints reads each one's code once, not at each attempt, and holds at
// most the bound however many endpoints it sees.

/** What the kept entries may weigh: each code's characters and ENTRY_WEIGHT (about 32 MB of strings). */
export const CODES_WEIGHT_KEPT = 16 * 1024 * 1024;
/** What an entry weighs besides its code, so that endpoints without code are bounded too. */
const ENTRY_WEIGHT = 256;

interface Entry {
  version: number;
  read: Promise<string | null>;
  weight: number;
}

export class TransformationCodes {
  /** By endpoint id, the least recently used first. */
  private readonly entries = new Map<string, Entry>();
  private weight = 0;

  constructor(
    /** Reads an endpoint's enabled code from the store (null: none). */
    private readonly load: (endpointId: string) => Promise<string | null>,
    private readonly maxWeight = CODES_WEIGHT_KEPT,
  ) {}

  /** The endpoint's code of `version` (null: none), read once per version while it is kept. */
  get(endpointId: string, version: number): Promise<string | null> {
    const kept = this.entries.get(endpointId);
    if (kept?.version === version) {
      this.entries.delete(endpointId);
      this.entries.set(endpointId, kept);
      return kept.read;
    }
    if (kept) this.drop(endpointId, kept);
    const entry: Entry = { version, read: this.load(endpointId), weight: ENTRY_WEIGHT };
    this.entries.set(endpointId, entry);
    this.weight += entry.weight;
    entry.read.then(
      (code) => {
        if (this.entries.get(endpointId) !== entry) return;
        entry.weight += code?.length ?? 0;
        this.weight += code?.length ?? 0;
        this.trim();
      },
      // A read that failed is not reused: the next attempt reads again.
      () => this.entries.get(endpointId) === entry && this.drop(endpointId, entry),
    );
    this.trim();
    return entry.read;
  }

  /** Entries kept (for tests). */
  get size(): number {
    return this.entries.size;
  }

  private drop(endpointId: string, entry: Entry): void {
    this.entries.delete(endpointId);
    this.weight -= entry.weight;
  }

  /** Drops the least recently used entries until the rest fit, keeping the newest whatever it weighs. */
  private trim(): void {
    for (const [endpointId, entry] of this.entries) {
      if (this.weight <= this.maxWeight || this.entries.size === 1) return;
      this.drop(endpointId, entry);
    }
  }
}

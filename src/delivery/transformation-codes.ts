import { LRUCache } from 'lru-cache';

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
}

export class TransformationCodes {
  /** By endpoint id, each weighing ENTRY_WEIGHT and its code's length once read. */
  private readonly entries: LRUCache<string, Entry>;

  constructor(
    /** Reads an endpoint's enabled code from the store (null: none). */
    private readonly load: (endpointId: string) => Promise<string | null>,
    maxWeight = CODES_WEIGHT_KEPT,
  ) {
    this.entries = new LRUCache({ maxSize: maxWeight });
  }

  /** The endpoint's code of `version` (null: none), read once per version while it is kept. */
  get(endpointId: string, version: number): Promise<string | null> {
    const kept = this.entries.get(endpointId);
    if (kept?.version === version) return kept.read;
    const entry: Entry = { version, read: this.load(endpointId) };
    this.entries.set(endpointId, entry, { size: ENTRY_WEIGHT });
    entry.read.then(
      (code) => {
        // Weighed again once read, unless a newer version (or the bound) has replaced it meanwhile.
        if (this.entries.peek(endpointId) === entry)
          this.entries.set(endpointId, entry, { size: ENTRY_WEIGHT + (code?.length ?? 0) });
      },
      // A read that failed is not reused: the next attempt reads again.
      () => this.entries.peek(endpointId) === entry && this.entries.delete(endpointId),
    );
    return entry.read;
  }

  /** Entries kept (for tests). */
  get size(): number {
    return this.entries.size;
  }
}

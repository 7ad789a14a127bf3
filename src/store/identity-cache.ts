/**
 * Values read from files that are written once and never changed (sealed manifests, pack index
 * files), kept by this process for every store it opens: a process that opens the same store
 * again and again (the command server, one store per command) reads each file once. An entry is
 * used only while its file keeps the identity it was read with (device, inode, size, mtime: such
 * files are written whole, then renamed or linked into place). Least recently used first, and
 * bounded by a weight (the entries a value holds).
 */
export class IdentityCache<T> {
  readonly #byKey = new Map<string, { identity: string; value: T; weight: number }>();
  #weight = 0;

  /**
   * @param maxWeight the most weight kept; the least recently used go past it
   * @param weightOf a value's weight (its entries)
   */
  constructor(
    private readonly maxWeight: number,
    private readonly weightOf: (value: T) => number,
  ) {}

  /** The value cached under `key` when its file still has `identity`. */
  get(key: string, identity: string): T | undefined {
    const cached = this.#byKey.get(key);
    if (cached === undefined || cached.identity !== identity) return undefined;
    // Most recently used last, so eviction drops the least recently used.
    this.#byKey.delete(key);
    this.#byKey.set(key, cached);
    return cached.value;
  }

  /** Keeps `value` under `key`, evicting the least recently used past the bound. */
  remember(key: string, identity: string, value: T): void {
    this.forget(key);
    const weight = this.weightOf(value);
    this.#byKey.set(key, { identity, value, weight });
    this.#weight += weight;
    for (const [oldKey, old] of this.#byKey) {
      if (this.#weight <= this.maxWeight || oldKey === key) break;
      this.#byKey.delete(oldKey);
      this.#weight -= old.weight;
    }
  }

  /** Drops what is cached under `key` (its file is gone). */
  forget(key: string): void {
    const previous = this.#byKey.get(key);
    if (previous === undefined) return;
    this.#byKey.delete(key);
    this.#weight -= previous.weight;
  }
}

import type { PictureRecord } from './picture.js';

// A picture's records as the last picture's map plus what changed (issue #28): the last picture
// stays the baseline of an open call, so it is never written to, and copying it whole costs what
// a full sweep's map costs. One layer only: a layer over a layered map copies that map's layer
// (what changed since the root, small) instead of stacking, so a read is at most two lookups.

/** An empty root for a cleared map. */
const EMPTY: ReadonlyMap<string, PictureRecord> = new Map();

/**
 * A `Map` of picture records that reads through to a root map it never writes: `set` and `delete`
 * go to its own layer. It is a `Map` (subclass) so every consumer of a picture's records reads it
 * as one; its own storage as a `Map` stays empty, so only the overridden methods may be used (no
 * `Map.prototype.get.call`, no structured clone). Iteration gives the root's order with the
 * layer's values, then the layer's new paths.
 */
export class LayeredRecords extends Map<string, PictureRecord> {
  #root: ReadonlyMap<string, PictureRecord>;
  #layer: Map<string, PictureRecord>;
  /** Root paths deleted in this map (one set again is the layer's, at the end of the order, as a Map puts it). */
  #removed: Set<string>;
  #size: number;

  /** A map equal to `base`, which it never writes (a layered `base` lends its root and a copy of its layer). */
  constructor(base: ReadonlyMap<string, PictureRecord>) {
    super();
    if (base instanceof LayeredRecords) {
      this.#root = base.#root;
      this.#layer = new Map(base.#layer);
      this.#removed = new Set(base.#removed);
      this.#size = base.#size;
    } else {
      this.#root = base;
      this.#layer = new Map();
      this.#removed = new Set();
      this.#size = base.size;
    }
  }

  /** Paths the layer holds or removes: what a read may pay beyond the root, and what flattening would drop. */
  get layerSize(): number {
    return this.#layer.size + this.#removed.size;
  }

  /** The map never written that this one reads through to. */
  get rootSize(): number {
    return this.#root.size;
  }

  override get size(): number {
    return this.#size;
  }

  override get(key: string): PictureRecord | undefined {
    const own = this.#layer.get(key);
    if (own !== undefined) return own;
    if (this.#removed.size > 0 && this.#removed.has(key)) return undefined;
    return this.#root.get(key);
  }

  override has(key: string): boolean {
    if (this.#layer.has(key)) return true;
    // A removed path set again is in the layer, so the checks below see only ones still removed.
    if (this.#removed.size > 0 && this.#removed.has(key)) return false;
    return this.#root.has(key);
  }

  override set(key: string, value: PictureRecord): this {
    if (!this.#layer.has(key)) {
      if (this.#removed.has(key) || !this.#root.has(key)) this.#size++;
    }
    this.#layer.set(key, value);
    return this;
  }

  override delete(key: string): boolean {
    if (!this.has(key)) return false;
    this.#layer.delete(key);
    if (this.#root.has(key)) this.#removed.add(key);
    this.#size--;
    return true;
  }

  override clear(): void {
    this.#root = EMPTY;
    this.#layer.clear();
    this.#removed.clear();
    this.#size = 0;
  }

  override forEach(callback: (value: PictureRecord, key: string, map: Map<string, PictureRecord>) => void, thisArg?: unknown): void {
    for (const [key, value] of this.entries()) callback.call(thisArg, value, key, this);
  }

  override *entries(): MapIterator<[string, PictureRecord]> {
    const layer = this.#layer;
    const removed = this.#removed;
    const overrides = layer.size > 0;
    const removes = removed.size > 0;
    for (const entry of this.#root) {
      if (removes && removed.has(entry[0])) continue;
      const own = overrides ? layer.get(entry[0]) : undefined;
      yield own !== undefined ? [entry[0], own] : [entry[0], entry[1]];
    }
    if (overrides) for (const entry of layer) if (!this.#root.has(entry[0]) || (removes && removed.has(entry[0]))) yield entry;
  }

  override *keys(): MapIterator<string> {
    for (const entry of this.entries()) yield entry[0];
  }

  override *values(): MapIterator<PictureRecord> {
    for (const entry of this.entries()) yield entry[1];
  }

  override [Symbol.iterator](): MapIterator<[string, PictureRecord]> {
    return this.entries();
  }
}

/**
 * `records` as a plain `Map` when its layer has grown past a sixteenth of its root (at least 1,024
 * paths), else `records` itself: the copy of the layer each later picture makes, and each read
 * through it, stay small, and the one full copy is paid once per that many changes.
 */
export function flattenedIfLarge(records: Map<string, PictureRecord>): Map<string, PictureRecord> {
  if (!(records instanceof LayeredRecords)) return records;
  if (records.layerSize <= Math.max(1024, records.rootSize >> 4)) return records;
  return new Map(records);
}

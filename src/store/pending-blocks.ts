import { compressBody, compressBodySync, type EncodedBody } from './block-codec.js';
import { BLOCK_MAX_MEMBERS, BLOCK_TARGET_BYTES, type BlockMemberKey } from './pack-format.js';

// The objects of a batch (a picture's copies) waiting to be written as one block, and the blocks
// being compressed on the thread pool. Nothing here is on disk: a batch's keys may be referenced
// only once `settle` has resolved, and a key anyone else asks for is written first (objects.ts).

/**
 * A batch of puts (one picture's copies). The keys it was handed are on disk once
 * `ObjectStore.endBatch` resolves, except those in `failed`, with the reason their block could
 * not be written: the caller records those files as not copied.
 */
export interface ObjectBatch {
  readonly failed: Map<string, unknown>;
}

interface PendingMember {
  key: string;
  bytes: Buffer;
  /** The batches handed this key: each learns of a failed write. */
  owners: Set<ObjectBatch>;
}

/** Writes one compressed block (appends it to this process's pack and indexes its members); throws on failure. */
export type BlockSink = (members: readonly BlockMemberKey[], rawLength: number, encoded: EncodedBody) => void;

/** Blocks compressed on the thread pool at once; past this a full block is compressed on the calling thread. */
const MAX_IN_FLIGHT = 2;

/** The waiting block of one object store, and its blocks in flight. */
export class PendingBlocks {
  private building = new Map<string, PendingMember>();
  private buildingBytes = 0;
  private readonly inFlight = new Map<Map<string, PendingMember>, Promise<void>>();

  constructor(private readonly sink: BlockSink) {}

  /** Where `key` waits: in the block being built, in a block being compressed, or nowhere. */
  state(key: string): 'building' | 'in-flight' | undefined {
    if (this.building.has(key)) return 'building';
    for (const members of this.inFlight.keys()) if (members.has(key)) return 'in-flight';
    return undefined;
  }

  /** The bytes waiting under `key`, if any. */
  bytesOf(key: string): Buffer | undefined {
    const found = this.building.get(key);
    if (found !== undefined) return found.bytes;
    for (const members of this.inFlight.keys()) {
      const member = members.get(key);
      if (member !== undefined) return member.bytes;
    }
    return undefined;
  }

  /** Adds `batch` to the owners of the waiting `key` (it was handed the key by a dedupe hit). */
  share(key: string, batch: ObjectBatch): void {
    const found = this.building.get(key);
    if (found !== undefined) {
      found.owners.add(batch);
      return;
    }
    for (const members of this.inFlight.keys()) members.get(key)?.owners.add(batch);
  }

  /** True when nothing waits. */
  get idle(): boolean {
    return this.building.size === 0 && this.inFlight.size === 0;
  }

  /** Queues a new object (its bytes are copied); a block that reaches its target size is launched. */
  add(key: string, bytes: Uint8Array, batch: ObjectBatch): void {
    this.building.set(key, { key, bytes: Buffer.from(bytes), owners: new Set([batch]) });
    this.buildingBytes += bytes.length;
    if (this.buildingBytes >= BLOCK_TARGET_BYTES || this.building.size >= BLOCK_MAX_MEMBERS) this.launch(false);
  }

  /** Writes the block being built now, on the calling thread (a key in it was asked for). */
  flushBuilding(): void {
    this.launch(true);
  }

  /** Writes everything waiting: the block being built, then every block in flight. Never rejects. */
  async settle(): Promise<void> {
    this.launch(false);
    while (this.inFlight.size > 0) await Promise.all(this.inFlight.values());
  }

  private launch(now: boolean): void {
    const members = this.building;
    if (members.size === 0) return;
    this.building = new Map();
    this.buildingBytes = 0;
    const raw = Buffer.concat([...members.values()].map((member) => member.bytes));
    if (now || this.inFlight.size >= MAX_IN_FLIGHT) {
      let encoded: EncodedBody;
      try {
        encoded = compressBodySync(raw);
      } catch (error) {
        this.fail(members, error);
        return;
      }
      this.write(members, raw.length, encoded);
      return;
    }
    // Stays in flight (and its keys asked for) until written or failed.
    const done = compressBody(raw).then(
      (encoded) => this.write(members, raw.length, encoded),
      (error: unknown) => this.fail(members, error),
    );
    this.inFlight.set(
      members,
      done.finally(() => this.inFlight.delete(members)),
    );
  }

  private write(members: Map<string, PendingMember>, rawLength: number, encoded: EncodedBody): void {
    const keys = [...members.values()].map((member) => ({ key: member.key, size: member.bytes.length }));
    try {
      this.sink(keys, rawLength, encoded);
    } catch (error) {
      this.fail(members, error);
    }
  }

  private fail(members: Map<string, PendingMember>, error: unknown): void {
    for (const member of members.values()) for (const owner of member.owners) owner.failed.set(member.key, error);
  }
}

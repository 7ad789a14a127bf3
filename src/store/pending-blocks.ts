import { compressBody, compressBodySync, type EncodedBody } from './block-codec.js';
import { BLOCK_TARGET_BYTES, BLOCK_TARGET_MEMBERS, type BlockMemberKey } from './pack-format.js';

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

/** A member waiting, by its key in its block's map. Lean: a tree of tiny files has one per file. */
interface PendingMember {
  /** Where its bytes are in its block's buffer. */
  start: number;
  size: number;
  /** The batch that put it, and any other handed its key: each learns of a failed write. */
  owner: ObjectBatch;
  others?: ObjectBatch[];
}

/**
 * A block being built or compressed: its members and their bytes one after another in one
 * buffer (a tree of tiny files makes tens of thousands of members: one buffer, not one each).
 */
interface Block {
  members: Map<string, PendingMember>;
  buffer: Buffer;
  used: number;
}

const newBlock = (): Block => ({ members: new Map(), buffer: Buffer.allocUnsafe(0), used: 0 });
const bytesIn = (block: Block, member: PendingMember): Buffer => block.buffer.subarray(member.start, member.start + member.size);

/** Writes one compressed block (appends it to this process's pack and indexes its members); throws on failure. */
export type BlockSink = (members: readonly BlockMemberKey[], rawLength: number, encoded: EncodedBody) => void;

/** Blocks compressed on the thread pool at once; past this a full block is compressed on the calling thread. */
const MAX_IN_FLIGHT = 2;
/**
 * A block smaller than this is compressed on the calling thread: a few milliseconds, less than
 * what a pool thread's compressor and its memory cost (a 100,000-file picture of 16–64 B files,
 * blocks of 4,096 files, measured 20–40 MB more peak memory with them on the pool).
 */
const ASYNC_MIN_BYTES = 512 * 1024;

/** The waiting block of one object store, and its blocks in flight. */
export class PendingBlocks {
  private building: Block = newBlock();
  private readonly inFlight = new Map<Block, Promise<void>>();

  constructor(private readonly sink: BlockSink) {}

  /** Where `key` waits: in the block being built, in a block being compressed, or nowhere. */
  state(key: string): 'building' | 'in-flight' | undefined {
    if (this.building.members.has(key)) return 'building';
    for (const block of this.inFlight.keys()) if (block.members.has(key)) return 'in-flight';
    return undefined;
  }

  /** The bytes waiting under `key`, if any. */
  bytesOf(key: string): Buffer | undefined {
    for (const block of [this.building, ...this.inFlight.keys()]) {
      const member = block.members.get(key);
      if (member !== undefined) return bytesIn(block, member);
    }
    return undefined;
  }

  /** Adds `batch` to the owners of the waiting `key` (it was handed the key by a dedupe hit). */
  share(key: string, batch: ObjectBatch): void {
    for (const block of [this.building, ...this.inFlight.keys()]) {
      const member = block.members.get(key);
      if (member === undefined || member.owner === batch || member.others?.includes(batch) === true) continue;
      (member.others ??= []).push(batch);
    }
  }

  /** True when nothing waits. */
  get idle(): boolean {
    return this.building.members.size === 0 && this.inFlight.size === 0;
  }

  /** Queues a new object (its bytes are copied); a block that reaches its target size is launched. */
  add(key: string, bytes: Uint8Array, batch: ObjectBatch): void {
    const block = this.building;
    if (block.used + bytes.length > block.buffer.length) {
      // Grown by doubling, to the target at first: a block is copied a few times at most.
      const grown = Buffer.allocUnsafe(Math.max(block.used + bytes.length, Math.min(BLOCK_TARGET_BYTES, Math.max(64 * 1024, block.buffer.length * 2))));
      block.buffer.copy(grown, 0, 0, block.used);
      block.buffer = grown;
    }
    block.buffer.set(bytes, block.used);
    block.members.set(key, { start: block.used, size: bytes.length, owner: batch });
    block.used += bytes.length;
    if (block.used >= BLOCK_TARGET_BYTES || block.members.size >= BLOCK_TARGET_MEMBERS) this.launch(false);
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
    const block = this.building;
    if (block.members.size === 0) return;
    this.building = newBlock();
    const raw = block.buffer.subarray(0, block.used);
    if (now || raw.length < ASYNC_MIN_BYTES || this.inFlight.size >= MAX_IN_FLIGHT) {
      let encoded: EncodedBody;
      try {
        encoded = compressBodySync(raw);
      } catch (error) {
        this.fail(block, error);
        return;
      }
      this.write(block, encoded);
      return;
    }
    // Stays in flight (and its keys asked for) until written or failed.
    const done = compressBody(raw).then(
      (encoded) => this.write(block, encoded),
      (error: unknown) => this.fail(block, error),
    );
    this.inFlight.set(
      block,
      done.finally(() => this.inFlight.delete(block)),
    );
  }

  private write(block: Block, encoded: EncodedBody): void {
    const keys = [...block.members].map(([key, member]) => ({ key, size: member.size }));
    try {
      this.sink(keys, block.used, encoded);
    } catch (error) {
      this.fail(block, error);
    }
  }

  private fail(block: Block, error: unknown): void {
    for (const [key, member] of block.members) for (const owner of [member.owner, ...(member.others ?? [])]) owner.failed.set(key, error);
  }
}

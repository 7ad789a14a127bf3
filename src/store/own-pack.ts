import { mkdirSync, statSync } from 'node:fs';
import { errnoCode } from '../core/errors.js';
import type { EncodedBody } from './block-codec.js';
import { DIR_MODE, type StoreLayout } from './layout.js';
import { encodeObjectSync } from './object-codec.js';
import { MAX_RECORD_LENGTH, encodeBlock, encodeRecord, type BlockMemberKey } from './pack-format.js';
import type { PackIndex } from './pack-index.js';
import { PACK_FRESH_MS, PACK_ROLL_BYTES, type PackFile, type PackLoc } from './packs.js';
import { PackWriter } from './pack-writer.js';

/**
 * The pack this process appends to, as one object store sees it: records and blocks appended
 * and indexed, rollover when full or idle, the seal. One writer per pack, so no two processes
 * ever append to one file.
 */
export class OwnPack {
  private writer: PackWriter | undefined;
  /** Reused by the synchronous path (small objects only): no allocation per put for encoding. */
  private readonly recordScratch: Buffer = Buffer.allocUnsafe(MAX_RECORD_LENGTH);
  /** Bytes appended so far (prune's account of what a repack wrote). */
  written = 0;

  constructor(
    private readonly layout: StoreLayout,
    private readonly packs: PackIndex,
  ) {}

  /** The pack being written, if any. */
  get pack(): PackFile | undefined {
    return this.writer?.pack;
  }

  /** Milliseconds since the last append (Infinity without a pack). */
  get idleMs(): number {
    return this.writer ? Date.now() - this.writer.lastWrite : Infinity;
  }

  /** Appends a new record for `key` (rolling the pack over when full or idle) and indexes it. */
  append(key: string, bytes: Uint8Array, compress = true): PackLoc {
    const [header, body] = encodeObjectSync(bytes, compress);
    const record = encodeRecord(key, header, body, this.recordScratch);
    const loc = this.current(record.length).append(key, record);
    this.packs.remember(loc);
    this.written += record.length;
    return loc;
  }

  /** Appends a compressed block and indexes its members. */
  appendBlock(members: readonly BlockMemberKey[], rawLength: number, encoded: EncodedBody): void {
    const record = encodeBlock(members, encoded.encoding, encoded.body);
    for (const loc of this.current(record.length).appendBlock(members, rawLength, record)) this.packs.remember(loc);
    this.written += record.length;
  }

  /**
   * True when a dedupe hit in `pack` is safe to reference: prune leaves packs alone until they
   * are older than the grace period, and a capture needs far less than the remaining half of it
   * to record its reference.
   */
  isFresh(pack: PackFile): boolean {
    if (pack === this.writer?.pack) return true;
    const now = Date.now();
    if (now - pack.mtimeMs < PACK_FRESH_MS) return true;
    if (pack.sealed) return false;
    try {
      pack.mtimeMs = Math.max(pack.mtimeMs, statSync(pack.path).mtimeMs);
    } catch {
      return false;
    }
    return now - pack.mtimeMs < PACK_FRESH_MS;
  }

  private current(recordLength: number): PackWriter {
    const writer = this.writer;
    if (
      writer &&
      writer.usable &&
      (writer.pack.records.length === 0 || writer.size + recordLength <= PACK_ROLL_BYTES) &&
      // An idle writer moves on: prune may treat a pack untouched for the grace period as finished.
      Date.now() - writer.lastWrite < PACK_FRESH_MS
    ) {
      return writer;
    }
    this.seal();
    let created: PackWriter;
    try {
      created = PackWriter.create(this.layout.packsDir);
    } catch (error) {
      if (errnoCode(error) !== 'ENOENT') throw error;
      mkdirSync(this.layout.packsDir, { recursive: true, mode: DIR_MODE });
      created = PackWriter.create(this.layout.packsDir);
    }
    this.writer = created;
    this.packs.add(created.pack);
    return created;
  }

  /** Seals the pack (closes it and writes its index); the next append starts a new one. */
  seal(): void {
    const writer = this.writer;
    if (!writer) return;
    this.writer = undefined;
    try {
      writer.seal(() => this.layout.tempPath());
    } catch {
      // No index: readers scan the pack instead, and prune seals it once this process is gone.
    }
    if (writer.pack.gone) this.packs.drop(writer.pack);
  }
}

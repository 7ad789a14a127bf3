import { brotliCompress, brotliCompressSync } from 'node:zlib';
import { CheckpointError } from '../core/errors.js';
import { brotliOptions, brotliUnpack } from './object-codec.js';
import { BLOCK_BROTLI, BLOCK_RAW, type BlockTable } from './pack-format.js';
import { readRecord, type PackBlock, type PackFile, type PackLoc } from './packs.js';

// A block's body: its members' bytes compressed together (brotli), and the reading of one
// member back — the whole block decoded once and kept for the next member of it.

/** A compressed body and its encoding: brotli, or raw when brotli would not save a byte. */
export interface EncodedBody {
  encoding: number;
  body: Buffer;
}

const chooseBody = (raw: Buffer, packed: Buffer): EncodedBody => (packed.length < raw.length ? { encoding: BLOCK_BROTLI, body: packed } : { encoding: BLOCK_RAW, body: raw });

/** Compresses a block's body on the calling thread (a small block, or one asked for now). */
export function compressBodySync(raw: Buffer): EncodedBody {
  return chooseBody(raw, brotliCompressSync(raw, brotliOptions(raw.length, true)));
}

/** Compresses a block's body on the thread pool. */
export function compressBody(raw: Buffer): Promise<EncodedBody> {
  return new Promise((resolve, reject) => {
    brotliCompress(raw, brotliOptions(raw.length), (error, packed) => (error ? reject(error) : resolve(chooseBody(raw, packed))));
  });
}

/** The decoded body of a block record; throws when it does not decode to its members' sizes. */
export function decodeBlockBody(record: Buffer, table: BlockTable): Buffer {
  const body = record.subarray(table.bodyAt, table.bodyAt + table.bodyLength);
  const raw = table.encoding === BLOCK_RAW ? body : brotliUnpack(body, table.rawLength);
  if (raw.length !== table.rawLength) throw new Error(`block decodes to ${raw.length} bytes, its members hold ${table.rawLength}`);
  return raw;
}

/** Decoded blocks kept for the next read of a member (a restore reads a block's members one after another). */
const CACHE_BYTES = 8 * 1024 * 1024;
const decoded = new Map<PackBlock, { raw: Buffer; pack: PackFile }>();
let decodedBytes = 0;

function remember(block: PackBlock, pack: PackFile, raw: Buffer): void {
  decoded.set(block, { raw, pack });
  decodedBytes += raw.length;
  for (const [old, entry] of decoded) {
    if (decodedBytes <= CACHE_BYTES) break;
    decoded.delete(old);
    decodedBytes -= entry.raw.length;
  }
}

/** Forgets the decoded blocks of a pack (removed by prune, or closed). */
export function forgetDecoded(pack: PackFile): void {
  for (const [block, entry] of decoded) {
    if (entry.pack !== pack) continue;
    decoded.delete(block);
    decodedBytes -= entry.raw.length;
  }
}

/**
 * The original bytes of the block member at `loc`: its block read and checked against its
 * checksum, decoded (once, then kept while recent), and the member's bytes cut from it. The
 * caller checks them against the key (size and hash), as for every object read.
 *
 * @throws CheckpointError `INTEGRITY` when the block is missing, damaged or does not decode.
 */
export function readMember(loc: PackLoc, size: number): Buffer {
  const block = loc.block as PackBlock;
  const cached = decoded.get(block);
  let raw: Buffer;
  if (cached === undefined) {
    const { record, table } = readRecord(loc, true);
    try {
      raw = decodeBlockBody(record, table);
    } catch (error) {
      throw new CheckpointError('INTEGRITY', `object ${loc.key} is damaged in its pack: the block at offset ${loc.offset} does not decode`, {
        path: loc.pack.path,
        expected: loc.key,
        found: 'undecodable',
        cause: error,
      });
    }
    remember(block, loc.pack, raw);
  } else {
    raw = cached.raw;
    // Most recently used last.
    decoded.delete(block);
    decoded.set(block, cached);
  }
  const start = loc.start ?? 0;
  return raw.subarray(start, start + size);
}

import { brotliCompress, brotliCompressSync, brotliDecompressSync, constants as zlibConstants } from 'node:zlib';
import { contentHash, loadHasher } from '../core/hash.js';

// The bytes of the store's JSON documents on disk (state documents, manifests): the JSON text
// itself when small, else compressed, with the hash of the text (layout version 3).

/**
 * A document of at least this many bytes of JSON is stored compressed: below it the file takes
 * one 4 KiB block either way (and stays readable as text). The stat cache, picture bases and scan
 * index of prettier's 9,347 files were 1.99 MB of JSON, 0.39 MB compressed.
 */
const COMPRESS_BYTES = 4096;
/**
 * Brotli quality by the JSON's size: the documents of a large tree are written on the way to a
 * command's exit, so the larger the quicker. Measured here: a 140 KB picture base chunk, quality 4
 * 35 KB in 1.5 ms (quality 5: 4.5 ms); prettier's 400 KB scan index, quality 3 71 KB in 2.7 ms
 * (quality 4: 67 KB in 12 ms, quality 1: 76 KB in 1 ms).
 */
function qualityFor(bytes: number): number {
  return bytes <= 256 * 1024 ? 4 : bytes <= 1024 * 1024 ? 3 : 1;
}
/** What a compressed document starts with: a NUL (never the start of JSON text), "TBZ", a version. */
const COMPRESSED_MAGIC = Buffer.from('\0TBZ1', 'latin1');
const HASH_BYTES = 8;
/** The largest JSON text a compressed document may decode to (a bomb costs this much, no more). */
const MAX_TEXT_BYTES = 1024 * 1024 * 1024;

/**
 * The bytes of a document for `text`: the JSON itself, or from {@link COMPRESS_BYTES} on the
 * magic, the xxh64 of the text (8 bytes) and the text in brotli. Call `loadHasher` first.
 */
export function encodeDocument(text: string): Buffer {
  const json = Buffer.from(text, 'utf8');
  if (json.length < COMPRESS_BYTES) return json;
  return framed(json, brotliCompressSync(json, brotliParams(json.length)));
}

/**
 * A document's JSON this long or longer is compressed on libuv's thread pool by
 * {@link encodeDocumentAsync}; shorter ones on the calling thread, where a 4–64 KB text takes well
 * under a millisecond and the hop to a pool thread and back would cost about as much.
 */
export const ASYNC_COMPRESS_BYTES: number = 64 * 1024;

/**
 * The same bytes as {@link encodeDocument}, the brotli pass of a long text on libuv's thread pool:
 * a big tree's first picture writes 120-odd picture base chunks of ~250 KB (0.66 s of brotli on
 * the server's one JavaScript thread at 250,000 files), which a pool thread compresses while that
 * thread builds the next chunk. Call `loadHasher` first.
 */
export async function encodeDocumentAsync(text: string): Promise<Buffer> {
  const json = Buffer.from(text, 'utf8');
  if (json.length < ASYNC_COMPRESS_BYTES) return json.length < COMPRESS_BYTES ? json : framed(json, brotliCompressSync(json, brotliParams(json.length)));
  const body = await new Promise<Buffer>((resolve, reject) => brotliCompress(json, brotliParams(json.length), (error, packed) => (error ? reject(error) : resolve(packed))));
  return framed(json, body);
}

/** The brotli options of a text of `bytes` (see {@link qualityFor}). */
function brotliParams(bytes: number): { params: Record<number, number> } {
  // The window no larger than the text: the encoder's memory follows it (a 140 KB chunk needs 256 KiB, not 4 MiB).
  const window = Math.min(22, Math.max(16, Math.ceil(Math.log2(bytes))));
  return { params: { [zlibConstants.BROTLI_PARAM_QUALITY]: qualityFor(bytes), [zlibConstants.BROTLI_PARAM_LGWIN]: window, [zlibConstants.BROTLI_PARAM_SIZE_HINT]: bytes } };
}

/** The magic, the xxh64 of the text and the compressed body. */
function framed(json: Buffer, body: Buffer): Buffer {
  return Buffer.concat([COMPRESSED_MAGIC, Buffer.from(contentHash(json), 'hex'), body]);
}

/** True when `bytes` are a compressed document (whether or not they decode). */
export function isCompressedDocument(bytes: Buffer): boolean {
  return bytes.length > 0 && bytes[0] === 0;
}

/**
 * The JSON text of a document's bytes, plain or compressed. Throws when a compressed one does not
 * decode or does not match its hash (torn, or damaged): its readers treat it as a document that
 * does not parse.
 */
export async function decodeDocument(bytes: Buffer): Promise<string> {
  if (!isCompressedDocument(bytes)) return bytes.toString('utf8');
  const hashAt = COMPRESSED_MAGIC.length;
  if (bytes.length < hashAt + HASH_BYTES || !bytes.subarray(0, hashAt).equals(COMPRESSED_MAGIC)) throw new Error('not a compressed document');
  const json = brotliDecompressSync(bytes.subarray(hashAt + HASH_BYTES), { maxOutputLength: MAX_TEXT_BYTES });
  await loadHasher();
  if (contentHash(json) !== bytes.toString('hex', hashAt, hashAt + HASH_BYTES)) throw new Error('compressed document does not match its hash');
  return json.toString('utf8');
}

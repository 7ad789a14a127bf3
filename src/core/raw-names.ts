// File names are bytes on Linux; Node hands them over as strings decoded lossily (U+FFFD for
// every byte that is not valid UTF-8), and such a string no longer opens the file. A name is kept
// instead the way Python's `surrogateescape` keeps it: valid UTF-8 decodes as usual, and each byte
// of an invalid sequence becomes the lone surrogate U+DC80 + (byte - 0x80). Such a string is a
// plain string everywhere else (JSON writes a lone surrogate as `\udcXX` and reads it back), and
// becomes its exact bytes again only where it meets the kernel.

const REPLACEMENT = '\uFFFD';
const ESCAPE_BASE = 0xdc00;

/** A lone low surrogate U+DC80–U+DCFF (not preceded by a high surrogate): an escaped raw byte. */
const RAW_BYTE = /(?<![\uD800-\uDBFF])[\uDC80-\uDCFF]/;
const RAW_BYTES = /(?<![\uD800-\uDBFF])[\uDC80-\uDCFF]/g;

/** True when `s` holds at least one escaped raw byte (a name that is not valid UTF-8). */
export function hasRawBytes(s: string): boolean {
  return RAW_BYTE.test(s);
}

/** Length of the valid UTF-8 sequence starting at `at`, or 0 when the byte there starts none. */
function sequenceLength(bytes: Uint8Array, at: number): number {
  const b0 = bytes[at] as number;
  if (b0 < 0x80) return 1;
  const left = bytes.length - at;
  const b1 = left > 1 ? (bytes[at + 1] as number) : -1;
  if (b0 >= 0xc2 && b0 <= 0xdf) return b1 >= 0x80 && b1 <= 0xbf ? 2 : 0;
  const b2 = left > 2 ? (bytes[at + 2] as number) : -1;
  if (b0 >= 0xe0 && b0 <= 0xef) {
    // No overlong forms (E0 80..9F) and no encoded surrogates (ED A0..BF): strict UTF-8 only, so
    // a decoded name never holds a surrogate that could be taken for an escaped byte.
    const low = b0 === 0xe0 ? 0xa0 : 0x80;
    const high = b0 === 0xed ? 0x9f : 0xbf;
    return b1 >= low && b1 <= high && b2 >= 0x80 && b2 <= 0xbf ? 3 : 0;
  }
  const b3 = left > 3 ? (bytes[at + 3] as number) : -1;
  if (b0 >= 0xf0 && b0 <= 0xf4) {
    const low = b0 === 0xf0 ? 0x90 : 0x80;
    const high = b0 === 0xf4 ? 0x8f : 0xbf;
    return b1 >= low && b1 <= high && b2 >= 0x80 && b2 <= 0xbf && b3 >= 0x80 && b3 <= 0xbf ? 4 : 0;
  }
  return 0;
}

/**
 * The string for a name's bytes: UTF-8 decoded where valid, each other byte escaped as U+DC80 +
 * (byte - 0x80). Reversible: `kernelBytes(nameFromBytes(b))` equals `b` for every byte string.
 */
export function nameFromBytes(bytes: Uint8Array): string {
  const buffer = Buffer.isBuffer(bytes) ? bytes : Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const plain = buffer.toString('utf8');
  // A name that decoded without a replacement is valid UTF-8 (the common case costs one decode).
  if (!plain.includes(REPLACEMENT)) return plain;
  let out = '';
  let runStart = 0;
  let at = 0;
  while (at < bytes.length) {
    const length = sequenceLength(bytes, at);
    if (length > 0) {
      at += length;
      continue;
    }
    if (at > runStart) out += buffer.toString('utf8', runStart, at);
    out += String.fromCharCode(ESCAPE_BASE + (bytes[at] as number));
    at += 1;
    runStart = at;
  }
  if (at > runStart) out += buffer.toString('utf8', runStart, at);
  return out;
}

/** The exact bytes a string with escaped raw bytes stands for (plain UTF-8 for the rest). */
export function kernelBytes(s: string): Buffer {
  if (!hasRawBytes(s)) return Buffer.from(s, 'utf8');
  const parts: Buffer[] = [];
  let last = 0;
  for (const match of s.matchAll(RAW_BYTES)) {
    const at = match.index;
    if (at > last) parts.push(Buffer.from(s.slice(last, at), 'utf8'));
    parts.push(Buffer.of(s.charCodeAt(at) - ESCAPE_BASE));
    last = at + 1;
  }
  if (last < s.length) parts.push(Buffer.from(s.slice(last), 'utf8'));
  return Buffer.concat(parts);
}

/**
 * What to hand a file-system call for `path`: the string itself when it is plain text (nearly
 * always; one regular-expression test), else a Buffer of its exact bytes.
 */
export function pathForKernel(path: string): string | Buffer {
  return hasRawBytes(path) ? kernelBytes(path) : path;
}

/** A name a lossy decode damaged (holds U+FFFD): only a listing in bytes can tell its real name. */
export function isLossyName(name: string): boolean {
  return name.includes(REPLACEMENT);
}

import { createHash } from 'node:crypto';
import { CheckpointError } from '../core/errors.js';

// A bundle: the objects one push sends, as one remote object, as git sends a pack rather than a
// request per blob. Named by the SHA-256 of its bytes, so a bundle is written once and a reader
// checks the whole transfer before it trusts any object in it (and then each object against its
// own key as it stores it). Pure: bytes in, bytes out.
//
// Layout: `TBB1\n`, the header's length in decimal and `\n`, the header (JSON: `objects`, a list of
// [key, offset, length] with offsets into the payload), then the payload.

const MAGIC = 'TBB1\n';
/** The longest header a reader accepts (a bundle of ~100,000 objects). */
const MAX_HEADER_BYTES = 16 * 1024 * 1024;

/** One object of a bundle. */
export interface BundledObject {
  key: string;
  bytes: Uint8Array;
}

/** The SHA-256 name of `bytes`, in hex. */
export function bundleName(bytes: Uint8Array): string {
  return createHash('sha256').update(bytes).digest('hex');
}

/** The bytes of a bundle holding `objects`, and its name. */
export function encodeBundle(objects: readonly BundledObject[]): { name: string; bytes: Buffer } {
  const index: [string, number, number][] = [];
  let offset = 0;
  for (const object of objects) {
    index.push([object.key, offset, object.bytes.length]);
    offset += object.bytes.length;
  }
  const header = Buffer.from(JSON.stringify({ objects: index }));
  const bytes = Buffer.concat([Buffer.from(`${MAGIC}${header.length}\n`), header, ...objects.map((o) => o.bytes)]);
  return { name: bundleName(bytes), bytes };
}

/**
 * The objects of a bundle named `name`.
 * @throws CheckpointError `INTEGRITY` when the bytes are not that bundle (a damaged or cut transfer)
 *   or do not parse as one.
 */
export function decodeBundle(name: string, bytes: Buffer): Map<string, Buffer> {
  const damaged = (why: string): CheckpointError => new CheckpointError('INTEGRITY', `remote bundle ${name} ${why}`, { expected: name });
  if (bundleName(bytes) !== name) throw damaged('does not match its name (damaged or cut short)');
  if (bytes.subarray(0, MAGIC.length).toString('latin1') !== MAGIC) throw damaged('is not a bundle');
  const newline = bytes.indexOf(0x0a, MAGIC.length);
  const lengthText = newline < 0 ? '' : bytes.subarray(MAGIC.length, newline).toString('latin1');
  if (!/^[0-9]{1,9}$/.test(lengthText) || Number(lengthText) > MAX_HEADER_BYTES) throw damaged('has a bad header length');
  const headerStart = newline + 1;
  const payloadStart = headerStart + Number(lengthText);
  if (payloadStart > bytes.length) throw damaged('is cut short');
  let header: unknown;
  try {
    header = JSON.parse(bytes.subarray(headerStart, payloadStart).toString('utf8'));
  } catch {
    throw damaged('has a header that does not parse');
  }
  const list = (header as { objects?: unknown } | null)?.objects;
  if (!Array.isArray(list)) throw damaged('has no object list');
  const out = new Map<string, Buffer>();
  for (const item of list as unknown[]) {
    if (!Array.isArray(item) || item.length !== 3) throw damaged('lists a malformed object');
    const [key, offset, length] = item as unknown[];
    if (typeof key !== 'string' || !Number.isSafeInteger(offset) || !Number.isSafeInteger(length) || (offset as number) < 0 || (length as number) < 0) throw damaged('lists a malformed object');
    const start = payloadStart + (offset as number);
    const end = start + (length as number);
    if (end > bytes.length) throw damaged(`lists ${key} past its end`);
    out.set(key, bytes.subarray(start, end));
  }
  return out;
}

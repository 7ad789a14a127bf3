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

/** Where each object of a bundle lies: byte ranges (`start`, `end`) into the whole bundle. */
export type BundleIndex = Map<string, { start: number; end: number }>;

/** The bytes a reader needs from a bundle's start to know its header's extent: `TBB1\n` and a nine-digit length. */
export const BUNDLE_HEAD_PROBE_BYTES: number = MAGIC.length + 10;

function damagedBundle(name: string, why: string): CheckpointError {
  return new CheckpointError('INTEGRITY', `remote bundle ${name} ${why}`, { expected: name });
}

/**
 * How many bytes from its start a bundle's header ends at, read from its first
 * {@link BUNDLE_HEAD_PROBE_BYTES} (or all of it, when shorter).
 * @throws CheckpointError `INTEGRITY` when they are not a bundle's.
 */
export function bundleHeaderEnd(name: string, probe: Buffer): number {
  if (probe.subarray(0, MAGIC.length).toString('latin1') !== MAGIC) throw damagedBundle(name, 'is not a bundle');
  const newline = probe.indexOf(0x0a, MAGIC.length);
  const lengthText = newline < 0 ? '' : probe.subarray(MAGIC.length, newline).toString('latin1');
  if (!/^[0-9]{1,9}$/.test(lengthText) || Number(lengthText) > MAX_HEADER_BYTES) throw damagedBundle(name, 'has a bad header length');
  return newline + 1 + Number(lengthText);
}

/**
 * The index of a bundle of `total` bytes, from its first bytes up to {@link bundleHeaderEnd}: a
 * reader that holds the bundle on disk reads only those, then each object it needs.
 * @throws CheckpointError `INTEGRITY` when it does not parse as one, or lists an object past its end.
 */
export function parseBundleIndex(name: string, head: Buffer, total: number): BundleIndex {
  const payloadStart = bundleHeaderEnd(name, head);
  if (payloadStart > total || payloadStart > head.length) throw damagedBundle(name, 'is cut short');
  const headerStart = head.indexOf(0x0a, MAGIC.length) + 1;
  let header: unknown;
  try {
    header = JSON.parse(head.subarray(headerStart, payloadStart).toString('utf8'));
  } catch {
    throw damagedBundle(name, 'has a header that does not parse');
  }
  const list = (header as { objects?: unknown } | null)?.objects;
  if (!Array.isArray(list)) throw damagedBundle(name, 'has no object list');
  const out: BundleIndex = new Map();
  for (const item of list as unknown[]) {
    if (!Array.isArray(item) || item.length !== 3) throw damagedBundle(name, 'lists a malformed object');
    const [key, offset, length] = item as unknown[];
    if (typeof key !== 'string' || !Number.isSafeInteger(offset) || !Number.isSafeInteger(length) || (offset as number) < 0 || (length as number) < 0) throw damagedBundle(name, 'lists a malformed object');
    const start = payloadStart + (offset as number);
    const end = start + (length as number);
    if (end > total) throw damagedBundle(name, `lists ${key} past its end`);
    out.set(key, { start, end });
  }
  return out;
}

/**
 * The objects of a bundle named `name`, held whole in memory.
 * @throws CheckpointError `INTEGRITY` when the bytes are not that bundle (a damaged or cut transfer)
 *   or do not parse as one.
 */
export function decodeBundle(name: string, bytes: Buffer): Map<string, Buffer> {
  if (bundleName(bytes) !== name) throw damagedBundle(name, 'does not match its name (damaged or cut short)');
  const out = new Map<string, Buffer>();
  for (const [key, { start, end }] of parseBundleIndex(name, bytes, bytes.length)) out.set(key, bytes.subarray(start, end));
  return out;
}

import { closeSync, linkSync, openSync, unlinkSync } from 'node:fs';
import { writeAllSync } from '../fs/file-system.js';
import { createExclusiveSync } from './layout.js';
import { isObjectKey } from './object-codec.js';
import { checksum, streamingChecksum } from './pack-format.js';
import type { PackFile, PackLoc } from './packs.js';

// A sealed pack's index file (`<pack>.idx`): what a reader loads instead of scanning the pack.
// Version 1 lists `key offset length` per record; version 2 (layout 3) lists a block as one line
// `@ offset length count tableLength`, its member keys staying in the pack only (a reader reads
// each block's table, a few KiB, instead of the block).

const INDEX_FORMAT = 'turnback-pack-index';
const INDEX_VERSION = 2;
const INDEX_CHUNK_RECORDS = 4096;
/** The shape of a pack identity (copy-check.ts `packIdentity`). */
const IDENTITY = /^[0-9]+:[0-9]+:[0-9.e+-]+:[0-9.e+-]+$/;

/** One line of an index: a one-object record, or a block whose table is read from the pack. */
export type IndexEntry =
  | { key: string; offset: number; length: number; count?: undefined; tableLength?: undefined }
  | { key?: undefined; offset: number; length: number; count: number; tableLength: number };

/** What an index file says of its pack. */
export interface ParsedIndex {
  /** Where the pack's records end. */
  end: number;
  sealIdentity?: string;
  entries: IndexEntry[];
}

/**
 * Index file bytes for a sealed pack: header line, one line per record, checksum line. Built in
 * chunks with a streaming checksum, so sealing a pack of 100,000 records never holds the whole
 * text (and its line array) in memory at once.
 */
export function formatIndex(pack: PackFile): Buffer[] {
  const sum = streamingChecksum();
  const chunks: Buffer[] = [];
  const add = (text: string): void => {
    const chunk = Buffer.from(text, 'latin1');
    sum.update(chunk);
    chunks.push(chunk);
  };
  // The seal identity is a fifth field, which readers of the four-field line ignore.
  add(`${INDEX_FORMAT} ${INDEX_VERSION} ${pack.name} ${pack.scannedTo}${pack.sealIdentity !== undefined ? ` ${pack.sealIdentity}` : ''}\n`);
  let text = '';
  let lines = 0;
  const records = pack.records;
  for (let i = 0; i < records.length; ) {
    const loc = records[i] as PackLoc;
    const block = loc.block;
    if (block === undefined) {
      text += `${loc.key} ${loc.offset} ${loc.length}\n`;
      i += 1;
    } else {
      let count = 0;
      while (i < records.length && (records[i] as PackLoc).block === block) {
        count += 1;
        i += 1;
      }
      text += `@ ${block.offset} ${block.length} ${count} ${block.tableLength}\n`;
    }
    if (++lines % INDEX_CHUNK_RECORDS === 0) {
      add(text);
      text = '';
    }
  }
  if (text !== '') add(text);
  chunks.push(Buffer.from(`${(sum.digest() >>> 0).toString(16)}\n`, 'latin1'));
  return chunks;
}

/** Parses an index file (version 1 or 2); undefined when it does not check out (the pack is scanned instead). */
export function parseIndex(text: string, pack: Pick<PackFile, 'name'>): ParsedIndex | undefined {
  const cut = text.lastIndexOf('\n', text.length - 2);
  if (cut < 0 || !text.endsWith('\n')) return undefined;
  const body = text.slice(0, cut + 1);
  if (checksum(Buffer.from(body, 'latin1')).toString(16) !== text.slice(cut + 1, -1)) return undefined;
  const lines = body.split('\n');
  lines.pop();
  const head = (lines.shift() ?? '').split(' ');
  if (head[0] !== INDEX_FORMAT || (head[1] !== '1' && head[1] !== '2') || head[2] !== pack.name) return undefined;
  const blocks = head[1] === '2';
  const end = Number(head[3]);
  if (!Number.isSafeInteger(end) || end < 0) return undefined;
  const entries: IndexEntry[] = [];
  for (const line of lines) {
    const [key, offset, length, count, tableLength] = line.split(' ');
    const o = Number(offset);
    const l = Number(length);
    if (!Number.isSafeInteger(o) || !Number.isSafeInteger(l) || l <= 0 || o + l > end) return undefined;
    if (blocks && key === '@') {
      const c = Number(count);
      const t = Number(tableLength);
      if (!Number.isSafeInteger(c) || c <= 0 || !Number.isSafeInteger(t) || t <= 0 || t >= l) return undefined;
      entries.push({ offset: o, length: l, count: c, tableLength: t });
      continue;
    }
    if (!isObjectKey(key)) return undefined;
    entries.push({ key, offset: o, length: l });
  }
  const sealIdentity = head[4];
  return sealIdentity !== undefined && IDENTITY.test(sealIdentity) ? { end, sealIdentity, entries } : { end, entries };
}

/**
 * Writes `<pack>.idx` whole and without overwriting (temp + link): a crash leaves no half index,
 * and of two sealers (the writer and a prune that judged it dead) the first wins, both having
 * described the same records. Returns false when an index already existed.
 */
export function writeIndex(pack: PackFile, tempPath: string): boolean {
  return createExclusiveSync({ openSync, closeSync, linkSync, unlinkSync }, tempPath, pack.idxPath, (fd) => {
    for (const chunk of formatIndex(pack)) writeAllSync(fd, chunk);
  });
}

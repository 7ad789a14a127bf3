import { nameFromBytes } from './raw-names.js';

// Git's index file (`.git/index`, versions 2, 3 and 4), read-only and pure: bytes in, entries out.
// turnback never writes into `.git`; it reads the index to know which files git tracks (they are
// covered whatever the ignore rules say) and whether a turn staged files.

/** One index entry. */
export interface GitIndexEntry {
  /** The path, `/`-separated, as git records it (bytes that are not UTF-8 escaped: core/raw-names.ts). */
  path: string;
  /** The file mode git records (`0o100644`, `0o100755`, `0o120000` a link, `0o160000` a submodule). */
  mode: number;
  /** The merge stage: 0 normally, 1–3 during a conflict. */
  stage: number;
  /** The object id in hex, when asked for. */
  object?: string;
  /** What git saw of the file when it last checked it, when asked for (`stat`). */
  stat?: { mtimeMs: number; ino: number; size: number };
}

/** Mode of a submodule entry (a commit of another repository, not a file of this one). */
export const GITLINK_MODE = 0o160000;

/**
 * The entries of an index file, or `undefined` for anything not recognised (another version, a cut
 * file), so a format it cannot read is said, never misread. `hashBytes` is 20 (SHA-1) or 32 (SHA-256).
 */
export function parseGitIndex(bytes: Buffer, hashBytes = 20, options: { objects?: boolean; stat?: boolean } = {}): GitIndexEntry[] | undefined {
  const entries: GitIndexEntry[] = [];
  const read = eachIndexEntry(bytes, hashBytes, (at, name, mode, stage) => {
    const object = options.objects === true ? bytes.toString('hex', at + 40, at + 40 + hashBytes) : undefined;
    const stat = options.stat === true ? { mtimeMs: mtimeAt(bytes, at), ino: bytes.readUInt32BE(at + 20), size: bytes.readUInt32BE(at + 36) } : undefined;
    entries.push({ path: nameFromBytes(name), mode, stage, ...(object !== undefined ? { object } : {}), ...(stat !== undefined ? { stat } : {}) });
  });
  return read === undefined ? undefined : entries;
}

/**
 * An index's entries as columns, for a reader that keeps them (a long-lived process keeps one per
 * repository): per entry a path string and a few numbers in typed arrays, and the object ids as
 * raw bytes, instead of an object, a stat object and a 40-digit hex string an entry (measured at
 * 50,000 entries: 12.4 MiB as {@link GitIndexEntry} objects with objects and stats, see
 * CHECKPOINT-DESIGN.md "Where a server's memory goes").
 */
export interface GitIndexTable {
  /** Entries read. */
  readonly count: number;
  /** Per entry, its path (as {@link GitIndexEntry.path}). */
  readonly paths: string[];
  readonly modes: Uint32Array;
  readonly stages: Uint8Array;
  /** `count` object ids of `hashBytes` bytes each, one after another. */
  readonly objects: Buffer;
  readonly hashBytes: number;
  /** What git saw of each file when it last checked it (as {@link GitIndexEntry.stat}). */
  readonly mtimes: Float64Array;
  readonly inos: Uint32Array;
  readonly sizes: Uint32Array;
}

/** {@link parseGitIndex} with objects and stats, as columns; `undefined` for what it would not read. */
export function parseGitIndexTable(bytes: Buffer, hashBytes = 20): GitIndexTable | undefined {
  const declared = bytes.length >= 12 ? bytes.readUInt32BE(8) : 0;
  // An entry takes at least 62 bytes: a count the file cannot hold is a damaged header, not an allocation.
  const capacity = Math.min(declared, Math.floor(bytes.length / 62));
  const paths: string[] = [];
  const modes = new Uint32Array(capacity);
  const stages = new Uint8Array(capacity);
  const objects = Buffer.alloc(capacity * hashBytes);
  const mtimes = new Float64Array(capacity);
  const inos = new Uint32Array(capacity);
  const sizes = new Uint32Array(capacity);
  const count = eachIndexEntry(bytes, hashBytes, (at, name, mode, stage) => {
    const i = paths.length;
    if (i >= capacity) throw new RangeError('more entries than the index can hold');
    paths.push(nameFromBytes(name));
    modes[i] = mode;
    stages[i] = stage;
    bytes.copy(objects, i * hashBytes, at + 40, at + 40 + hashBytes);
    mtimes[i] = mtimeAt(bytes, at);
    inos[i] = bytes.readUInt32BE(at + 20);
    sizes[i] = bytes.readUInt32BE(at + 36);
  });
  if (count === undefined) return undefined;
  return { count, paths, modes, stages, objects, hashBytes, mtimes, inos, sizes };
}

/** The object id of entry `i` of `table`, in hex. */
export function tableObject(table: GitIndexTable, i: number): string {
  return table.objects.toString('hex', i * table.hashBytes, (i + 1) * table.hashBytes);
}

/** An entry's mtime (seconds at 8, nanoseconds at 12), in milliseconds. */
function mtimeAt(bytes: Buffer, at: number): number {
  return bytes.readUInt32BE(at + 8) * 1000 + bytes.readUInt32BE(at + 12) / 1e6;
}

/**
 * Hands each entry of an index file to `each` (where it starts, its name's bytes, mode, stage);
 * returns how many, or `undefined` for anything not recognised.
 */
function eachIndexEntry(bytes: Buffer, hashBytes: number, each: (at: number, name: Buffer, mode: number, stage: number) => void): number | undefined {
  if (bytes.length < 12 || bytes.toString('latin1', 0, 4) !== 'DIRC') return undefined;
  const version = bytes.readUInt32BE(4);
  if (version < 2 || version > 4) return undefined;
  const count = bytes.readUInt32BE(8);
  let at = 12;
  let previous: Buffer = Buffer.alloc(0);
  for (let i = 0; i < count; i++) {
    const start = at;
    // ctime, mtime (8 bytes each), dev, ino, mode, uid, gid, size (4 each), the object id, 16 bits of flags.
    if (at + 40 + hashBytes + 2 > bytes.length) return undefined;
    const mode = bytes.readUInt32BE(at + 24);
    const flags = bytes.readUInt16BE(at + 40 + hashBytes);
    at += 40 + hashBytes + 2;
    if ((flags & 0x4000) !== 0) {
      if (version < 3) return undefined;
      at += 2;
    }
    let name: Buffer;
    if (version === 4) {
      // The name is the previous one cut by a varint count of bytes, then a NUL-terminated suffix.
      let cut = 0;
      let byte: number;
      let first = true;
      do {
        if (at >= bytes.length) return undefined;
        byte = bytes[at++] as number;
        cut = first ? byte & 0x7f : ((cut + 1) << 7) | (byte & 0x7f);
        first = false;
      } while ((byte & 0x80) !== 0);
      const end = bytes.indexOf(0, at);
      if (end < 0 || cut > previous.length) return undefined;
      name = Buffer.concat([previous.subarray(0, previous.length - cut), bytes.subarray(at, end)]);
      at = end + 1;
    } else {
      const end = bytes.indexOf(0, at);
      if (end < 0) return undefined;
      name = bytes.subarray(at, end);
      // Entries are padded with NULs to a multiple of 8 bytes (1 to 8 of them).
      at = start + Math.ceil((end - start + 1) / 8) * 8;
    }
    previous = name;
    each(start, name, mode, (flags >> 12) & 0x3);
  }
  return count;
}

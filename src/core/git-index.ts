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
  if (bytes.length < 12 || bytes.toString('latin1', 0, 4) !== 'DIRC') return undefined;
  const version = bytes.readUInt32BE(4);
  if (version < 2 || version > 4) return undefined;
  const count = bytes.readUInt32BE(8);
  const entries: GitIndexEntry[] = [];
  let at = 12;
  let previous: Buffer = Buffer.alloc(0);
  for (let i = 0; i < count; i++) {
    const start = at;
    // ctime, mtime (8 bytes each), dev, ino, mode, uid, gid, size (4 each), the object id, 16 bits of flags.
    if (at + 40 + hashBytes + 2 > bytes.length) return undefined;
    const mode = bytes.readUInt32BE(at + 24);
    const object = options.objects === true ? bytes.toString('hex', at + 40, at + 40 + hashBytes) : undefined;
    // mtime seconds and nanoseconds at 8 and 12, inode at 20, size (its low 32 bits) at 36.
    const stat = options.stat === true ? { mtimeMs: bytes.readUInt32BE(at + 8) * 1000 + bytes.readUInt32BE(at + 12) / 1e6, ino: bytes.readUInt32BE(at + 20), size: bytes.readUInt32BE(at + 36) } : undefined;
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
    // Built without spreads: one shape per options, ~250,000 entries for a big tree's index.
    const entry: GitIndexEntry = { path: nameFromBytes(name), mode, stage: (flags >> 12) & 0x3 };
    if (object !== undefined) entry.object = object;
    if (stat !== undefined) entry.stat = stat;
    entries.push(entry);
  }
  return entries;
}

import { closeSync, constants as fsConstants, ftruncateSync, openSync, unlinkSync } from 'node:fs';
import { CheckpointError } from '../core/errors.js';
import { closeQuietly, writeAllSync } from '../fs/file-system.js';
import { FILE_MODE, HOSTNAME } from './layout.js';
import { packIdentity } from './copy-check.js';
import { encodeHeader, type BlockMemberKey, type PackHeader } from './pack-format.js';
import { writeIndex } from './pack-index-file.js';
import { blockMembers, newPackName, packFile, type PackFile, type PackLoc } from './packs.js';

/**
 * Names of the packs this process is writing (any store instance). Prune tells a live writer by
 * its pid, which cannot separate two store instances of one process: this set can.
 */
const openPackNames = new Set<string>();

/** True when a writer in this process still appends to the pack named `name`. */
export function isOpenInThisProcess(name: string): boolean {
  return openPackNames.has(name);
}

/** Closes the descriptor of a pack writer collected without being sealed. */
const abandoned = new FinalizationRegistry<{ fd: number; name: string }>(({ fd, name }) => {
  openPackNames.delete(name);
  closeQuietly(fd);
});

/** The append-only pack this process writes. One writer per pack: no cross-process append races. */
export class PackWriter {
  readonly pack: PackFile;
  private fd: number | undefined;
  /** Date.now() of the last append (or creation). */
  lastWrite: number;
  /** False after a failed append: the pack is abandoned (never appended to again). */
  usable = true;

  private constructor(pack: PackFile, fd: number) {
    this.pack = pack;
    this.fd = fd;
    this.lastWrite = Date.now();
    // A store dropped without close must not leak the descriptor (the pack stays unsealed; prune seals it later).
    abandoned.register(this, { fd, name: pack.name }, this);
    openPackNames.add(pack.name);
  }

  /** Creates a new pack with its header. Synchronous: once per 64 MiB of objects. */
  static create(dir: string): PackWriter {
    const pack = packFile(dir, newPackName());
    const fd = openSync(pack.path, fsConstants.O_WRONLY | fsConstants.O_CREAT | fsConstants.O_EXCL | fsConstants.O_APPEND | fsConstants.O_NOFOLLOW, FILE_MODE);
    try {
      const header: PackHeader = { pid: process.pid, hostname: HOSTNAME, createdAt: new Date().toISOString() };
      const bytes = encodeHeader(header);
      writeAllSync(fd, bytes);
      pack.header = header;
      pack.scannedTo = bytes.length;
      pack.mtimeMs = Date.now();
      pack.lookIdentity = packIdentity(pack.path, fd);
    } catch (error) {
      closeSync(fd);
      try {
        unlinkSync(pack.path);
      } catch {
        // prune removes a headerless pack
      }
      throw error;
    }
    return new PackWriter(pack, fd);
  }

  /** Bytes in the pack so far. */
  get size(): number {
    return this.pack.scannedTo;
  }

  /**
   * Appends one record with a single `write` (so a crash leaves at most one torn record at the
   * tail). On failure the tail is cut back and the writer is abandoned.
   */
  append(key: string, record: Buffer): PackLoc {
    const offset = this.write(record);
    // Written by this process from bytes it holds: as good as a record read back and checked.
    const loc: PackLoc = { key, pack: this.pack, offset, length: record.length, confirmed: this.pack.confirmEpoch ?? 0 };
    this.pack.records.push(loc);
    return loc;
  }

  /** Appends a block record (see {@link append}); returns its members' locations, in block order. */
  appendBlock(members: readonly BlockMemberKey[], rawLength: number, record: Buffer): PackLoc[] {
    const offset = this.write(record);
    // The table's length is the head's last field (pack-format.ts `encodeBlock`).
    return blockMembers(this.pack, offset, record.length, { members: [...members], rawLength, tableLength: record.readUInt32LE(11) }, this.pack.confirmEpoch ?? 0);
  }

  private write(record: Buffer): number {
    const fd = this.fd;
    if (fd === undefined || !this.usable) throw new CheckpointError('IO', 'pack writer is closed');
    const offset = this.pack.scannedTo;
    const pack = this.pack;
    // Once a copy check has confirmed this pack's records, each append notes the pack's identity
    // before and after its own write: a change in between is someone else's, and un-confirms all.
    const tracked = pack.confirmedIdentity !== undefined;
    const before = packIdentity(pack.path, fd);
    if (tracked && before !== pack.confirmedIdentity) pack.confirmEpoch = (pack.confirmEpoch ?? 0) + 1;
    // The same for the store's copy epoch: the look identity moves on only past this process's
    // own write; someone else's in between leaves it behind, and the next look ends the epoch.
    const looked = before === pack.lookIdentity;
    try {
      writeAllSync(fd, record);
    } catch (error) {
      this.usable = false;
      try {
        ftruncateSync(fd, offset);
      } catch {
        // the torn record stays; scans stop at it
      }
      throw error;
    }
    if (tracked || looked) {
      const after = packIdentity(pack.path, fd);
      if (tracked) pack.confirmedIdentity = after;
      if (looked) pack.lookIdentity = after;
    }
    this.pack.scannedTo = offset + record.length;
    this.lastWrite = Date.now();
    this.pack.mtimeMs = this.lastWrite;
    return offset;
  }

  /** Closes the descriptor and writes the index (sealing the pack). Idempotent. */
  seal(tempPath: () => string): void {
    const fd = this.fd;
    if (fd === undefined) return;
    this.fd = undefined;
    abandoned.unregister(this);
    openPackNames.delete(this.pack.name);
    try {
      this.pack.sealIdentity = packIdentity(this.pack.path, fd);
    } catch {
      // No identity in the index: a later copy check reads the records back instead.
    }
    closeSync(fd);
    if (this.pack.records.length === 0) {
      // Nothing in it: remove instead of sealing an empty pack.
      try {
        unlinkSync(this.pack.path);
        this.pack.gone = true;
        return;
      } catch {
        // fall through and seal it
      }
    }
    writeIndex(this.pack, tempPath());
    this.pack.sealed = true;
  }
}


import { readFileSync, readdirSync, statSync } from 'node:fs';
import * as path from 'node:path';
import { asCheckpointError, errnoCode } from '../core/errors.js';
import type { StoreLayout } from './layout.js';
import { IdentityCache } from './identity-cache.js';
import type { BlockTable } from './pack-format.js';
import { parseIndex, type IndexEntry, type ParsedIndex } from './pack-index-file.js';
import { blockMembers, closeReads, isPackName, packFile, readBlockTable, scanPack, type PackFile, type PackLoc } from './packs.js';

/** A pack's index file as loaded: its entries, each block's table read from the pack. */
interface LoadedIndex extends ParsedIndex {
  tables: (BlockTable | undefined)[];
  objects: number;
}

/** Index entries the process keeps parsed (about 100 bytes each). */
const PARSED_INDEX_ENTRIES = 500_000;
/** Parsed pack index files of this process, by path (see {@link IdentityCache}). */
const parsedIndexes = new IdentityCache<LoadedIndex>(PARSED_INDEX_ENTRIES, (parsed) => parsed.objects);

/**
 * Reads the table of every block an index lists (the pack is write-once, so an index and the
 * tables of its pack are loaded together and cached together); `undefined` when one does not
 * read back as the index says, and the pack is scanned instead.
 */
function loadTables(parsed: ParsedIndex, pack: PackFile): LoadedIndex | undefined {
  const tables: (BlockTable | undefined)[] = [];
  let objects = 0;
  try {
    for (const entry of parsed.entries) {
      if (entry.count === undefined) {
        tables.push(undefined);
        objects += 1;
        continue;
      }
      const table = readBlockTable(pack, entry.offset, entry.length, entry.count, entry.tableLength);
      if (table === undefined) return undefined;
      tables.push(table);
      objects += table.members.length;
    }
  } finally {
    closeReads(pack);
  }
  return { ...parsed, tables, objects };
}

/**
 * The in-memory index of every pack in `objects/packs/`: key → newest known record, older copies
 * chained through `next`. Other processes' packs are picked up by re-listing the folder
 * ({@link PackIndex.refresh}); a pack that is gone is forgotten.
 */
export class PackIndex {
  private readonly index = new Map<string, PackLoc>();
  private readonly packs = new Map<string, PackFile>();
  private lastRefresh = 0;

  constructor(
    private readonly layout: StoreLayout,
    /** This process's own pack (being written): never re-scanned or forgotten by a refresh. */
    private readonly ownPack: () => PackFile | undefined,
  ) {}

  /**
   * Re-lists `objects/packs/`: loads new packs (from their index file when sealed, else by
   * scanning), scans what other writers appended since, and forgets packs that were removed.
   * Synchronous and bounded by what changed since the last call.
   */
  refresh(): void {
    this.lastRefresh = Date.now();
    let names: string[];
    try {
      names = readdirSync(this.layout.packsDir);
    } catch (error) {
      if (errnoCode(error) !== 'ENOENT') throw asCheckpointError(error, 'cannot list packs', this.layout.packsDir);
      names = [];
    }
    const present = new Set(names);
    for (const pack of [...this.packs.values()]) {
      if (!present.has(pack.name)) {
        if (pack !== this.ownPack()) this.forget(pack);
        continue;
      }
      if (pack.sealed || pack === this.ownPack()) continue;
      // An unsealed pack's writer may still be completing what stopped the last scan: look again.
      pack.corruptAt = undefined;
      if (!scanPack(pack, (loc) => this.remember(loc))) {
        this.forget(pack);
        continue;
      }
      if (present.has(path.basename(pack.idxPath))) pack.sealed = true;
    }
    for (const name of names) {
      if (!isPackName(name) || this.packs.has(name)) continue;
      this.loadPack(name, present.has(`${name.slice(0, -'.pack'.length)}.idx`));
    }
  }

  private loadPack(name: string, hasIndex: boolean): void {
    const pack = packFile(this.layout.packsDir, name);
    if (hasIndex) {
      let text: string | undefined;
      let parsed: LoadedIndex | undefined;
      try {
        // A sealed pack's index is written once, by link, and never changed: a process that
        // opens the same store again and again (the command server) parses each index once.
        const stats = statSync(pack.idxPath);
        const identity = `${stats.dev}:${stats.ino}:${stats.size}:${stats.mtimeMs}`;
        parsed = parsedIndexes.get(pack.idxPath, identity);
        if (parsed === undefined) {
          text = readFileSync(pack.idxPath, 'latin1');
          const lines = parseIndex(text, pack);
          parsed = lines !== undefined ? loadTables(lines, pack) : undefined;
          if (parsed !== undefined) parsedIndexes.remember(pack.idxPath, identity, parsed);
        } else text = '';
      } catch (error) {
        if (errnoCode(error) !== 'ENOENT') throw asCheckpointError(error, 'cannot read pack index', pack.idxPath);
      }
      if (parsed) {
        try {
          pack.mtimeMs = statSync(pack.path).mtimeMs;
        } catch (error) {
          if (errnoCode(error) === 'ENOENT') return;
          throw asCheckpointError(error, 'cannot inspect pack', pack.path);
        }
        pack.sealed = true;
        pack.scannedTo = parsed.end;
        // Sealed by its writer with its identity: while the pack is still that file, a copy check
        // takes its records as written, without reading them (see ObjectStore.copyCheck).
        const confirmed = parsed.sealIdentity !== undefined ? 0 : undefined;
        if (parsed.sealIdentity !== undefined) {
          pack.sealIdentity = parsed.sealIdentity;
          pack.confirmedIdentity = parsed.sealIdentity;
          pack.confirmEpoch = 0;
        }
        parsed.entries.forEach((entry: IndexEntry, i) => {
          const table = (parsed as LoadedIndex).tables[i];
          if (entry.key === undefined) {
            if (table !== undefined) for (const loc of blockMembers(pack, entry.offset, entry.length, table, confirmed)) this.remember(loc);
            return;
          }
          const loc: PackLoc = { key: entry.key, pack, offset: entry.offset, length: entry.length, confirmed };
          pack.records.push(loc);
          this.remember(loc);
        });
        this.packs.set(name, pack);
        return;
      }
      // A damaged index: the pack itself is the truth (verify reports the index).
      pack.sealed = text !== undefined;
    }
    if (!scanPack(pack, (loc) => this.remember(loc))) {
      for (const loc of pack.records) this.unremember(loc);
      return;
    }
    this.packs.set(name, pack);
  }

  /** Adds a record as the newest copy of its key. */
  remember(loc: PackLoc): void {
    const head = this.index.get(loc.key);
    if (head) loc.next = head;
    this.index.set(loc.key, loc);
  }

  private unremember(loc: PackLoc): void {
    let head = this.index.get(loc.key);
    if (!head) return;
    if (head === loc) {
      if (loc.next) this.index.set(loc.key, loc.next);
      else this.index.delete(loc.key);
      return;
    }
    while (head.next && head.next !== loc) head = head.next;
    if (head.next === loc) head.next = loc.next;
  }

  /** Drops a removed pack from the index. */
  forget(pack: PackFile): void {
    closeReads(pack);
    pack.gone = true;
    this.packs.delete(pack.name);
    for (const loc of pack.records) this.unremember(loc);
  }

  /** Re-lists packs at most once a second while putting: only for cross-process dedupe, never for correctness. */
  refreshSoon(): void {
    if (Date.now() - this.lastRefresh >= 1000) this.refresh();
  }

  /** The newest known record of `key` (older copies through `next`). */
  head(key: string): PackLoc | undefined {
    return this.index.get(key);
  }

  /** Registers a pack this process just created. */
  add(pack: PackFile): void {
    this.packs.set(pack.name, pack);
  }

  /** Drops a pack from the listing without touching its records (a sealed writer whose file is gone). */
  drop(pack: PackFile): void {
    this.packs.delete(pack.name);
  }

  /** Every known pack, sorted by name. */
  sorted(): PackFile[] {
    return [...this.packs.values()].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  }

  /** Every known pack. */
  all(): IterableIterator<PackFile> {
    return this.packs.values();
  }

  /** True when some pack other than `except` holds a live copy of `key` (as far as the index knows). */
  hasCopyElsewhere(key: string, except?: PackFile): boolean {
    for (let loc = this.index.get(key); loc; loc = loc.next) if (loc.pack !== except && !loc.pack.gone) return true;
    return false;
  }
}

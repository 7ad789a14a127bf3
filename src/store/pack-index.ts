import { readFileSync, readdirSync, statSync } from 'node:fs';
import * as path from 'node:path';
import { asCheckpointError, errnoCode } from '../core/errors.js';
import type { StoreLayout } from './layout.js';
import { IdentityCache } from './identity-cache.js';
import { damageMarks, packIdentity } from './copy-check.js';
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

/** A pack's `.pack` and `.idx` files as they were when its index state was handed on. */
interface HeldIdentity {
  /** `dev:ino` of the `.pack` file. */
  file: string;
  /** `dev:ino:size:mtime:ctime` of the `.pack` file. */
  pack: string;
  /** The same of the `.idx` file, `-` when there was none. */
  idx: string;
}

/** One store's pack index as a closed {@link PackIndex} left it for the next open in this process. */
interface IndexState {
  index: Map<string, PackLoc>;
  packs: Map<string, PackFile>;
  /** Each pack's files when the state was handed on (see {@link PackIndex.release}). */
  held: Map<PackFile, HeldIdentity>;
  /** The copy epoch ({@link PackIndex.copyEpoch}). */
  epoch: number;
  /** `damageMarks()` when the epoch began. */
  damage: number;
}

/** The last copy epoch given out in this process: every store's epochs are distinct. */
let epochs = 0;

function newState(): IndexState {
  return { index: new Map(), packs: new Map(), held: new Map(), epoch: ++epochs, damage: damageMarks() };
}

/** Stores whose index state the process keeps between opens (the server's most recent ones). */
const HELD_STORES = 4;
/** Records the held states may hold together (about 200 bytes each, with their keys). */
const HELD_RECORDS = 1_000_000;
/** Index states of stores no {@link PackIndex} has open, by packs folder; least recently released first. */
const heldStates = new Map<string, IndexState>();

function hold(dir: string, state: IndexState): void {
  heldStates.delete(dir);
  heldStates.set(dir, state);
  let records = 0;
  for (const held of heldStates.values()) records += held.index.size;
  for (const [oldDir, old] of heldStates) {
    if (oldDir === dir || (heldStates.size <= HELD_STORES && records <= HELD_RECORDS)) break;
    heldStates.delete(oldDir);
    records -= old.index.size;
  }
}

function fileIdentity(file: string): { file: string; full: string } | undefined {
  try {
    const s = statSync(file);
    return { file: `${s.dev}:${s.ino}`, full: `${s.dev}:${s.ino}:${s.size}:${s.mtimeMs}:${s.ctimeMs}` };
  } catch (error) {
    if (errnoCode(error) === 'ENOENT') return undefined;
    throw asCheckpointError(error, 'cannot inspect pack', file);
  }
}

/**
 * True when a held pack may be taken as the index knew it: a sealed one is still the same two
 * files, unchanged; an unsealed one (another writer's, still appended to) is still the same file,
 * no shorter than what was scanned (the refresh scans the rest as it always does).
 */
function stillHeld(pack: PackFile, then: HeldIdentity | undefined): boolean {
  if (then === undefined) return false;
  const now = fileIdentity(pack.path);
  if (now === undefined) return false;
  if (pack.sealed) return now.full === then.pack && (fileIdentity(pack.idxPath)?.full ?? '-') === then.idx;
  if (now.file !== then.file) return false;
  try {
    return statSync(pack.path).size >= pack.scannedTo;
  } catch {
    return false;
  }
}

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
  private state: IndexState;
  /** True while the state came from an earlier open and its packs are not checked yet. */
  private adopted: boolean;
  /** True once {@link release} handed the state on. */
  private released = false;
  private lastRefresh = 0;

  constructor(
    private readonly layout: StoreLayout,
    /** This process's own pack (being written): never re-scanned or forgotten by a refresh. */
    private readonly ownPack: () => PackFile | undefined,
  ) {
    // The command server opens the same store for every command: the last open's index is taken
    // over (each pack checked on the first refresh), instead of every record indexed again.
    const held = heldStates.get(layout.packsDir);
    heldStates.delete(layout.packsDir);
    this.state = held ?? newState();
    this.adopted = held !== undefined;
  }

  private get index(): Map<string, PackLoc> {
    if (this.released) this.reclaim();
    return this.state.index;
  }

  private get packs(): Map<string, PackFile> {
    if (this.released) this.reclaim();
    return this.state.packs;
  }

  /**
   * Hands the index to the next open of the same store in this process (the store is closing),
   * noting each pack's files as they are now: the next open keeps a pack only while its files
   * are still these ({@link stillHeld}), so a pack that another process removed or rewrote is
   * loaded again, never served from what this process knew.
   */
  release(): void {
    if (this.released) return;
    const state = this.state;
    state.held.clear();
    for (const pack of state.packs.values()) {
      const file = fileIdentity(pack.path);
      if (file === undefined || pack.gone) continue;
      state.held.set(pack, { file: file.file, pack: file.full, idx: fileIdentity(pack.idxPath)?.full ?? '-' });
    }
    this.released = true;
    hold(this.layout.packsDir, state);
  }

  /** Used again after {@link release}: the state back if nobody took it over, else a new one. */
  private reclaim(): void {
    this.released = false;
    if (heldStates.get(this.layout.packsDir) === this.state) heldStates.delete(this.layout.packsDir);
    else this.state = newState();
    this.adopted = true;
    this.refresh();
  }

  /**
   * Re-lists `objects/packs/`: loads new packs (from their index file when sealed, else by
   * scanning), scans what other writers appended since, and forgets packs that were removed.
   * Synchronous and bounded by what changed since the last call.
   */
  refresh(): void {
    this.lastRefresh = Date.now();
    const packs = this.packs;
    if (this.adopted) {
      this.adopted = false;
      for (const pack of [...packs.values()]) if (pack !== this.ownPack() && !stillHeld(pack, this.state.held.get(pack))) this.forget(pack);
      this.state.held.clear();
    }
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
      // Taken after its records were read: any record a copy is later checked or compared against
      // is read after this, so a change after that read is a change of this identity.
      const loaded = this.packs.get(name);
      if (loaded !== undefined) loaded.lookIdentity = packIdentity(loaded.path);
    }
  }

  /**
   * The store's copy epoch: a number that stays the same while no pack this process knows
   * changed identity (was written to by someone else, or replaced), none was removed, and no
   * copy was found damaged. A picture whose copies were all seen good in an epoch needs no copy
   * check of them again while it lasts (picture.ts). Epochs are unique in the process, across
   * stores and opens.
   */
  get copyEpoch(): number {
    if (this.released) this.reclaim();
    if (this.state.damage !== damageMarks()) this.endEpoch();
    return this.state.epoch;
  }

  /** Ends the current copy epoch (something a copy may rest on changed). */
  endEpoch(): void {
    if (this.released) this.reclaim();
    this.state.epoch = ++epochs;
    this.state.damage = damageMarks();
  }

  /**
   * Looks at every pack with records once (a copy check's start): the listing again (removed
   * packs forgotten), then each pack's identity against the last look; any change ends the epoch.
   */
  look(): void {
    this.refresh();
    for (const pack of this.packs.values()) {
      if (pack.gone || pack.records.length === 0) continue;
      const identity = packIdentity(pack.path);
      if (identity !== pack.lookIdentity) {
        pack.lookIdentity = identity;
        this.endEpoch();
      }
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
    this.endEpoch();
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

import * as path from 'node:path';
import { errnoCode, isCheckpointError } from '../core/errors.js';
import { loadHasher } from '../core/hash.js';
import type { CheckpointId } from '../core/id.js';
import type { CheckpointManifest } from '../core/model.js';
import { scanCatalog } from './catalog.js';
import { readJournal } from './journal.js';
import { STORE_FORMAT, STORE_VERSION } from './layout.js';
import { readManifest } from './manifests.js';
import { checkObjectBytes, parseObjectKey } from './object-codec.js';
import { gitBlobIdOf } from '../core/git-blob.js';
import { forgetDecoded } from './block-codec.js';
import { readCopy } from './object-reads.js';
import { parseIndex, type ParsedIndex } from './pack-index-file.js';
import { blockMembers, closeReads, isPackName, loadPackHasher, packFile, readBlockTable, readRecord, scanPack, type PackFile, type PackLoc } from './packs.js';
import { stateReferences, type StoreContext } from './retention.js';

/** What kind of damage `verify` found. */
export type VerifyProblemKind = 'layout' | 'manifest' | 'journal' | 'missing-object' | 'corrupt-object';

/** One problem found by `verify`. */
export interface VerifyProblem {
  kind: VerifyProblemKind;
  /** Absolute path of the damaged file, when there is one. */
  path?: string;
  /** The checkpoint concerned, when there is one. */
  id?: CheckpointId;
  detail: string;
}

/** The outcome of `verify`. Leftover temp files and unreferenced objects are not problems: prune removes them. */
export interface VerifyReport {
  ok: boolean;
  problems: VerifyProblem[];
  stats: {
    /** Checkpoints found (sealed and open). */
    checkpoints: number;
    /** Objects checked (loose files and pack records). */
    objects: number;
    /** Bytes of objects on disk (loose files and pack records). */
    bytes: number;
  };
  /** Each named step in order, with what it checked and how many problems it found. */
  steps: VerifyStep[];
}

/** One named step of `verify` and its own counts. */
export interface VerifyStep {
  name: 'layout' | 'checkpoints' | 'loose-objects' | 'packs' | 'references';
  /** How many things the step checked (folders, checkpoints, objects, references). */
  checked: number;
  /** How many problems it found. */
  problems: number;
}

function describe(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

type Reference = { id: CheckpointId; hash: string; size: number };

/** Step 1: `STORE.json` describes this store and every folder is a folder. */
async function checkLayout(ctx: StoreContext, problems: VerifyProblem[]): Promise<number> {
  const { fs, layout } = ctx;
  try {
    const info = JSON.parse(await fs.readFile(layout.infoFile, 'utf8')) as Record<string, unknown>;
    if (info.format !== STORE_FORMAT || info.version !== STORE_VERSION || info.projectRoot !== ctx.projectRoot) {
      problems.push({ kind: 'layout', path: layout.infoFile, detail: 'STORE.json does not describe this store' });
    }
  } catch (error) {
    problems.push({ kind: 'layout', path: layout.infoFile, detail: `STORE.json unreadable: ${describe(error)}` });
  }
  const folders = [layout.objectsDir, layout.packsDir, layout.checkpointsDir, layout.stateDir, layout.tmpDir];
  for (const dir of folders) {
    try {
      const stats = await fs.lstat(dir);
      if (!stats.isDirectory()) problems.push({ kind: 'layout', path: dir, detail: 'not a folder' });
    } catch (error) {
      problems.push({ kind: 'layout', path: dir, detail: `missing: ${describe(error)}` });
    }
  }
  return 1 + folders.length;
}

/** Step 2: every manifest and journal reads, and what each references (key → its record). */
async function checkCheckpoints(ctx: StoreContext, problems: VerifyProblem[], references: Map<string, Reference>): Promise<number> {
  const { fs, layout } = ctx;
  let checkpoints = 0;
  const addRefs = (id: CheckpointId, manifest: Pick<CheckpointManifest, 'entries'>): void => {
    for (const entry of manifest.entries) {
      const state = entry.before;
      if (state.type !== 'file') continue;
      // Recorded by its blob id: git's object, not the store's (the restore checks it against the id).
      if (gitBlobIdOf(state.object) !== undefined) continue;
      const parsed = parseObjectKey(state.object);
      if (!parsed || parsed.hash !== state.hash || parsed.size !== state.size) {
        problems.push({ kind: 'manifest', id, detail: `${entry.path}: object key ${state.object} does not match hash ${state.hash} / size ${state.size}` });
      }
      if (!references.has(state.object)) references.set(state.object, { id, hash: state.hash, size: state.size });
    }
  };
  const catalog = await scanCatalog(fs, layout);
  for (const entry of catalog.entries) {
    if (entry.sealed) {
      const file = layout.manifestPath(entry.id);
      try {
        const manifest = await readManifest(fs, layout, entry.id, ctx.projectRoot);
        if (manifest) {
          checkpoints += 1;
          addRefs(entry.id, manifest);
        }
      } catch (error) {
        problems.push({ kind: 'manifest', id: entry.id, path: file, detail: describe(error) });
      }
      // A journal beside a sealed manifest is a seal cut short; the manifest is authoritative.
      continue;
    }
    const file = layout.journalPath(entry.id);
    try {
      const contents = await readJournal(fs, file);
      checkpoints += 1;
      if (!contents.header) problems.push({ kind: 'journal', id: entry.id, path: file, detail: 'missing or damaged header' });
      else if (contents.header.meta.workspace !== ctx.projectRoot) problems.push({ kind: 'journal', id: entry.id, path: file, detail: 'belongs to another project' });
      if (contents.corruptLines > 0) problems.push({ kind: 'journal', id: entry.id, path: file, detail: `${contents.corruptLines} damaged line(s)` });
      const entries = contents.records.flatMap((r) => (r.op === 'before' ? [{ path: r.path, before: r.state }] : []));
      addRefs(entry.id, { entries });
    } catch (error) {
      if (isCheckpointError(error) && errnoCode(error.cause) === 'ENOENT') continue;
      problems.push({ kind: 'journal', id: entry.id, path: file, detail: describe(error) });
    }
  }

  return checkpoints;
}

/** Step 3: every loose object decodes and matches its key. */
async function checkLooseObjects(ctx: StoreContext, problems: VerifyProblem[], present: Set<string>): Promise<{ objects: number; bytes: number }> {
  const counts = { objects: 0, bytes: 0 };
  for (const info of await ctx.objects.listLoose()) {
    counts.objects += 1;
    counts.bytes += info.diskSize;
    present.add(info.key);
    try {
      await checkObjectBytes(info.key, await ctx.fs.readFile(info.path), info.path);
    } catch (error) {
      problems.push({ kind: 'corrupt-object', path: info.path, detail: describe(error) });
    }
  }
  return counts;
}

/**
 * Step 4: every pack scanned from its own bytes (not the in-memory index), a sealed pack's index
 * checked against it, and every record read and hashed.
 */
async function checkPacks(ctx: StoreContext, problems: VerifyProblem[], present: Set<string>): Promise<{ objects: number; bytes: number }> {
  const { fs, layout } = ctx;
  const counts = { objects: 0, bytes: 0 };
  let packNames: string[] = [];
  try {
    packNames = await fs.readdir(layout.packsDir);
  } catch (error) {
    if (errnoCode(error) !== 'ENOENT') problems.push({ kind: 'layout', path: layout.packsDir, detail: `unreadable: ${describe(error)}` });
  }
  const listed = new Set(packNames);
  for (const name of packNames.filter(isPackName).sort()) {
    // A fresh scan of the whole file, independent of the in-memory index.
    const pack = packFile(layout.packsDir, name);
    try {
      if (!scanPack(pack, () => undefined)) continue;
    } catch (error) {
      problems.push({ kind: 'corrupt-object', path: pack.path, detail: `pack unreadable: ${describe(error)}` });
      continue;
    }
    const sealed = listed.has(`${name.slice(0, -'.pack'.length)}.idx`);
    if (pack.corruptAt !== undefined) {
      problems.push({ kind: 'corrupt-object', path: pack.path, detail: `damaged pack record at offset ${pack.corruptAt}: ${pack.corruptDetail ?? 'unknown'}` });
    }
    // A torn tail in an unsealed pack is a crash leftover (or an append in progress): prune cuts it.
    if (pack.tornTail && sealed) problems.push({ kind: 'corrupt-object', path: pack.path, detail: `sealed pack is truncated at offset ${pack.scannedTo}` });
    // A sealed pack's index is what readers use: check every record it lists (so one damaged
    // record does not hide the ones after it), and that it agrees with the scan as far as that went.
    let records = pack.records;
    if (sealed) {
      let text: string | undefined;
      try {
        text = await fs.readFile(pack.idxPath, 'latin1');
      } catch (error) {
        if (errnoCode(error) !== 'ENOENT') problems.push({ kind: 'corrupt-object', path: pack.idxPath, detail: `pack index unreadable: ${describe(error)}` });
      }
      if (text !== undefined) {
        const index = parseIndex(text, pack);
        const listedRecords = index !== undefined ? indexedObjects(index, pack) : undefined;
        if (listedRecords === undefined || !agrees(listedRecords, pack, index?.end)) problems.push({ kind: 'corrupt-object', path: pack.idxPath, detail: 'pack index does not match its pack' });
        if (listedRecords !== undefined) records = listedRecords;
      }
    }
    try {
      for (const loc of records) {
        counts.objects += 1;
        if (loc.block === undefined || loc.start === 0) counts.bytes += loc.length;
        present.add(loc.key);
        try {
          const parsed = parseObjectKey(loc.key);
          if (loc.block !== undefined && parsed !== undefined) readCopy(loc.key, parsed, loc);
          else await checkObjectBytes(loc.key, readRecord(loc), pack.path);
        } catch (error) {
          problems.push({ kind: 'corrupt-object', path: pack.path, detail: `record at offset ${loc.offset}: ${describe(error)}` });
        }
      }
    } finally {
      closeReads(pack);
      forgetDecoded(pack);
    }
  }
  return counts;
}

/**
 * The objects a pack's index lists, each block expanded from its table in the pack;
 * `undefined` when a block the index names is not there.
 */
function indexedObjects(index: ParsedIndex, pack: PackFile): PackLoc[] | undefined {
  const probe: PackFile = { ...pack, records: [], readFd: undefined };
  const locs: PackLoc[] = [];
  try {
    for (const entry of index.entries) {
      if (entry.key !== undefined) {
        locs.push({ key: entry.key, pack, offset: entry.offset, length: entry.length });
        continue;
      }
      const table = readBlockTable(probe, entry.offset, entry.length, entry.count, entry.tableLength);
      if (table === undefined) return undefined;
      for (const loc of blockMembers(probe, entry.offset, entry.length, table)) locs.push({ ...loc, pack });
    }
  } finally {
    closeReads(probe);
  }
  return locs;
}

/** True when what an index lists agrees with the scan of its pack, as far as the scan went. */
function agrees(listed: readonly PackLoc[], pack: PackFile, end: number | undefined): boolean {
  if (pack.corruptAt === undefined && (end !== pack.scannedTo || listed.length !== pack.records.length)) return false;
  const reach = pack.corruptAt ?? pack.scannedTo;
  const scanned = new Map(pack.records.map((loc) => [`${loc.offset}:${loc.start ?? ''}`, loc]));
  return listed.every((loc) => {
    if (loc.offset >= reach) return true;
    const found = scanned.get(`${loc.offset}:${loc.start ?? ''}`);
    return found?.key === loc.key && found.length === loc.length;
  });
}

/**
 * Step 5: every referenced object is present: those the checkpoints name, and those any state
 * document names (a stat cache record, a picture base, an open call's baseline: a later call's
 * pre-image may be one of them, so a missing one is a loss waiting to happen).
 */
async function checkReferences(ctx: StoreContext, problems: VerifyProblem[], references: ReadonlyMap<string, Reference>, present: ReadonlySet<string>): Promise<number> {
  const { refs: state, unreadable } = await stateReferences(ctx);
  for (const file of unreadable) problems.push({ kind: 'manifest', path: file, detail: 'state document does not decode (damaged): prune removes no object while it is here' });
  const missing = [...references.keys(), ...state.keys()].filter((key) => !present.has(key));
  // Verify takes no lock: a prune in another process may have removed a checkpoint and its
  // objects, or repacked a record, between the steps. A missing object is confirmed by a second
  // look before it is reported: its checkpoint is still there, and a fresh listing of loose
  // objects and packs still does not find it.
  const confirmed = missing.length === 0 ? new Set<string>() : await confirmMissing(ctx, missing);
  const live = missing.length === 0 ? new Set<string>() : new Set((await scanCatalog(ctx.fs, ctx.layout)).entries.map((entry) => entry.id));
  for (const [key, ref] of references) {
    if (confirmed.has(key) && live.has(ref.id)) problems.push({ kind: 'missing-object', id: ref.id, path: ctx.layout.objectPath(key), detail: `object ${key} is missing` });
  }
  let fromState = 0;
  const stateNow = missing.length === 0 ? state : (await stateReferences(ctx)).refs;
  for (const [key, document] of state) {
    if (references.has(key)) continue;
    fromState += 1;
    if (confirmed.has(key) && stateNow.has(key)) problems.push({ kind: 'missing-object', path: ctx.layout.objectPath(key), detail: `object ${key}, named by ${path.basename(document)}, is missing` });
  }
  return references.size + fromState;
}

/** The keys of `missing` that a fresh listing of loose objects and packs still does not find. */
async function confirmMissing(ctx: StoreContext, missing: readonly string[]): Promise<Set<string>> {
  const found = new Set<string>();
  for (const info of await ctx.objects.listLoose()) found.add(info.key);
  let names: string[] = [];
  try {
    names = await ctx.fs.readdir(ctx.layout.packsDir);
  } catch {
    // No packs folder: nothing packed to find.
  }
  for (const name of names.filter(isPackName)) {
    const pack = packFile(ctx.layout.packsDir, name);
    try {
      if (scanPack(pack, () => undefined)) for (const loc of pack.records) found.add(loc.key);
    } catch {
      // Gone or unreadable since: the packs step reported what it saw.
    } finally {
      closeReads(pack);
    }
  }
  return new Set(missing.filter((key) => !found.has(key)));
}

/**
 * Checks the store in named steps — layout, checkpoints (manifests and journals), loose objects,
 * packs, references — each returning its own counts (as cacache's verify does). Problems are
 * reported, never thrown.
 */
export async function verifyStore(ctx: StoreContext): Promise<VerifyReport> {
  await Promise.all([loadHasher(), loadPackHasher()]);
  const problems: VerifyProblem[] = [];
  const steps: VerifyStep[] = [];
  const step = async <T>(name: VerifyStep['name'], run: () => Promise<T> | T, checked: (result: T) => number): Promise<T> => {
    const before = problems.length;
    const result = await run();
    steps.push({ name, checked: checked(result), problems: problems.length - before });
    return result;
  };
  const references = new Map<string, Reference>();
  const present = new Set<string>();
  await step('layout', () => checkLayout(ctx, problems), (n) => n);
  const checkpoints = await step('checkpoints', () => checkCheckpoints(ctx, problems, references), (n) => n);
  const loose = await step('loose-objects', () => checkLooseObjects(ctx, problems, present), (c) => c.objects);
  const packed = await step('packs', () => checkPacks(ctx, problems, present), (c) => c.objects);
  await step('references', () => checkReferences(ctx, problems, references, present), (n) => n);
  return { ok: problems.length === 0, problems, stats: { checkpoints, objects: loose.objects + packed.objects, bytes: loose.bytes + packed.bytes }, steps };
}

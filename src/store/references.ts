import * as path from 'node:path';
import { asCheckpointError, errnoCode } from '../core/errors.js';
import { checkpointIdTime, type CheckpointId } from '../core/id.js';
import { isPidAlive } from '../core/pid.js';
import { loadHasher } from '../core/hash.js';
import type { FileSystem } from '../fs/file-system.js';
import { scanCatalog } from './catalog.js';
import { decodeDocument, isCompressedDocument } from './document-codec.js';
import { parseJournal } from './journal.js';
import { GRACE_MS, HOSTNAME, readJsonIfExists, type StoreLayout } from './layout.js';
import { listNames } from './leftovers.js';
import { manifestObjects, parseManifest } from './manifests.js';
import { OBJECT_KEY_SCAN } from './object-codec.js';
import { GIT_KEY_SCAN } from '../core/git-blob.js';
import { detachedCopy } from '../core/flat-string.js';

// What references which stored objects, as prune and verify read it: every checkpoint (manifest
// or journal) and every state document, read as text and erring towards keeping.

/** One checkpoint as prune sees it. */
export interface Held {
  id: CheckpointId;
  files: { path: string; size: number }[];
  refs: Set<string>;
  /** False for a journal whose writer is alive: never removed. */
  removable: boolean;
  /** True for a journal another live process writes (on this host, or a young one elsewhere). */
  otherLiveWriter: boolean;
  /** True for a compressed manifest that does not decode: what it references is unknown. */
  unknownRefs: boolean;
}

/** Object keys anywhere in unreadable text: when a manifest cannot be parsed, keep what it may reference. */
function salvageRefs(text: string): Set<string> {
  return new Set(text.match(OBJECT_KEY_SCAN) ?? []);
}

/**
 * The 16-digit hashes in a text's runs of hex digits whose length is a multiple of 16: a picture
 * base's `hashes` column (capture/base-columns.ts) is every record's xxh64 one after another, and
 * its object keys (`<hash>-<size hex>`) appear nowhere literally. Erring towards keeping: any such
 * run keeps every object of each of its hashes, whatever its size.
 */
function salvageHashes(text: string, into: Set<string>): void {
  for (const run of text.match(/[0-9a-f]{16,}/g) ?? []) {
    if (run.length % 16 !== 0) continue;
    for (let at = 0; at < run.length; at += 16) addDetached(into, run.slice(at, at + 16));
  }
}

/**
 * Adds `key`, a slice of a document's text, as a flat copy: a set that outlives the document
 * (a look at every state document) would otherwise keep every document's whole text alive until
 * it is done (at 250,000 files, the large-object space grew by ~25 MiB during each look).
 */
function addDetached(into: Set<string>, key: string): void {
  if (!into.has(key)) into.add(detachedCopy(key));
}

/** The git object keys (`git:<id>`) in a text: a file resting on git's blob, whose store copy (git-copies.ts) lives while they are named. */
function salvageGitKeys(text: string): string[] {
  return text.match(GIT_KEY_SCAN) ?? [];
}

/** A document's bytes and their text; `undefined` when it is gone, `text: undefined` when it is compressed and does not decode. */
async function readDocument(fs: FileSystem, file: string): Promise<{ size: number; text: string | undefined } | undefined> {
  let bytes: Buffer;
  try {
    bytes = await fs.readFile(file);
  } catch (error) {
    if (errnoCode(error) === 'ENOENT') return undefined;
    throw asCheckpointError(error, 'cannot read', file);
  }
  try {
    return { size: bytes.length, text: await decodeDocument(bytes) };
  } catch {
    // Damaged compressed bytes show no keys; damaged plain text still does.
    return { size: bytes.length, text: isCompressedDocument(bytes) ? undefined : bytes.toString('latin1') };
  }
}

/**
 * Loads every checkpoint with the objects it references. A checkpoint that cannot be parsed
 * still protects every object key its text mentions, so damage never cascades into data loss;
 * one whose compressed text cannot be read at all is `unknownRefs` (prune then removes no object).
 */
export async function loadReferences(ctx: { fs: FileSystem; layout: StoreLayout; projectRoot: string }): Promise<Held[]>;
/** As above, with `shouldStop` asked after each checkpoint read: `undefined` when it said stop. */
export async function loadReferences(ctx: { fs: FileSystem; layout: StoreLayout; projectRoot: string }, shouldStop: () => boolean): Promise<Held[] | undefined>;
export async function loadReferences(ctx: { fs: FileSystem; layout: StoreLayout; projectRoot: string }, shouldStop?: () => boolean): Promise<Held[] | undefined> {
  await loadHasher();
  const catalog = await scanCatalog(ctx.fs, ctx.layout);
  const held: Held[] = [];
  for (const entry of catalog.entries) {
    if (shouldStop?.() === true) return undefined;
    const item: Held = { id: entry.id, files: [], refs: new Set(), removable: true, otherLiveWriter: false, unknownRefs: false };
    if (entry.journal) {
      const file = ctx.layout.journalPath(entry.id);
      const text = await readJsonIfExists(ctx.fs, file);
      if (text !== undefined) {
        item.files.push({ path: file, size: Buffer.byteLength(text) });
        const contents = parseJournal(text);
        const header = contents.header;
        if (header && header.hostname === HOSTNAME && isPidAlive(header.pid)) item.removable = false;
        if (header !== undefined && header.pid !== process.pid && (header.hostname === HOSTNAME ? isPidAlive(header.pid) : checkpointIdTime(entry.id) > Date.now() - GRACE_MS)) item.otherLiveWriter = true;
        for (const key of salvageRefs(text)) addDetached(item.refs, key);
        for (const key of salvageGitKeys(text)) addDetached(item.refs, key);
      }
    }
    if (entry.sealed) {
      const file = ctx.layout.manifestPath(entry.id);
      const document = await readDocument(ctx.fs, file);
      if (document !== undefined) {
        item.files.push({ path: file, size: document.size });
        const text = document.text;
        if (text === undefined) item.unknownRefs = true;
        else {
          try {
            for (const key of manifestObjects(parseManifest(text, { id: entry.id, workspace: ctx.projectRoot, file }))) item.refs.add(key);
          } catch {
            for (const key of salvageRefs(text)) addDetached(item.refs, key);
            for (const key of salvageGitKeys(text)) addDetached(item.refs, key);
          }
        }
      }
    }
    if (item.files.length > 0) held.push(item);
  }
  return held;
}

/** What the state documents reference. */
export interface StateReferences {
  /** Every object key a document mentions, with the first document that names it. */
  refs: Map<string, string>;
  /** Compressed documents that do not decode: what they reference is unknown. */
  unreadable: string[];
  /** Every git object key (`git:<id>`) a document mentions, in the order found: files resting on git's blobs. */
  gitKeys: Set<string>;
  /** Every object hash a document names without its key (a picture base's columns): an object `<hash>-<size>` with one of them is referenced. */
  hashes: Set<string>;
}

/**
 * Every object key any state document (`state/*.json`) mentions. The stat cache, picture bases
 * and open call baselines name stored copies that no checkpoint may name yet: a later picture
 * reuses a cached record without copying the file again, and a call ends from its baseline, so
 * their objects are as live as a checkpoint's. Read as text (the formats belong to the layers
 * above), erring towards keeping.
 */
export async function stateReferences(ctx: { fs: FileSystem; layout: StoreLayout }): Promise<StateReferences>;
/**
 * As above, with `shouldStop` asked before each document read (a picture base at 250,000 files is
 * over a hundred of them: the idle copier's look lets a command through between two): `undefined`
 * when it said stop.
 */
export async function stateReferences(ctx: { fs: FileSystem; layout: StoreLayout }, shouldStop: () => boolean): Promise<StateReferences | undefined>;
export async function stateReferences(ctx: { fs: FileSystem; layout: StoreLayout }, shouldStop?: () => boolean): Promise<StateReferences | undefined> {
  const refs = new Map<string, string>();
  const unreadable: string[] = [];
  const gitKeys = new Set<string>();
  const hashes = new Set<string>();
  for (const name of await listNames(ctx.fs, ctx.layout.stateDir)) {
    if (!name.endsWith('.json')) continue;
    if (shouldStop?.() === true) return undefined;
    const file = path.join(ctx.layout.stateDir, name);
    const document = await readDocument(ctx.fs, file);
    if (document === undefined) continue;
    if (document.text === undefined) unreadable.push(file);
    else {
      for (const key of salvageRefs(document.text)) if (!refs.has(key)) refs.set(detachedCopy(key), file);
      for (const key of salvageGitKeys(document.text)) addDetached(gitKeys, key);
      salvageHashes(document.text, hashes);
    }
  }
  return { refs, unreadable, gitKeys, hashes };
}

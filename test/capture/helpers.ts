import * as nodeFs from 'node:fs';
import * as fs from 'node:fs/promises';
import * as path from 'node:path';
import { CheckpointError } from '../../src/core/errors.js';
import { contentHash, loadHasher } from '../../src/core/hash.js';
import type { PictureRecord, PictureStore } from '../../src/capture/picture.js';
import type { StateDocuments } from '../../src/capture/picture-persist.js';
import { tempFolder } from '../helpers/temp.js';

export { writeTree as makeTree, type TreeEntry as FixtureEntry } from '../helpers/temp.js';

/** A fresh temp folder, removed after the current test. */
export async function tempDir(prefix = 'turnback-capture-'): Promise<string> {
  return tempFolder(prefix);
}

/** Sets every file's mtime back, so "same stat" comparisons are not racing the clock. */
export async function backdate(root: string, rel: string, seconds = 3600): Promise<void> {
  const t = new Date(Date.now() - seconds * 1000);
  await fs.utimes(path.join(root, ...rel.split('/')), t, t);
}

/** An in-memory store implementing exactly {@link PictureStore}, counting reads. */
export class FakeStore implements PictureStore, StateDocuments {
  readonly objects = new Map<string, Buffer>();
  readonly state = new Map<string, string>();
  putFileCalls: string[] = [];
  /** Paths (absolute) whose putFile throws this error instead. */
  failures = new Map<string, unknown>();

  async putFile(absPath: string, expected?: { size?: number; mtimeMs?: number }): Promise<{ object: string; hash: string; size: number; mode: number }> {
    this.putFileCalls.push(absPath);
    const failure = this.failures.get(absPath);
    if (failure !== undefined) throw failure;
    await loadHasher();
    const stats = await fs.lstat(absPath);
    if (!stats.isFile()) throw new CheckpointError('CONFLICT', 'not a file', { path: absPath });
    if (expected?.size !== undefined && expected.size !== stats.size) throw new CheckpointError('CONFLICT', 'size changed', { path: absPath });
    if (expected?.mtimeMs !== undefined && expected.mtimeMs !== stats.mtimeMs) throw new CheckpointError('CONFLICT', 'mtime changed', { path: absPath });
    const bytes = await fs.readFile(absPath);
    const hash = contentHash(bytes);
    const object = `${hash}-${bytes.length.toString(16)}`;
    this.objects.set(object, bytes);
    return { object, hash, size: bytes.length, mode: stats.mode & 0o7777 };
  }

  async readState(name: string): Promise<unknown> {
    const text = this.state.get(name);
    return text === undefined ? undefined : JSON.parse(text);
  }

  async writeState(name: string, value: unknown): Promise<void> {
    this.state.set(name, JSON.stringify(value));
  }

  async listState(prefix: string): Promise<string[]> {
    return [...this.state.keys()].filter((n) => n.startsWith(prefix)).sort();
  }

  async deleteState(name: string): Promise<void> {
    this.state.delete(name);
  }
}

/** Sets every folder's mtime under `dir` (itself included) an hour back, so their listings count as settled. */
export function settleFolders(dir: string): void {
  setFolderTimes(dir, new Date(Date.now() - 3600_000));
}

/** Sets the atime and mtime of `dir` and of every folder under it to `time`. */
function setFolderTimes(dir: string, time: Date): void {
  for (const entry of nodeFs.readdirSync(dir, { withFileTypes: true })) if (entry.isDirectory()) setFolderTimes(path.join(dir, entry.name), time);
  nodeFs.utimesSync(dir, time, time);
}

/**
 * Puts every folder's mtime under `dir` an hour ahead: a listing is settled only once its folder's
 * mtime is older than the listing by LISTING_SETTLE_MS, so these folders are listed afresh by
 * every scan however slow the machine (a tree just written is only "moments ago" on a quiet one).
 */
export function unsettleFolders(dir: string): void {
  setFolderTimes(dir, new Date(Date.now() + 3600_000));
}

/** Runs `change` and puts the folder's mtime back, as a file system that forgets to update it (or an in-place write) would. */
export function keepFolderTime(abs: string, change: () => void): void {
  const before = nodeFs.statSync(abs);
  change();
  nodeFs.utimesSync(abs, before.atime, before.mtime);
}

/**
 * A picture record as a plain object, `state` included: a file's record keeps its state in
 * private fields (`FileRecord`), so a deep comparison with a plain record compares this.
 */
export function plainRecord(record: PictureRecord | undefined): PictureRecord | undefined {
  return record === undefined ? undefined : { ...record, state: record.state };
}

import * as fs from 'node:fs/promises';
import * as path from 'node:path';
import { describe, it } from 'vitest';
import { isCheckpointError } from '../../src/core/errors.js';
import type { CheckpointId } from '../../src/core/id.js';
import { openObserver, openStore } from '../../src/admin.js';
import { listing, sandbox, writeTree } from '../session/helpers.js';
import { Tally, trials } from './campaign.js';

// One seeded corruption of one store file per trial — a bit flipped, the file cut short, removed,
// or grown with garbage — in a copy of a store holding a sealed turn (packed and loose objects,
// manifests, state documents) and an open one (a journal). Held: every error is a typed
// CheckpointError; a restore never writes a byte that is not the original (a path comes back
// whole or is left as the agent wrote it, and says so); and when verify says ok, the restore
// finishes with nothing failed or left for a missing or damaged copy.

async function filesUnder(dir: string): Promise<string[]> {
  const out: string[] = [];
  for (const entry of await fs.readdir(dir, { withFileTypes: true, recursive: true })) {
    if (entry.isFile()) out.push(path.join(entry.parentPath, entry.name));
  }
  return out.sort();
}

describe('fault campaign: store corruption', () => {
  it('flips, truncation, deletion and garbage in every kind of store file', async () => {
    const tally = new Tally('store corruption', 1501);
    const template = await sandbox();
    const originals = Object.fromEntries(Array.from({ length: 16 }, (_, i) => [`src/f${i}.txt`, `original ${i} `.repeat(i % 4 === 3 ? 40_000 : 1 + i * 20)]));
    await writeTree(template.project, originals);
    const expected = await listing(template.project);
    const store = await openStore(template.storeDir, { projectRoot: template.project });
    const agent = openObserver(store, { sessionId: 'agent' });
    const sealed = await agent.beginTurn({ label: 'sealed' });
    for (let i = 0; i < 16; i++) {
      await agent.beforeWrite(`src/f${i}.txt`);
      await fs.writeFile(path.join(template.project, 'src', `f${i}.txt`), `agent ${i}`);
      await agent.afterWrite(`src/f${i}.txt`);
    }
    await agent.beginTurn({ label: 'open' });
    await agent.beforeWrite('src/f0.txt');
    await fs.writeFile(path.join(template.project, 'src', 'f0.txt'), 'agent again');
    await agent.afterWrite('src/f0.txt');
    // Closed without a seal of the open turn: its journal stays, as a killed agent's would.
    await agent.close();
    await store.close();
    const agentTree = await listing(template.project);
    // The store names its project's path: each trial puts a fresh copy back at the same paths.
    const saved = await sandbox();
    await fs.cp(template.project, saved.project, { recursive: true });
    await fs.cp(template.storeDir, saved.storeDir, { recursive: true });
    const storeFiles = (await filesUnder(template.storeDir)).map((file) => path.relative(template.storeDir, file));
    const kinds = ['flip', 'truncate', 'delete', 'garbage'] as const;
    let verifyCaught = 0;
    for (let t = 0; t < trials(800, 40); t++) {
      const target = storeFiles[tally.random.int(0, storeFiles.length - 1)] as string;
      const kind = kinds[tally.random.int(0, kinds.length - 1)] as (typeof kinds)[number];
      const at = tally.random.next();
      await tally.trial(`${kind} ${target} at ${at.toFixed(3)}`, async () => {
        for (const dir of [template.project, template.storeDir]) await fs.rm(dir, { recursive: true, force: true });
        await fs.cp(saved.project, template.project, { recursive: true });
        await fs.cp(saved.storeDir, template.storeDir, { recursive: true });
        const file = path.join(template.storeDir, target);
        const bytes = await fs.readFile(file);
        const offset = Math.floor(at * bytes.length);
        if (kind === 'flip' && bytes.length > 0) {
          bytes[offset] = (bytes[offset] as number) ^ (1 << Math.floor(at * 8));
          await fs.writeFile(file, bytes);
        } else if (kind === 'truncate') await fs.truncate(file, offset);
        else if (kind === 'delete') await fs.rm(file);
        else await fs.appendFile(file, Buffer.from(`\u0000garbage ${offset}\n`));
        await checkCorrupted(template.project, template.storeDir, sealed, expected, agentTree, () => (verifyCaught += 1));
      });
    }
    tally.note = `verify named ${verifyCaught} of them`;
    tally.finish();
  });
});

async function checkCorrupted(project: string, storeDir: string, turn: CheckpointId, expected: Record<string, string>, agentTree: Record<string, string>, caught: () => void): Promise<void> {
  let store;
  try {
    store = await openStore(storeDir, { projectRoot: project });
  } catch (error) {
    if (isCheckpointError(error)) return;
    throw error;
  }
  try {
    const verified = await store.verify();
    if (!verified.ok) caught();
    const observer = openObserver(store, { sessionId: 'after-corruption' });
    let report;
    try {
      report = await observer.restore(turn, { created: 'delete' });
    } catch (error) {
      if (!isCheckpointError(error)) throw error;
      if (verified.ok && error.code === 'INTEGRITY') throw new Error(`verify said ok, the restore failed: ${error.message}`);
    } finally {
      await observer.close();
    }
    const now = await listing(project);
    for (const file of Object.keys({ ...expected, ...now })) {
      if (file.split('/').some((part) => part.startsWith('.turnback-'))) continue;
      if (now[file] !== expected[file] && now[file] !== agentTree[file]) throw new Error(`${file} holds bytes that are neither the original nor the agent's`);
    }
    if (report !== undefined && verified.ok) {
      const lost = [...report.failed.map((failure) => failure.path), ...report.skipped.filter((entry) => entry.reason === 'object-missing').map((entry) => entry.path)];
      if (lost.length > 0) throw new Error(`verify said ok, yet the restore could not bring back ${lost.join(', ')}`);
    }
  } finally {
    await store.close();
  }
}

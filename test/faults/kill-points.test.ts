import * as fs from 'node:fs/promises';
import * as path from 'node:path';
import { describe, it } from 'vitest';
import type { CheckpointId } from '../../src/core/id.js';
import { openObserver, openStore } from '../../src/admin.js';
import type { StoreView } from '../../src/store/view.js';
import { listing, sandbox, writeTree } from '../session/helpers.js';
import { countCalls, runKilled, Tally, trials } from './campaign.js';

// SIGKILL at seeded points: the child dies just before its N-th file-system call that writes,
// moves or removes (N drawn from the calls an unkilled run makes), in capture, restore and prune.
// Held means: the store verifies, and no byte is lost — every pre-image and every original is
// still where a person can get it back.

const ORIGINALS = Object.fromEntries(Array.from({ length: 7 }, (_, i) => [`f${i}.txt`, `original ${i}`]));

async function verified(store: StoreView): Promise<void> {
  const report = await store.verify();
  if (!report.ok || report.problems.length > 0) throw new Error(`verify: ${JSON.stringify(report.problems.slice(0, 3))}`);
}

function same(actual: Record<string, string>, expected: Record<string, string>, what: string): void {
  const differing = [...new Set([...Object.keys(actual), ...Object.keys(expected)])].filter((key) => actual[key] !== expected[key]);
  if (differing.length > 0) throw new Error(`${what}: ${differing.slice(0, 5).join(', ')} differ`);
}

/**
 * Restores `turn` as a new session would, then, by name, what a killed write left refused (a
 * torn file, or one whose last record never came), as a person would with `undo --force PATH`.
 */
async function restoreWhole(store: StoreView, turn: CheckpointId, sessionId: string) {
  const observer = openObserver(store, { sessionId });
  try {
    let report = await observer.restore(turn, { created: 'delete' });
    const torn = report.refused.filter((entry) => entry.reason === 'no-post-record' || entry.reason === 'changed-outside').map((entry) => entry.path);
    if (torn.length > 0) report = await observer.restore(turn, { created: 'delete', force: torn });
    if (report.failed.length > 0) throw new Error(`restore failed: ${JSON.stringify(report.failed.slice(0, 3))}`);
    return report;
  } finally {
    await observer.close();
  }
}

describe('fault campaign: SIGKILL at seeded points', () => {
  it('during capture (beginTurn, beforeWrite, the write, afterWrite)', async () => {
    const tally = new Tally('SIGKILL during capture', 1101);
    const probe = await sandbox();
    await writeTree(probe.project, ORIGINALS);
    const calls = await countCalls({ kind: 'capture', project: probe.project, storeDir: probe.storeDir, sessionId: 'probe', rounds: 2 });
    const { project, storeDir } = await sandbox();
    await writeTree(project, ORIGINALS);
    const expected = await listing(project);
    for (let t = 0; t < trials(100, 6); t++) {
      const killAt = tally.random.int(1, calls);
      await tally.trial(`kill at call ${killAt}`, async () => {
        const sessionId = `killed-${t}`;
        await runKilled({ kind: 'capture', project, storeDir, sessionId, rounds: 2, killAt });
        const store = await openStore(storeDir, { projectRoot: project });
        try {
          await verified(store);
          const first = (await store.list()).filter((meta) => meta.sessionId === sessionId && meta.kind === 'turn').sort((a, b) => a.createdAt.localeCompare(b.createdAt))[0];
          // Killed before its first turn was recorded: it wrote nothing either.
          if (first !== undefined) await restoreWhole(store, first.id, `check-${t}`);
          same(await listing(project), expected, 'the tree after restoring the killed session\'s first turn');
        } finally {
          await store.close();
        }
      });
    }
    tally.finish();
  });

  it('during restore (save first, stage, swap, commit, rollback)', async () => {
    const tally = new Tally('SIGKILL during restore', 1102);
    const originals: Record<string, string> = {};
    for (let i = 0; i < 24; i++) originals[`src/m${i}.txt`] = `original ${i} `.padEnd(i % 8 === 7 ? 300_000 : 30 + i, 'o');
    for (let i = 0; i < 3; i++) originals[`gone/d${i}.txt`] = `deleted by the agent ${i}`;
    /** A project whose one turn changed 24 files, created 3 in a new folder, deleted 3. */
    const setUp = async () => {
      const box = await sandbox();
      await writeTree(box.project, originals);
      const expected = await listing(box.project);
      const store = await openStore(box.storeDir, { projectRoot: box.project });
      const observer = openObserver(store, { sessionId: 'agent' });
      const turn = await observer.beginTurn({ label: 'agent turn' });
      for (let i = 0; i < 24; i++) {
        await observer.beforeWrite(`src/m${i}.txt`);
        await fs.writeFile(path.join(box.project, 'src', `m${i}.txt`), `agent ${i}`);
        await observer.afterWrite(`src/m${i}.txt`);
      }
      for (let i = 0; i < 3; i++) {
        await observer.beforeWrite(`new/n${i}.txt`);
        await fs.mkdir(path.join(box.project, 'new'), { recursive: true });
        await fs.writeFile(path.join(box.project, 'new', `n${i}.txt`), `created ${i}`);
        await observer.afterWrite(`new/n${i}.txt`);
        await observer.beforeWrite(`gone/d${i}.txt`);
        await fs.rm(path.join(box.project, 'gone', `d${i}.txt`));
        await observer.afterWrite(`gone/d${i}.txt`);
      }
      await observer.close();
      await store.close();
      return { ...box, turn, expected, agent: await listing(box.project) };
    };
    const probe = await setUp();
    const calls = await countCalls({ kind: 'restore', project: probe.project, storeDir: probe.storeDir, sessionId: 'probe', turn: probe.turn });
    for (let t = 0; t < trials(100, 6); t++) {
      const killAt = tally.random.int(1, calls);
      await tally.trial(`kill at call ${killAt} of ${calls}`, async () => {
        const { project, storeDir, turn, expected, agent } = await setUp();
        await runKilled({ kind: 'restore', project, storeDir, sessionId: 'restorer', turn, killAt });
        const store = await openStore(storeDir, { projectRoot: project });
        try {
          await verified(store);
          // The next restore of the same turn cleans up what the killed one left and finishes it.
          const report = await restoreWhole(store, turn, 'again');
          if (report.refused.some((entry) => entry.reason === 'changed-since-plan')) throw new Error('a path changed under the second restore');
          const now = await listing(project);
          const left = Object.keys(now).filter((name) => name.split('/').some((part) => part.startsWith('.turnback-')));
          for (const name of left) if (!report.cleanupPending.includes(name)) throw new Error(`${name} left in the project, not reported`);
          for (const name of left) delete now[name];
          // Every path is its original again, or the restore named it, and then both its
          // original and what the killed restore found there are still in the store.
          const named = new Set([...report.refused, ...report.skipped].map((entry) => entry.path));
          for (const file of [...new Set([...Object.keys(now), ...Object.keys(expected)])]) {
            if (now[file] === expected[file]) continue;
            if (!named.has(file)) throw new Error(`${file} is neither restored nor reported`);
            await recoverable(store, turn, file, now[file] === agent[file] ? undefined : agent[file]);
          }
        } finally {
          await store.close();
        }
      });
    }
    tally.finish();
  });

  it('during prune (retain)', async () => {
    const tally = new Tally('SIGKILL during prune', 1103);
    const TURNS = 8;
    const RETAIN = 3;
    /** A store of 8 turns, each rewriting 5 files; `before[j]` is the tree before turn j. */
    const setUp = async () => {
      const box = await sandbox();
      await writeTree(box.project, Object.fromEntries(Array.from({ length: 5 }, (_, i) => [`p${i}.txt`, `start ${i}`])));
      const store = await openStore(box.storeDir, { projectRoot: box.project });
      const observer = openObserver(store, { sessionId: 'agent' });
      const turns: CheckpointId[] = [];
      const before: Record<string, string>[] = [];
      for (let j = 0; j < TURNS; j++) {
        before.push(await listing(box.project));
        turns.push(await observer.beginTurn({ label: `turn ${j}` }));
        for (let i = 0; i < 5; i++) {
          await observer.beforeWrite(`p${i}.txt`);
          await fs.writeFile(path.join(box.project, `p${i}.txt`), `turn ${j} file ${i} `.repeat(j + 1));
          await observer.afterWrite(`p${i}.txt`);
        }
      }
      await observer.close();
      await store.close();
      return { ...box, turns, before };
    };
    const probe = await setUp();
    const calls = await countCalls({ kind: 'prune', project: probe.project, storeDir: probe.storeDir, retain: RETAIN });
    for (let t = 0; t < trials(100, 6); t++) {
      const killAt = tally.random.int(1, calls);
      await tally.trial(`kill at call ${killAt} of ${calls}`, async () => {
        const { project, storeDir, turns, before } = await setUp();
        await runKilled({ kind: 'prune', project, storeDir, retain: RETAIN, killAt });
        const store = await openStore(storeDir, { projectRoot: project });
        try {
          await verified(store);
          // A second prune finishes the job, and the store still verifies.
          await store.prune({ retain: RETAIN, graceMs: 0 });
          await verified(store);
          // The oldest kept turn still takes the tree back to what it was before it.
          const oldestKept = turns[TURNS - RETAIN] as CheckpointId;
          await restoreWhole(store, oldestKept, 'check');
          same(await listing(project), before[TURNS - RETAIN] as Record<string, string>, 'the tree after restoring the oldest kept turn');
        } finally {
          await store.close();
        }
      });
    }
    tally.finish();
  });
});

/**
 * A path the second restore left: its original (the turn's pre-image) must read back from the
 * store with its bytes; and when what the agent wrote is no longer on disk (`lost`, a listing
 * value), a pre-restore checkpoint of the killed restore must hold exactly those bytes.
 */
async function recoverable(store: StoreView, turn: CheckpointId, file: string, lost: string | undefined): Promise<void> {
  const entry = (await store.manifest(turn)).entries.find((candidate) => candidate.path === file);
  if (entry === undefined) throw new Error(`${file} is not in the turn`);
  if (entry.before.type === 'file') await store.readObject(entry.before.object);
  if (lost === undefined) return;
  const bytes = lost.slice(lost.lastIndexOf(':') + 1);
  for (const save of (await store.list()).filter((meta) => meta.kind === 'pre-restore')) {
    const saved = (await store.manifest(save.id)).entries.find((candidate) => candidate.path === file);
    if (saved?.before.type === 'file' && (await store.readObject(saved.before.object)).toString('base64') === bytes) return;
  }
  throw new Error(`${file}: the agent's version is neither on disk nor in a pre-restore checkpoint`);
}

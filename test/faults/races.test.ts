import * as fs from 'node:fs/promises';
import * as path from 'node:path';
import { describe, it } from 'vitest';
import { isCheckpointError } from '../../src/core/errors.js';
import type { CheckpointId } from '../../src/core/id.js';
import { openObserver, openStore } from '../../src/admin.js';
import type { CheckpointObserver } from '../../src/session/observer.js';
import type { RestoreReport } from '../../src/session/restore-types.js';
import type { StoreView } from '../../src/store/view.js';
import { editFile, writeFile } from '../../src/tools/reference-tools.js';
import { canExchange, startExchanger, startRelinker, type Exchanger } from '../helpers/exchange.js';
import { tempFolder } from '../helpers/temp.js';
import { listing, sandbox, writeTree } from '../session/helpers.js';
import { Tally, trials } from './campaign.js';

// Another process swaps a folder (or a file) for a link to outside the project, over and over,
// while a restore or the write tools work there: atomically (renameat2 RENAME_EXCHANGE) or in
// steps (rename away, link in, link out, rename back). Held: not one byte outside the project
// changes, no project file is lost, and a report never calls a file restored that is not.

const canRace = canExchange;

/** A project whose one turn rewrote `count` files in `d/`, and an outside folder of decoys. */
async function raceSetUp(count: number, sessionId: string) {
  const { project, storeDir } = await sandbox();
  const outside = await tempFolder('turnback-outside-');
  await writeTree(project, Object.fromEntries(Array.from({ length: count }, (_, i) => [`d/f${i}`, `orig ${i}`])));
  await writeTree(outside, Object.fromEntries(Array.from({ length: count }, (_, i) => [`f${i}`, `outside ${i}`])));
  await fs.symlink(outside, path.join(project, 'l'));
  const store = await openStore(storeDir, { projectRoot: project });
  const agent = openObserver(store, { sessionId });
  const turn = await agent.beginTurn({ label: 'agent' });
  for (let i = 0; i < count; i++) {
    await agent.beforeWrite(`d/f${i}`);
    await fs.writeFile(path.join(project, 'd', `f${i}`), `agent ${i}`);
    await agent.afterWrite(`d/f${i}`);
  }
  await agent.close();
  return { project, outside, store, turn, outsideBefore: await listing(outside) };
}

/** One restore under a racing process; throws when a promise broke. */
async function restoreRaced(project: string, outside: string, outsideBefore: Record<string, string>, observer: CheckpointObserver, turn: CheckpointId, race: () => Promise<Exchanger>, count: number, store: StoreView): Promise<number> {
  const racer = await race();
  let report: RestoreReport | undefined;
  let swaps = 0;
  try {
    report = await observer.restore(turn);
  } catch (error) {
    // A typed refusal is an honest answer.
    if (!isCheckpointError(error)) throw error;
  } finally {
    swaps = await racer.stop();
  }
  const outsideNow = await listing(outside);
  if (JSON.stringify(outsideNow) !== JSON.stringify(outsideBefore)) throw new Error('a byte outside the project changed');
  const files = await listing(path.join(project, 'd'));
  const text = (name: string) => (files[name] === undefined ? undefined : Buffer.from((files[name] as string).split(':')[2] as string, 'base64').toString());
  const leftovers = Object.keys(files).filter((file) => file.startsWith('.turnback-'));
  for (let i = 0; i < count; i++) {
    if (new RegExp(`^(orig|agent) ${i}$`).test(text(`f${i}`) ?? '')) continue;
    // A step the rollback could not take safely (the folder was swapped at that moment) is left
    // and named; the agent's bytes must then be in a leftover beside it or saved first.
    const pending = report?.cleanupPending ?? [];
    if (!pending.includes(`d/f${i}`) && leftovers.length === 0) throw new Error(`d/f${i} is lost or wrong (${String(text(`f${i}`))}) and not reported`);
    if (!leftovers.some((name) => text(name) === `agent ${i}`) && !(await savedFirst(store, report?.preRestoreId, `d/f${i}`, `agent ${i}`))) {
      throw new Error(`d/f${i}: the agent's bytes are neither on disk nor saved first`);
    }
  }
  for (const entry of report?.restored ?? []) {
    if (text(path.basename(entry.path)) !== `orig ${entry.path.slice('d/f'.length)}`) throw new Error(`${entry.path} reported restored, but is not`);
  }
  for (const name of Object.keys(files).filter((file) => file.startsWith('.turnback-'))) {
    if (!(report?.cleanupPending ?? []).includes(`d/${name}`)) throw new Error(`d/${name} left behind, not reported`);
  }
  return swaps;
}

/** True when the pre-restore checkpoint `id` saved `file` with exactly `text`. */
async function savedFirst(store: StoreView, id: CheckpointId | undefined, file: string, text: string): Promise<boolean> {
  if (id === undefined) return false;
  const entry = (await store.manifest(id)).entries.find((candidate) => candidate.path === file);
  return entry?.before.type === 'file' && (await store.readObject(entry.before.object)).toString() === text;
}

async function restoreCampaign(name: string, seedFallback: number, race: (project: string, outside: string) => Promise<Exchanger>): Promise<void> {
  const tally = new Tally(name, seedFallback);
  if (tally.skipUnless(canRace, 'this machine cannot swap names atomically (needs Linux and python3)')) return;
  let swaps = 0;
  for (let round = 0; round < trials(30, 2); round++) {
    const count = tally.random.int(50, 200);
    await tally.trial(`round ${round}, ${count} files`, async () => {
      const { project, outside, store, turn, outsideBefore } = await raceSetUp(count, `agent-${round}`);
      const observer = openObserver(store, { sessionId: `restorer-${round}` });
      try {
        swaps += await restoreRaced(project, outside, outsideBefore, observer, turn, () => race(project, outside), count, store);
      } finally {
        await observer.close();
        await store.close();
      }
    });
  }
  tally.note = `${swaps} swaps raced`;
  tally.finish();
}

async function toolCampaign(name: string, seedFallback: number, target: 'folder' | 'file'): Promise<void> {
  const tally = new Tally(name, seedFallback);
  if (tally.skipUnless(canRace, 'this machine cannot swap names atomically (needs Linux and python3)')) return;
  let swaps = 0;
  let refused = 0;
  for (let round = 0; round < trials(10, 1); round++) {
    const { project, storeDir } = await sandbox();
    const outside = await tempFolder('turnback-outside-');
    await writeTree(project, { 'd/keep': 'keep', 'd/victim': 'project victim' });
    await writeTree(outside, { victim: 'outside victim', ...Object.fromEntries(Array.from({ length: 50 }, (_, i) => [`f${i}`, `outside ${i}`])) });
    await fs.symlink(outside, path.join(project, 'l'));
    const outsideBefore = await listing(outside);
    const store = await openStore(storeDir, { projectRoot: project });
    const observer = openObserver(store, { sessionId: `tools-${round}` });
    await observer.beginTurn({ label: 'tools under a race' });
    const racer = target === 'folder' ? await startExchanger(path.join(project, 'd'), path.join(project, 'l')) : await startRelinker(path.join(project, 'd', 'victim'), path.join(outside, 'victim'));
    try {
      for (let w = 0; w < trials(50, 20); w++) {
        await tally.trial(`round ${round} write ${w}`, async () => {
          try {
            if (target === 'folder') await writeFile({ projectRoot: project, observer }, `d/f${w}`, `tool ${w}`);
            else if (w % 2 === 0) await writeFile({ projectRoot: project, observer }, 'd/victim', `tool ${w}`);
            else await editFile({ projectRoot: project, observer }, 'd/victim', 'victim', `victim ${w}`).catch((error: unknown) => {
              // The text may be gone after an earlier write: that refusal is the tool's own.
              if (!isCheckpointError(error) || error.code !== 'INVALID_ARGUMENT') throw error;
            });
          } catch (error) {
            if (!isCheckpointError(error)) throw error;
            refused += 1;
          }
          if (JSON.stringify(await listing(outside)) !== JSON.stringify(outsideBefore)) throw new Error('a byte outside the project changed');
        });
      }
    } finally {
      swaps += await racer.stop();
      await observer.close();
      await store.close();
    }
  }
  tally.note = `${swaps} swaps raced, ${refused} writes refused typed`;
  tally.finish();
}

describe('fault campaign: link and rename races', () => {
  it('a folder exchanged with a link (RENAME_EXCHANGE) against restore', () =>
    restoreCampaign('exchange folder/link vs restore', 1401, (project) => startExchanger(path.join(project, 'd'), path.join(project, 'l'))));
  it('a folder renamed away, a link in its place, against restore', () =>
    restoreCampaign('rename folder, link in vs restore', 1402, (project, outside) => startRelinker(path.join(project, 'd'), outside)));
  it('a folder exchanged with a link against the write tool', () => toolCampaign('exchange folder/link vs write tool', 1403, 'folder'));
  it('a file swapped for a link to an outside file against the write and edit tools', () => toolCampaign('file swapped for a link vs tools', 1404, 'file'));
});

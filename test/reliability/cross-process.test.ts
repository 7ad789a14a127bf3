import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import * as fs from 'node:fs/promises';
import * as os from 'node:os';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import type { CheckpointId } from '../../src/core/id.js';
import { nodeFileSystem } from '../../src/fs/file-system.js';
import { CheckpointObserver } from '../../src/session/observer.js';
import { CheckpointStore } from '../../src/store/store.js';
import { writeFile } from '../../src/tools/reference-tools.js';
import { faultFs } from '../helpers/fault-fs.js';
import { CHILD, DIST as DIST_FOLDER } from '../faults/campaign.js';
import { openObserver, sandbox, writeTree } from '../session/helpers.js';

const DIST = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../dist/admin.js');
const children: ChildProcess[] = [];
afterEach(() => {
  for (const child of children.splice(0)) child.kill('SIGKILL');
});

/** Another live session on the same store, with a turn open (or only the store open), until it is killed. */
async function otherLiveSession(project: string, storeDir: string, base: string, withTurn = true): Promise<ChildProcess> {
  const script = path.join(base, 'other.mjs');
  await fs.writeFile(
    script,
    `const { openStore, openObserver } = await import(${JSON.stringify(DIST)});
const [project, storeDir] = process.argv.slice(2);
const observer = openObserver(await openStore(storeDir, { projectRoot: project }), { sessionId: 'other' });
if (process.argv[4] === 'turn') await observer.beginTurn({ label: 'other' });
process.stdout.write('ready\\n');
setInterval(() => {}, 1000);
`,
  );
  const child = spawn(process.execPath, [script, project, storeDir, withTurn ? 'turn' : 'open'], { stdio: ['ignore', 'pipe', 'inherit'] });
  children.push(child);
  await new Promise<void>((resolve, reject) => {
    child.stdout?.once('data', () => resolve());
    child.once('exit', (code) => reject(new Error(`the other session exited (${String(code)})`)));
  });
  return child;
}

describe('a drop in one process never deletes what another live session may have deduplicated against', () => {
  it('drop keeps the full grace period while another session has a turn open, and frees the objects once it is gone', async () => {
    const { base, project, storeDir } = await sandbox();
    await writeTree(project, { 'f0.txt': 'f0 before, a pre-image another session could dedupe against' });
    const mine = await openObserver(project, storeDir, { sessionId: 'mine' });
    const turn = await mine.beginTurn();
    await writeFile({ projectRoot: project, observer: mine }, 'f0.txt', 'f0 after');
    const entry = (await mine.store.manifest(turn)).entries[0];
    if (entry?.before.type !== 'file') throw new Error('expected a file pre-image');
    const object = entry.before.object;

    const other = await otherLiveSession(project, storeDir, base);
    await mine.drop('mine');
    expect(await mine.store.hasObject(object)).toBe(true);

    other.kill('SIGKILL');
    await new Promise((resolve) => other.once('exit', resolve));
    await mine.drop('mine');
    expect(await mine.store.hasObject(object)).toBe(false);
    await mine.close();
  });

  it('replays the race: another process dedupes against this session\'s object, this session drops before that capture\'s record is down, the other process still restores its file', async () => {
    const { base, project, storeDir } = await sandbox();
    const original = 'f0 original, stored by this session first';
    await writeTree(project, { 'f0.txt': original, 'f1.txt': 'f1 original' });
    const mine = await openObserver(project, storeDir, { sessionId: 'mine' });
    await mine.beginTurn();
    await writeFile({ projectRoot: project, observer: mine }, 'f0.txt', 'f0 after');
    await writeFile({ projectRoot: project, observer: mine }, 'f1.txt', 'f1 after');
    // f0 back to its original bytes, so the other process's capture of it dedupes against ours.
    await fs.writeFile(path.join(project, 'f0.txt'), original);
    const fifo = path.join(base, 'pause');
    execFileSync('mkfifo', [fifo]);
    const child = spawn(process.execPath, [CHILD, JSON.stringify({ dist: DIST_FOLDER, kind: 'dedupe', project, storeDir, sessionId: 'other', pauseAtJournal: fifo })], { stdio: ['ignore', 'pipe', 'inherit'] });
    children.push(child);
    let output = '';
    child.stdout?.setEncoding('utf8');
    const closed = new Promise<void>((resolve) => child.once('close', () => resolve()));
    await new Promise<void>((resolve, reject) => {
      child.stdout?.on('data', (chunk: string) => {
        output += chunk;
        if (output.includes('"paused"')) resolve();
      });
      child.once('exit', (code) => reject(new Error(`the other process exited (${String(code)}) before its pause: ${output}`)));
    });
    // The other process holds a dedupe hit on our object, its record not yet written: we drop.
    await mine.drop('mine');
    await fs.writeFile(fifo, 'g');
    await closed;
    const line = output.split('\n').find((candidate) => candidate.includes('"turn"'));
    if (line === undefined) throw new Error(`the other process said: ${output}`);
    const { turn } = JSON.parse(line) as { turn: CheckpointId };
    // Its process is gone (no descriptor of ours keeps the pack alive): a new session restores its turn.
    const later = await openObserver(project, storeDir, { sessionId: 'later' });
    const report = await later.restore(turn, { paths: ['f0.txt'] });
    expect(report.failed).toEqual([]);
    expect(report.skipped).toEqual([]);
    expect(await fs.readFile(path.join(project, 'f0.txt'), 'utf8')).toBe(original);
    await later.close();
    await mine.close();
  });

  it('a drop finishes when another process pruned one of its checkpoints between its listing and its delete', async () => {
    const { project, storeDir } = await sandbox();
    await writeTree(project, { 'a.txt': 'a' });
    const setup = await openObserver(project, storeDir, { sessionId: 'mine' });
    const turns: CheckpointId[] = [];
    for (let i = 0; i < 3; i++) {
      turns.push(await setup.beginTurn());
      await writeFile({ projectRoot: project, observer: setup }, 'a.txt', `a ${i}`);
    }
    await setup.close();
    // The first unlink of the drop is the moment another process's prune removes the last turn.
    let pruned = false;
    const racing = faultFs(nodeFileSystem, {
      before: async (op) => {
        if (op !== 'unlink' || pruned) return;
        pruned = true;
        await fs.rm(path.join(storeDir, 'checkpoints', `${turns[2] as string}.json`));
      },
    });
    const mine = new CheckpointObserver({ store: await CheckpointStore.open(storeDir, { projectRoot: project, fs: racing.fs }), sessionId: 'mine' });
    const dropped = await mine.drop('mine');
    expect(pruned).toBe(true);
    expect(dropped.removedCheckpoints).toBe(2);
    expect(await mine.store.list()).toEqual([]);
    await mine.close();
  });

  it('keeps the full grace while another process has the store open even with no turn yet (its first capture may dedupe before its journal exists)', async () => {
    const { base, project, storeDir } = await sandbox();
    await writeTree(project, { 'f0.txt': 'f0 before, a pre-image a process with no turn yet could dedupe against' });
    const mine = await openObserver(project, storeDir, { sessionId: 'mine' });
    const turn = await mine.beginTurn();
    await writeFile({ projectRoot: project, observer: mine }, 'f0.txt', 'f0 after');
    const entry = (await mine.store.manifest(turn)).entries[0];
    if (entry?.before.type !== 'file') throw new Error('expected a file pre-image');
    const other = await otherLiveSession(project, storeDir, base, false);
    await mine.drop('mine');
    expect(await mine.store.hasObject(entry.before.object)).toBe(true);
    other.kill('SIGKILL');
    await new Promise((resolve) => other.once('exit', resolve));
    // Killed: its presence file names a dead process, which no longer counts.
    await mine.drop('mine');
    expect(await mine.store.hasObject(entry.before.object)).toBe(false);
    await mine.close();
  });
});

describe('presence files', () => {
  it('an open store leaves one, its close removes it, and prune removes one a dead process left', async () => {
    const { project, storeDir } = await sandbox();
    const observer = await openObserver(project, storeDir);
    const state = path.join(storeDir, 'state');
    const presences = async () => (await fs.readdir(state)).filter((name) => name.startsWith('presence-'));
    expect(await presences()).toHaveLength(1);
    // A process that was SIGKILLed never removed its file; no process has this pid.
    await fs.writeFile(path.join(state, 'presence-4194303-deadbeef.json'), JSON.stringify({ pid: 4194303, hostname: os.hostname(), at: new Date().toISOString() }));
    expect(await presences()).toHaveLength(2);
    await observer.store.prune();
    expect(await presences()).toHaveLength(1);
    await observer.close();
    // The observer leaves its store open (the caller owns it); closing the store removes the file.
    await observer.store.close();
    expect(await presences()).toEqual([]);
  });
});

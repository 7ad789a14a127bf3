import { spawn } from 'node:child_process';
import * as fs from 'node:fs/promises';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { contentHash, loadHasher } from '../../src/core/hash.js';
import { isStatFingerprint } from '../../src/core/model.js';
import { CheckpointStore } from '../../src/store/store.js';
import { CheckpointObserver } from '../../src/session/observer.js';
import { openObserver, sandbox, writeTree } from './helpers.js';

// afterWrite records a file's stat identity (one lstat) and hashes it later, while that identity
// still holds. These tests pin down what the restore guard sees in each case.

const DIST = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../dist/admin.js');

async function afterRecords(storeDir: string, project: string, id: string): Promise<(string | undefined)[]> {
  const store = await CheckpointStore.open(storeDir, { projectRoot: project });
  try {
    const manifest = await store.manifest(id as never);
    return manifest.entries.map((e) => e.after);
  } finally {
    await store.close();
  }
}

/** Writes a child session script: its prologue opens the store and an observer and begins `turn`. */
async function childSession(base: string, name: string, body: string): Promise<string> {
  const script = path.join(base, name);
  await fs.writeFile(script, `${CHILD_PROLOGUE}${body}`);
  return script;
}

const CHILD_PROLOGUE = `
import * as fs from 'node:fs/promises';
import * as path from 'node:path';
const { openStore, openObserver } = await import(process.env.TURNBACK_DIST);
const [project, storeDir] = process.argv.slice(2);
const store = await openStore(storeDir, { projectRoot: project });
const observer = openObserver(store, { sessionId: 'child' });
const turn = await observer.beginTurn();
`;

/** Runs a child session script that prints its turn id and waits; SIGKILLs it once it has. */
async function turnOfKilledChild(script: string, project: string, storeDir: string): Promise<string> {
  const child = spawn(process.execPath, [script, project, storeDir], { env: { ...process.env, TURNBACK_DIST: DIST }, stdio: ['ignore', 'pipe', 'inherit'] });
  const turn = await new Promise<string>((resolve, reject) => {
    child.stdout.once('data', (d: Buffer) => resolve(d.toString().trim()));
    child.once('exit', (code) => reject(new Error(`child exited early (${code})`)));
  });
  child.kill('SIGKILL');
  await new Promise((resolve) => child.once('exit', resolve));
  return turn;
}

describe('post-write records', () => {
  it('seal replaces the stat identity with the content fingerprint of the version written', async () => {
    await loadHasher();
    const { project, storeDir } = await sandbox();
    await writeTree(project, { 'a.txt': 'one' });
    const observer = await openObserver(project, storeDir);
    const turn = await observer.beginTurn();
    for (const text of ['two', 'three', 'four']) {
      await observer.beforeWrite('a.txt');
      await fs.writeFile(path.join(project, 'a.txt'), text);
      await observer.afterWrite('a.txt');
    }
    await observer.close();
    expect(await afterRecords(storeDir, project, turn)).toEqual([`file:${contentHash(Buffer.from('four'))}`]);
    const again = await openObserver(project, storeDir);
    const report = await again.restore(turn);
    expect(report.restored.map((e) => e.path)).toEqual(['a.txt']);
    expect(await fs.readFile(path.join(project, 'a.txt'), 'utf8')).toBe('one');
  });

  it('a file changed outside the session before it was hashed keeps its identity, and restore refuses it', async () => {
    const { project, storeDir } = await sandbox();
    await writeTree(project, { 'a.txt': 'one', 'b.txt': 'bee' });
    const observer = await openObserver(project, storeDir);
    const turn = await observer.beginTurn();
    for (const rel of ['a.txt', 'b.txt']) {
      await observer.beforeWrite(rel);
      await fs.writeFile(path.join(project, rel), `agent ${rel}`);
      await observer.afterWrite(rel);
    }
    // Someone else edits a.txt (same size, so only the identity tells) before anything is hashed,
    // a timestamp tick later (set explicitly: coarse-timestamp kernels tick every 1-10 ms; see Known limits).
    const agentWrite = await fs.stat(path.join(project, 'a.txt'));
    await fs.writeFile(path.join(project, 'a.txt'), 'other a.txt');
    const later = new Date(agentWrite.mtimeMs + 1000);
    await fs.utimes(path.join(project, 'a.txt'), later, later);
    const plan = await observer.plan(turn);
    expect(plan.entries.map((e) => [e.path, e.action, e.reason ?? ''])).toEqual([
      ['a.txt', 'refuse', 'changed-outside'],
      ['b.txt', 'restore', ''],
    ]);
    const report = await observer.restore(turn);
    expect(report.refused.map((e) => e.path)).toEqual(['a.txt']);
    expect(await fs.readFile(path.join(project, 'a.txt'), 'utf8')).toBe('other a.txt');
    expect(await fs.readFile(path.join(project, 'b.txt'), 'utf8')).toBe('bee');
    await observer.close();
  });

  it('a write recorded after the hashing started wins over the older version', async () => {
    const { project, storeDir } = await sandbox();
    await writeTree(project, { 'a.txt': 'one' });
    const observer = await openObserver(project, storeDir);
    const turn = await observer.beginTurn();
    await observer.beforeWrite('a.txt');
    await fs.writeFile(path.join(project, 'a.txt'), 'two');
    await observer.afterWrite('a.txt');
    const planning = observer.plan(turn); // starts hashing 'two'
    await observer.beforeWrite('a.txt');
    await fs.writeFile(path.join(project, 'a.txt'), 'three!');
    await observer.afterWrite('a.txt');
    await planning;
    const report = await observer.restore(turn);
    expect(report.refused).toEqual([]);
    expect(await fs.readFile(path.join(project, 'a.txt'), 'utf8')).toBe('one');
    await observer.close();
  });

  it('a session killed before hashing leaves identities that still let another process restore', async () => {
    const { project, storeDir, base } = await sandbox();
    await writeTree(project, { 'a.txt': 'one', 'b.txt': 'bee' });
    const script = await childSession(base, 'child.mjs', `
for (const rel of ['a.txt', 'b.txt']) {
  await observer.beforeWrite(rel);
  await fs.writeFile(path.join(project, rel), 'child wrote ' + rel);
  await observer.afterWrite(rel);
}
process.stdout.write(turn + '\\n');
setInterval(() => {}, 1000); // wait to be killed: no seal, nothing hashed
`);
    const turn = await turnOfKilledChild(script, project, storeDir);
    const recorded = await afterRecords(storeDir, project, turn);
    expect(recorded.every((after) => after !== undefined && isStatFingerprint(after))).toBe(true);

    await fs.writeFile(path.join(project, 'b.txt'), 'edited by a person');
    const observer: CheckpointObserver = await openObserver(project, storeDir);
    const report = await observer.restore(turn as never);
    expect(report.restored.map((e) => e.path)).toEqual(['a.txt']);
    expect(report.refused.map((e) => [e.path, e.reason])).toEqual([['b.txt', 'changed-outside']]);
    expect(await fs.readFile(path.join(project, 'a.txt'), 'utf8')).toBe('one');
    expect(await fs.readFile(path.join(project, 'b.txt'), 'utf8')).toBe('edited by a person');
    await observer.close();
  });

  it('a repeat touch killed before its record is written leaves the previous record: restore refuses the path, the pre-image is kept', async () => {
    const { project, storeDir, base } = await sandbox();
    await writeTree(project, { 'a.txt': 'one', 'b.txt': 'bee' });
    const script = await childSession(base, 'child-repeat.mjs', `
for (const [rel, text] of [['a.txt', 'first write'], ['b.txt', 'child b'], ['a.txt', 'second, longer write']]) {
  await observer.beforeWrite(rel);
  await fs.writeFile(path.join(project, rel), text);
  await observer.afterWrite(rel);
}
process.stdout.write(turn + '\\n', () => {
  for (;;) {} // killed with the repeat touch's record still in memory (no timer can run)
});
`);
    const turn = await turnOfKilledChild(script, project, storeDir);

    const observer: CheckpointObserver = await openObserver(project, storeDir);
    const report = await observer.restore(turn as never);
    // a.txt's last record names the first write, which is no longer there: refused, reported.
    expect(report.refused.map((e) => [e.path, e.reason])).toEqual([['a.txt', 'changed-outside']]);
    expect(report.restored.map((e) => e.path)).toEqual(['b.txt']);
    expect(await fs.readFile(path.join(project, 'a.txt'), 'utf8')).toBe('second, longer write');
    // Its pre-image is intact in the checkpoint.
    const store = await CheckpointStore.open(storeDir, { projectRoot: project });
    const before = (await store.manifest(turn as never)).entries.find((e) => e.path === 'a.txt')?.before;
    expect(before?.type).toBe('file');
    if (before?.type === 'file') expect((await store.readObject(before.object)).toString()).toBe('one');
    await store.close();
    await observer.close();
  });
});

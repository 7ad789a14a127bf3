import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { CheckpointObserver } from '../../src/session/observer.js';
import { CheckpointStore } from '../../src/store/store.js';
import { gitBlobId } from '../../src/core/git-blob.js';
import { GitCopies } from '../../src/store/git-copies.js';
import { removeFolder, tempFolder } from '../helpers/temp.js';

// Clean tracked files past the copy budget rest on git's blobs (`git:<id>`): later pictures reuse
// those records as they are (no copy inside a tool call), and the store copies the blobs in on
// its own (`copyGitBlobsIn`), after which every checkpoint resting on them reads the store's copy.
// Real git, real files.

const FILES = 8;
let dir: string;
let project: string;
let store: CheckpointStore;

const git = (...args: string[]): string => execFileSync('git', ['-c', 'user.email=t@example.com', '-c', 'user.name=t', ...args], { cwd: project, encoding: 'utf8' });
const text = (i: number): string => `file ${i}\n${'x'.repeat(i * 11)}\n`;

beforeEach(async () => {
  dir = await tempFolder('turnback-git-copies-');
  project = path.join(dir, 'project');
  fs.mkdirSync(path.join(project, 'src'), { recursive: true });
  for (let i = 0; i < FILES; i++) fs.writeFileSync(path.join(project, 'src', `f${i}.txt`), text(i));
  git('init', '-q');
  git('add', '-A');
  git('commit', '-qm', 'init');
  store = await CheckpointStore.open(path.join(dir, 'store'), { projectRoot: project });
});

afterEach(async () => {
  await store.close();
  await removeFolder(dir);
});

/** One call of its own observer, as each command is (its turn sealed and its pictures saved at the end). */
async function call(id: string, change?: () => void): Promise<void> {
  const observer = new CheckpointObserver({ store, sessionId: id, coverage: { maxPictureFiles: 1 } });
  await observer.callBegin(id);
  change?.();
  await observer.callEnd(id);
  await observer.close();
}

const objectCount = async (): Promise<number> => (await store.listObjects()).length;

describe('files resting on git', () => {
  it('past the budget, the first picture rests every clean tracked file on git, and the second and third copy nothing of them', async () => {
    await call('c1');
    const resting = await store.restingOnGit();
    expect(resting.length).toBe(FILES);
    const after1 = await objectCount();
    await call('c2');
    await call('c3');
    expect(await objectCount()).toBe(after1);
    expect((await store.restingOnGit()).length).toBe(FILES);
  });

  it('copied in, a checkpoint resting on git reads the store copy; prune keeps the copies while named and drops them after', async () => {
    await call('rm', () => fs.rmSync(path.join(project, 'src'), { recursive: true }));
    const checkpoints = await store.sealedIds();
    const removal = await store.manifest(checkpoints.at(-1) as string);
    const keys = removal.entries.flatMap((entry) => (entry.before.type === 'file' ? [entry.before.object] : []));
    expect(keys.length).toBe(FILES);
    expect(keys.every((key) => key.startsWith('git:'))).toBe(true);

    const before = await objectCount();
    const report = await store.copyGitBlobsIn({ maxFiles: 3 });
    expect(report).toMatchObject({ copied: 3, left: FILES - 3, lost: 0 });
    expect((await store.copyGitBlobsIn()).copied).toBe(FILES - 3);
    expect(await store.restingOnGit()).toEqual([]);
    expect(await objectCount()).toBeGreaterThan(before);
    const index = fs.readFileSync(path.join(dir, 'store', 'objects', 'git-copies'), 'utf8').trim().split('\n');
    expect(index.length).toBe(FILES);

    // A reader that cannot reach git at all still gets every byte: they come from the store.
    fs.renameSync(path.join(project, '.git'), path.join(project, '.git-away'));
    try {
      for (let i = 0; i < FILES; i++) {
        const id = gitBlobId(Buffer.from(text(i)));
        expect((await store.readObject(`git:${id}`)).toString()).toBe(text(i));
        expect(await store.hasObject(`git:${id}`)).toBe(true);
      }
    } finally {
      fs.renameSync(path.join(project, '.git-away'), path.join(project, '.git'));
    }
    expect((await store.verify()).problems).toEqual([]);

    // Named by the checkpoint: prune keeps every copy.
    await store.prune({ graceMs: 0 });
    expect(fs.readFileSync(path.join(dir, 'store', 'objects', 'git-copies'), 'utf8').trim().split('\n').length).toBe(FILES);
    const kept = await objectCount();

    // Nothing names the blobs any more (the checkpoints dropped, the files gone from the pictures): the copies go.
    for (const id of await store.sealedIds()) await store.dropCheckpoint(id);
    await call('after');
    for (const id of await store.sealedIds()) await store.dropCheckpoint(id);
    await store.prune({ graceMs: 0 });
    expect(fs.existsSync(path.join(dir, 'store', 'objects', 'git-copies'))).toBe(false);
    expect(await objectCount()).toBeLessThan(kept);
  });

  it('copies in slices and stops between two when asked (a command arrived); a copy the index names but the store lacks reads from git', async () => {
    await call('rm', () => fs.rmSync(path.join(project, 'src'), { recursive: true }));
    let asked = 0;
    // Asked twice while finding what is left (after the state documents, after the checkpoints), then before each slice of 2.
    const first = await store.copyGitBlobsIn({ sliceFiles: 2, shouldStop: () => ++asked > 4 });
    expect(first).toMatchObject({ copied: 4, left: FILES - 4, stopped: true });
    expect((await store.restingOnGit()).length).toBe(FILES - 4);

    // An index line naming an object the store does not have: the read falls back to git's blob, checked against its id.
    const id = gitBlobId(Buffer.from(text(7)));
    fs.appendFileSync(path.join(dir, 'store', 'objects', 'git-copies'), `${id} 0123456789abcdef-${text(7).length.toString(16)}\n`);
    expect((await store.readObject(`git:${id}`)).toString()).toBe(text(7));
    expect(await store.hasObject(`git:${id}`)).toBe(true);
    // It still counts as resting only on git, and the next copy-in puts it right.
    expect(await store.restingOnGit()).toContain(id);
    expect((await store.copyGitBlobsIn()).left).toBe(0);
    expect(await store.restingOnGit()).toEqual([]);
  });
  it('a command arriving while the copy-in still reads what the store rests on stops it between two documents, copying nothing; the next look copies all', async () => {
    await call('c1');
    await call('c2', () => fs.appendFileSync(path.join(project, 'src', 'f0.txt'), 'more\n'));
    const documents = fs.readdirSync(path.join(dir, 'store', 'state')).filter((name) => name.endsWith('.json')).length;
    expect(documents).toBeGreaterThan(1);
    // Asked before each document and each checkpoint read: "stop" at the second question, inside the state documents' read.
    let asked = 0;
    const stopped = await store.copyGitBlobsIn({ shouldStop: () => ++asked >= 2, stopWhileReading: true });
    expect(asked).toBe(2);
    expect(stopped).toMatchObject({ copied: 0, stopped: true, left: 0 });
    expect(stopped.rest).toBeUndefined();
    expect((await store.restingOnGit()).length).toBe(FILES);
    // Stopped inside the checkpoints' read (past every state document): still nothing copied, nothing known of what is left.
    asked = 0;
    const later = await store.copyGitBlobsIn({ shouldStop: () => ++asked > documents + 1, stopWhileReading: true });
    expect(later).toMatchObject({ copied: 0, stopped: true });
    expect(later.rest).toBeUndefined();
    const all = await store.copyGitBlobsIn({ shouldStop: () => false, stopWhileReading: true });
    expect(all).toMatchObject({ copied: FILES, stopped: false, left: 0 });
    expect(await store.restingOnGit()).toEqual([]);
  });

  it('a stopped copy-in taken up at its mark reads only the index lines appended since, and still skips an id copied meanwhile', async () => {
    await call('rm', () => fs.rmSync(path.join(project, 'src'), { recursive: true }));
    let asked = 0;
    const first = await store.copyGitBlobsIn({ sliceFiles: 2, shouldStop: () => ++asked > 4 });
    expect(first).toMatchObject({ copied: 4, stopped: true });
    expect(first.rest?.length).toBe(FILES - 4);
    const copiesFile = path.join(dir, 'store', 'objects', 'git-copies');
    expect(first.mark).toEqual({ identity: expect.any(String), read: fs.statSync(copiesFile).size });
    // Another process copies one of the rest meanwhile (its line names an object this store lacks: skipped all the same).
    const [taken, ...others] = first.rest as string[];
    fs.appendFileSync(copiesFile, `${taken} 0123456789abcdef-10\n`);
    await store.close();
    store = await CheckpointStore.open(path.join(dir, 'store'), { projectRoot: project });
    const resumed = await store.copyGitBlobsIn({ wanted: first.rest, wantedSince: first.mark });
    expect(resumed).toMatchObject({ copied: others.length, left: 0, stopped: false, rest: [] });
    const ids = fs.readFileSync(copiesFile, 'utf8').trim().split('\n').map((line) => line.split(' ')[0]);
    expect(ids.length).toBe(FILES);
    expect(new Set(ids).size).toBe(FILES);
  });

  it("a reader started at a mark knows only the lines after it, answers every copy when asked for all, and reads a rewritten index whole", () => {
    const file = path.join(dir, 'copies');
    const line = (i: number): string => `${String(i).repeat(40).slice(0, 40)} 0123456789abcdef-${i.toString(16)}\n`;
    fs.writeFileSync(file, line(1) + line(2));
    const first = new GitCopies(file);
    const mark = first.mark();
    expect(mark.read).toBe(fs.statSync(file).size);
    fs.appendFileSync(file, line(3));
    const later = new GitCopies(file);
    later.readFrom(mark);
    later.refresh();
    expect(later.get('1'.repeat(40))).toBeUndefined();
    expect(later.get('3'.repeat(40))).toBe('0123456789abcdef-3');
    expect([...later.ids()].sort()).toEqual(['1', '2', '3'].map((d) => d.repeat(40)));
    // Rewritten by rename (prune): a new file, read from its start whatever the mark says.
    fs.writeFileSync(`${file}.tmp`, line(1) + line(4));
    fs.renameSync(`${file}.tmp`, file);
    const rewritten = new GitCopies(file);
    rewritten.readFrom(mark);
    rewritten.refresh();
    expect(rewritten.get('1'.repeat(40))).toBe('0123456789abcdef-1');
    expect(rewritten.get('4'.repeat(40))).toBe('0123456789abcdef-4');
  });
});

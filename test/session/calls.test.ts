import { execFileSync, spawn } from 'node:child_process';
import * as fsSync from 'node:fs';
import * as fs from 'node:fs/promises';
import * as path from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import type { PathState } from '../../src/core/model.js';
import { CheckpointStore } from '../../src/store/store.js';
import { CheckpointObserver } from '../../src/session/observer.js';
import { writeFile } from '../../src/tools/reference-tools.js';
import { changesSinceInterrupted, interruptedRuns } from '../../src/session/interrupted.js';
import { listing, openObserver, sandbox, writeTree } from './helpers.js';
import { storeBehind, type StoreView } from '../../src/store/view.js';

// Shell calls (src/session/calls.ts): what callBegin/callEnd attribute around real commands and
// real git, restores to a call's boundary, and what a call leaves in the store. Tool-call
// snapshots: snapshots.test.ts; a call retried under its id: call-retry.test.ts.

function sh(cwd: string, script: string): void {
  execFileSync('sh', ['-c', script], { cwd, stdio: 'pipe' });
}

function git(cwd: string, ...args: string[]): string {
  return execFileSync('git', ['-c', 'user.email=t@t', '-c', 'user.name=t', ...args], { cwd, encoding: 'utf8' });
}

async function gitProject(): Promise<{ base: string; project: string; storeDir: string }> {
  const box = await sandbox();
  git(box.project, 'init', '-q');
  await writeTree(box.project, {
    'src/parser.ts': 'export function parse() { return 1; }\n',
    'src/lexer.ts': 'export const tokens = [];\n',
    'docs/notes/a.md': '# a\n',
    'docs/notes/b.md': '# b\n',
    'docs/notes/deep/c.md': '# c\n',
    'scripts/tidy.sh': 'echo tidy\n',
    '.gitignore': 'build/\n',
    'build/out.js': 'ignored',
  });
  git(box.project, 'add', '-A');
  git(box.project, 'commit', '-qm', 'one');
  return box;
}

async function around(observer: CheckpointObserver, callId: string, project: string, script: string) {
  await observer.callBegin(callId, { command: script });
  sh(project, script);
  return observer.callEnd(callId, { sideEffect: 'filesystem' });
}

afterEach(() => {
  vi.useRealTimers();
});

describe('shell calls: attribution and restore to the boundary', () => {
  it('sed -i, rm -rf, mv, chmod +x, ln -s: restore gives a byte-identical tree', async () => {
    const { project, storeDir } = await gitProject();
    const before = await listing(project);
    const observer = await openObserver(project, storeDir);
    const boundary = await observer.beginTurn({ label: 'user message 1' });
    const sed = await around(observer, 'c1', project, "sed -i 's/return 1/return 2/' src/parser.ts");
    expect(sed.changes).toMatchObject([{ path: 'src/parser.ts', kind: 'changed' }]);
    const rm = await around(observer, 'c2', project, 'rm -rf docs/notes');
    expect(rm.changes.map((c) => [c.path, c.kind])).toEqual([
      ['docs/notes/a.md', 'deleted'],
      ['docs/notes/b.md', 'deleted'],
      ['docs/notes/deep/c.md', 'deleted'],
    ]);
    await around(observer, 'c3', project, 'mv src/lexer.ts src/tokens.ts && chmod +x scripts/tidy.sh && ln -s ../src/parser.ts scripts/link.ts');
    const ignored = await around(observer, 'c4', project, 'echo changed > build/out.js');
    expect(ignored.changes).toEqual([]);
    const report = await observer.restore(boundary);
    expect(report.failed).toEqual([]);
    expect(report.refused).toEqual([]);
    const after = await listing(project);
    expect({ ...after, 'build/out.js': before['build/out.js'] }).toEqual(before);
  });

  it('git checkout of another commit that adds, changes and deletes many files restores exactly', async () => {
    const { project, storeDir } = await gitProject();
    git(project, 'checkout', '-qb', 'other');
    sh(project, 'for i in $(seq 1 40); do echo "file $i" > src/gen$i.ts; done; rm docs/notes/a.md; echo changed >> src/parser.ts; chmod +x src/lexer.ts');
    git(project, 'add', '-A');
    git(project, 'commit', '-qm', 'two');
    git(project, 'checkout', '-q', 'master').toString();
    const before = await listing(project);
    const observer = await openObserver(project, storeDir);
    const boundary = await observer.beginTurn();
    const attribution = await around(observer, 'checkout', project, 'git checkout -q other');
    expect(attribution.changes.filter((c) => c.kind === 'created')).toHaveLength(40);
    expect(attribution.changes.find((c) => c.path === 'docs/notes/a.md')?.kind).toBe('deleted');
    const report = await observer.restore(boundary);
    expect(report.failed).toEqual([]);
    expect(await listing(project)).toEqual(before);
  });

  it('a write-tool edit and a later sed -i of the same file restore in one plan', async () => {
    const { project, storeDir } = await gitProject();
    const original = await fs.readFile(path.join(project, 'src/parser.ts'), 'utf8');
    const observer = await openObserver(project, storeDir);
    const boundary = await observer.beginTurn();
    await writeFile({ projectRoot: project, observer }, 'src/parser.ts', 'export function parse() { return 1; } // tool\n');
    await around(observer, 'sed', project, "sed -i 's/tool/sed/' src/parser.ts");
    const plan = await observer.plan(boundary);
    expect(plan.entries).toMatchObject([{ path: 'src/parser.ts', action: 'restore' }]);
    await observer.restore(boundary);
    expect(await fs.readFile(path.join(project, 'src/parser.ts'), 'utf8')).toBe(original);
  });

  it('refuses a file edited by someone else after the call', async () => {
    const { project, storeDir } = await gitProject();
    const observer = await openObserver(project, storeDir);
    const boundary = await observer.beginTurn();
    await around(observer, 'c1', project, 'echo agent > src/parser.ts && echo agent > src/lexer.ts');
    await fs.writeFile(path.join(project, 'src/lexer.ts'), 'my own edit');
    const report = await observer.restore(boundary);
    expect(report.refused).toMatchObject([{ path: 'src/lexer.ts', reason: 'changed-outside' }]);
    expect(await fs.readFile(path.join(project, 'src/lexer.ts'), 'utf8')).toBe('my own edit');
    expect(report.restored.map((e) => e.path)).toEqual(['src/parser.ts']);
  });

  it('lists network and desktop calls after the boundary as irreversible', async () => {
    const { project, storeDir } = await gitProject();
    const observer = await openObserver(project, storeDir);
    const boundary = await observer.beginTurn();
    await observer.callBegin('fetch');
    await observer.callEnd('fetch', { sideEffect: 'network' });
    await around(observer, 'edit', project, 'echo x > src/parser.ts');
    const report = await observer.restore(boundary);
    expect(report.irreversible).toEqual([{ callId: 'fetch', sideEffect: 'network' }]);
  });

  it('survives a restart between capture and restore, and between callBegin and callEnd', async () => {
    const { project, storeDir } = await gitProject();
    const before = await listing(project);
    const first = await openObserver(project, storeDir);
    const boundary = await first.beginTurn();
    await first.callBegin('long-call');
    sh(project, 'rm -rf docs && echo new > fresh.txt');
    // The first process "dies" here: a new process ends the call from the persisted baseline.
    const storeAgain = await CheckpointStore.open(storeDir, { projectRoot: project });
    const second = new CheckpointObserver({ store: storeAgain, sessionId: 'test' });
    const attribution = await second.callEnd('long-call');
    expect(attribution.changes.map((c) => c.kind).sort()).toEqual(['created', 'deleted', 'deleted', 'deleted']);
    const third = new CheckpointObserver({ store: await CheckpointStore.open(storeDir, { projectRoot: project }), sessionId: 'other' });
    const report = await third.restore(boundary);
    expect(report.failed).toEqual([]);
    expect(await listing(project)).toEqual(before);
  });

  it('a folder unreadable during a call marks its paths incomplete, and a restore refuses them with a reason', async () => {
    const { project, storeDir } = await gitProject();
    // Tests run as root, where chmod 000 hides nothing: the folder listing is made to fail instead.
    let unreadable: string | undefined;
    const pictureReadDir = (abs: string): fsSync.Dirent[] => {
      if (unreadable !== undefined && abs === path.join(project, unreadable)) {
        throw Object.assign(new Error(`EACCES: permission denied, scandir '${abs}'`), { code: 'EACCES' });
      }
      return fsSync.readdirSync(abs, { withFileTypes: true });
    };
    const observer = await openObserver(project, storeDir, { pictureReadDir });
    const boundary = await observer.beginTurn();
    await observer.callBegin('c1', { command: 'edits' });
    sh(project, "sed -i 's/# a/# A/' docs/notes/a.md && sed -i 's/return 1/return 2/' src/parser.ts");
    unreadable = 'docs/notes';
    const attribution = await observer.callEnd('c1');
    expect(attribution.incomplete).toEqual(['docs/notes/a.md', 'docs/notes/b.md', 'docs/notes/deep/c.md']);
    // The readable change is attributed; nothing under the unreadable folder is called deleted.
    expect(attribution.changes.map((c) => [c.path, c.kind])).toEqual([['src/parser.ts', 'changed']]);
    expect(attribution.gaps).toContainEqual(expect.objectContaining({ path: 'docs/notes', reason: 'unreadable' }));
    expect(attribution.partial).toBe(true);

    unreadable = undefined;
    const plan = await observer.plan(boundary);
    const refusedInPlan = plan.entries.filter((e) => e.action === 'refuse').map((e) => [e.path, e.reason]);
    expect(refusedInPlan).toEqual([
      ['docs/notes/a.md', 'incomplete-attribution'],
      ['docs/notes/b.md', 'incomplete-attribution'],
      ['docs/notes/deep/c.md', 'incomplete-attribution'],
    ]);
    const report = await observer.restore(boundary);
    expect(report.refused.map((e) => [e.path, e.reason])).toEqual(refusedInPlan);
    expect(report.restored.map((e) => e.path)).toEqual(['src/parser.ts']);
    expect(await fs.readFile(path.join(project, 'src/parser.ts'), 'utf8')).toBe('export function parse() { return 1; }\n');
    // The refused file keeps the content the restore could not vouch for.
    expect(await fs.readFile(path.join(project, 'docs/notes/a.md'), 'utf8')).toBe('# A\n');
  });

  it('a call whose process is killed mid-command is listed, diffed and ended by a new process, and a restore undoes it', async () => {
    const { base, project, storeDir } = await sandbox();
    // Over 256 files, so the first picture writes a picture base and the baseline is a delta on it.
    await writeTree(project, Object.fromEntries(Array.from({ length: 300 }, (_, i) => [`src/m${i % 10}/f${i}.ts`, `export const v${i} = ${i};\n`])));
    const before = await listing(project);
    // The child runs the current sources, bundled with their dependencies (not dist/).
    const { build } = await import('esbuild');
    const bundle = path.join(base, 'turnback.mjs');
    await build({
      entryPoints: [path.resolve('src/admin.ts')],
      bundle: true,
      platform: 'node',
      format: 'esm',
      outfile: bundle,
      logLevel: 'silent',
      // Bundled CommonJS dependencies use require() and __filename.
      banner: {
        js: "import { createRequire as turnbackRequire } from 'node:module'; import { fileURLToPath as turnbackPath } from 'node:url'; const require = turnbackRequire(import.meta.url); const __filename = turnbackPath(import.meta.url); const __dirname = __filename.slice(0, __filename.lastIndexOf('/'));",
      },
    });
    const script = path.join(base, 'child.mjs');
    await fs.writeFile(
      script,
      `const { openStore, openObserver } = await import(${JSON.stringify(bundle)});
const store = await openStore(process.argv[3], { projectRoot: process.argv[2] });
const observer = openObserver(store, { sessionId: 'dying' });
await observer.beginTurn();
await observer.callBegin('c1', { command: 'make things' });
process.stdout.write('ready\\n');
setInterval(() => {}, 1000);
`,
    );
    const child = spawn(process.execPath, [script, project, storeDir], { cwd: path.resolve('.'), stdio: ['ignore', 'pipe', 'pipe'] });
    let stderr = '';
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    await new Promise<void>((resolve, reject) => {
      child.stdout.once('data', () => resolve());
      child.once('exit', (code) => reject(new Error(`child exited early (${code}): ${stderr}`)));
    });
    sh(project, "sed -i 's/= 5;/= 55;/' src/m5/f5.ts && rm -rf src/m7 && echo new > src/new.ts");
    child.kill('SIGKILL');
    await new Promise((r) => child.once('exit', r));

    const store = await CheckpointStore.open(storeDir, { projectRoot: project });
    expect((await store.listState('pic-')).length).toBeGreaterThan(0);
    const [interrupted, ...others] = await interruptedRuns(store);
    expect(others).toEqual([]);
    expect(interrupted).toMatchObject({ sessionId: 'dying', callId: 'c1', command: 'make things' });
    if (interrupted === undefined) throw new Error('expected an interrupted call');
    const since = await changesSinceInterrupted(store, interrupted);
    expect(since.changes.filter((c) => c.kind === 'deleted')).toHaveLength(30);
    expect(since.changes.filter((c) => c.kind !== 'deleted').map((c) => [c.path, c.kind])).toEqual([
      ['src/m5/f5.ts', 'changed'],
      ['src/new.ts', 'created'],
    ]);
    const observer = new CheckpointObserver({ store, sessionId: 'dying' });
    const ended = await observer.callEnd('c1');
    expect(ended.changes).toHaveLength(32);
    expect(await interruptedRuns(store)).toEqual([]);
    const report = await observer.restore(interrupted.checkpointId);
    expect(report.failed).toEqual([]);
    expect(report.refused).toEqual([]);
    expect(await listing(project)).toEqual(before);
  }, 60_000);

  it('a call around an unchanged tree writes a baseline of a few hundred bytes and leaves the stat cache alone', async () => {
    const { project, storeDir } = await sandbox();
    await writeTree(project, Object.fromEntries(Array.from({ length: 300 }, (_, i) => [`lib/f${i}.js`, `// ${i}\n`])));
    const observer = await openObserver(project, storeDir);
    await observer.callBegin('warm');
    await observer.callEnd('warm');
    const cacheFile = path.join(storeDir, 'state', 'stat-cache.json');
    const cacheBefore = await fs.stat(cacheFile);
    await observer.callBegin('noop');
    const [name] = await storeBehind(observer.store).listState('call-');
    const doc = (await storeBehind(observer.store).readState(name as string)) as { records: unknown[]; removed: unknown[]; base: { count: number } };
    expect(doc.records).toEqual([]);
    expect(doc.removed).toEqual([]);
    expect(doc.base.count).toBe(300);
    expect(JSON.stringify(doc).length).toBeLessThan(1000);
    const end = await observer.callEnd('noop');
    expect(end.changes).toEqual([]);
    const cacheAfter = await fs.stat(cacheFile);
    expect([cacheAfter.ino, cacheAfter.mtimeMs]).toEqual([cacheBefore.ino, cacheBefore.mtimeMs]);
    expect(await storeBehind(observer.store).listState('call-')).toEqual([]);
    // A changed file rewrites only the small cache head, and not before the call returns (within
    // 200 ms, or at turn end or close): the base stays.
    await fs.writeFile(path.join(project, 'lib/f1.js'), 'changed');
    await observer.callBegin('one');
    await observer.callEnd('one');
    const unsaved = await fs.stat(cacheFile);
    expect([unsaved.ino, unsaved.mtimeMs]).toEqual([cacheBefore.ino, cacheBefore.mtimeMs]);
    await observer.close();
    const head = JSON.parse(await fs.readFile(cacheFile, 'utf8')) as { records: { path: string }[] };
    expect(head.records.map((r) => r.path)).toEqual(['lib/f1.js']);
    expect(await storeBehind(observer.store).listState('pic-')).toHaveLength(1);
  });

  it('saves the stat cache head of a changed picture within 200 ms, with no close', async () => {
    const { project, storeDir } = await sandbox();
    await writeTree(project, Object.fromEntries(Array.from({ length: 40 }, (_, i) => [`lib/f${i}.js`, `// ${i}\n`])));
    // The save timer, faked: a save runs when it fires at 200 ms (its writes are synchronous).
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
    const observer = await openObserver(project, storeDir);
    await observer.callBegin('first');
    await observer.callEnd('first');
    await vi.advanceTimersByTimeAsync(200);
    await fs.writeFile(path.join(project, 'lib/f1.js'), 'changed');
    await observer.callBegin('one');
    await observer.callEnd('one');
    await vi.advanceTimersByTimeAsync(200);
    vi.useRealTimers();
    const saved = (await storeBehind(observer.store).readState('stat-cache')) as { records: { path: string; size: number; mtimeMs: number; ino: number }[] };
    const f1 = saved.records.find((r) => r.path === 'lib/f1.js');
    const disk = await fs.lstat(path.join(project, 'lib/f1.js'));
    expect([f1?.size, f1?.mtimeMs, f1?.ino]).toEqual([disk.size, disk.mtimeMs, disk.ino]);
    await observer.close();
  });

  it('prune keeps the objects the stat cache and an open call baseline name, so a later call still has its pre-images', async () => {
    const { project, storeDir } = await sandbox();
    await writeTree(project, { 'f.txt': 'original content that matters', 'g.txt': 'second original', 'h.txt': 'third original' });
    const observer = await openObserver(project, storeDir);
    const preImageKept = async (store: StoreView, change: { before?: PathState } | undefined, content: string): Promise<void> => {
      expect(change?.before).toMatchObject({ type: 'file', size: content.length });
      if (change?.before?.type !== 'file') throw new Error('expected a file pre-image');
      expect((await store.readObject(change.before.object)).toString()).toBe(content);
    };
    // Pictured (copied) but unchanged by the call: no checkpoint names these objects.
    await observer.callBegin('one');
    await observer.callEnd('one');
    // Open across the prune: only its baseline names what it will need.
    await observer.callBegin('open');
    await observer.store.prune({ graceMs: 0 });
    await fs.writeFile(path.join(project, 'g.txt'), 'changed');
    await preImageKept(observer.store, (await observer.callEnd('open')).changes[0], 'second original');
    // The next call reuses the cached records instead of copying the files again.
    await observer.callBegin('two');
    await fs.writeFile(path.join(project, 'f.txt'), 'clobbered');
    await preImageKept(observer.store, (await observer.callEnd('two')).changes[0], 'original content that matters');
    // The same through the persisted stat cache, in a new observer after another prune.
    await observer.close();
    await observer.store.prune({ graceMs: 0 });
    const again = await openObserver(project, storeDir);
    await again.callBegin('three');
    await fs.writeFile(path.join(project, 'h.txt'), 'clobbered');
    await preImageKept(again.store, (await again.callEnd('three')).changes[0], 'third original');
    await again.close();
  });

  it('drop(sessionId) releases that session\'s checkpoints, snapshots, call baselines and the objects only it used, and nothing of another session', async () => {
    const { project, storeDir } = await sandbox();
    await writeTree(project, { 'shared-a.txt': 'same bytes', 'shared-b.txt': 'same bytes', 'mine.txt': 'only the dropped session had these bytes' });
    const gone = await openObserver(project, storeDir, { sessionId: 'gone' });
    const kept = await openObserver(project, storeDir, { sessionId: 'kept' });
    const ctxGone = { projectRoot: project, observer: gone };
    await gone.beginTurn();
    await writeFile(ctxGone, 'shared-a.txt', 'gone wrote this');
    await writeFile(ctxGone, 'mine.txt', 'gone wrote this too');
    await gone.snapshot({ sessionId: 'gone', scopeId: 'tool', paths: ['shared-a.txt'] });
    await gone.callBegin('left-open');
    const keptTurn = await kept.beginTurn();
    await writeFile({ projectRoot: project, observer: kept }, 'shared-b.txt', 'kept wrote this');
    await kept.close();
    const mineObject = (await gone.turnChanges((await gone.store.list()).find((m) => m.sessionId === 'gone' && m.kind === 'turn')!.id)).changes.find((c) => c.path === 'mine.txt')?.before;
    if (mineObject?.type !== 'file') throw new Error('expected a file pre-image');
    // The bytes of mine.txt are also in the stat cache of the left-open call's picture; the
    // file changes once more so nothing but the dropped session names them.
    await fs.writeFile(path.join(project, 'mine.txt'), 'after the call');
    await gone.callEnd('left-open');
    await gone.callBegin('left-open-2');

    const result = await gone.drop('gone');
    expect(result.removedCheckpoints).toBeGreaterThanOrEqual(2);
    expect((await gone.store.list()).filter((m) => m.sessionId === 'gone')).toEqual([]);
    expect(await gone.listSnapshots('gone')).toEqual([]);
    expect(await storeBehind(gone.store).listState('call-')).toEqual([]);
    await gone.close();
    expect(await gone.store.hasObject(mineObject.object)).toBe(false);
    // The other session's turn still restores, its pre-image shared with the dropped one.
    const again = await openObserver(project, storeDir, { sessionId: 'kept' });
    const report = await again.restore(keptTurn);
    expect(report.failed).toEqual([]);
    expect(await fs.readFile(path.join(project, 'shared-b.txt'), 'utf8')).toBe('same bytes');
    await again.close();
  });

  it('rejects an unknown call, a duplicate call and an unknown side-effect class', async () => {
    const { project, storeDir } = await gitProject();
    const observer = await openObserver(project, storeDir);
    await observer.beginTurn();
    await expect(observer.callEnd('never-began')).rejects.toMatchObject({ code: 'UNKNOWN_CALL' });
    await observer.callBegin('dup');
    await expect(observer.callBegin('dup')).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' });
    await expect(observer.callEnd('dup', { sideEffect: 'teleport' as never })).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' });
    await expect(observer.callBegin('')).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' });
  });

  it('covers nested repositories: their files are pictured, their .git skipped and never renamed', async () => {
    const { project, storeDir } = await gitProject();
    const nested = path.join(project, 'vendor/lib');
    await fs.mkdir(nested, { recursive: true });
    git(nested, 'init', '-q');
    await writeTree(nested, { 'index.js': 'module.exports = 1;\n', '.gitignore': 'dist/\n', 'dist/x.js': 'built' });
    git(nested, 'add', '-A');
    git(nested, 'commit', '-qm', 'nested');
    const gitListingBefore = await listing(path.join(nested, '.git'));
    const before = await listing(project);
    const observer = await openObserver(project, storeDir);
    const boundary = await observer.beginTurn();
    const attribution = await around(observer, 'c', project, 'echo changed > vendor/lib/index.js && echo b > vendor/lib/dist/x.js');
    expect(attribution.changes.map((c) => c.path)).toEqual(['vendor/lib/index.js']);
    await observer.restore(boundary);
    const after = await listing(project);
    expect({ ...after, 'vendor/lib/dist/x.js': before['vendor/lib/dist/x.js'] }).toEqual(before);
    expect(await listing(path.join(nested, '.git'))).toEqual(gitListingBefore);
  });
});

describe('the exit code of a call', () => {
  it('is recorded with the call when given, and one that is not an integer is refused', async () => {
    const { project, storeDir } = await sandbox();
    await writeTree(project, { 'a.txt': 'a' });
    const observer = await openObserver(project, storeDir);
    const begin = await observer.callBegin('c1');
    await fs.writeFile(path.join(project, 'a.txt'), 'b');
    await expect(observer.callEnd('c1', { exitCode: 1.5 })).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' });
    await observer.callEnd('c1', { exitCode: 7 });
    const call = (await observer.store.manifest(begin.checkpointId)).calls.find((c) => c.callId === 'c1');
    expect(call).toMatchObject({ exitCode: 7, sideEffect: 'filesystem' });
    await observer.close();
  });

  it('keeps the notes a call ends with (what it did beyond files) and refuses malformed ones before recording anything', async () => {
    const { project, storeDir } = await sandbox();
    await writeTree(project, { 'a.txt': 'a' });
    const observer = await openObserver(project, storeDir);
    const begin = await observer.callBegin('c1');
    await fs.writeFile(path.join(project, 'a.txt'), 'b');
    for (const notes of [[''], ['x'.repeat(501)], Array.from({ length: 21 }, () => 'n'), 'HEAD moved' as unknown as string[], [7 as unknown as string]]) {
      await expect(observer.callEnd('c1', { notes })).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' });
    }
    await observer.callEnd('c1', { notes: ['HEAD moved: main 1a2b3c4 → detached 1a2b3c4'] });
    const call = (await observer.store.manifest(begin.checkpointId)).calls.find((c) => c.callId === 'c1');
    expect(call?.notes).toEqual(['HEAD moved: main 1a2b3c4 → detached 1a2b3c4']);
    await observer.close();
  });
});


import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs/promises';
import * as path from 'node:path';
import { describe, expect, it } from 'vitest';
import { CheckpointStore } from '../../src/store/store.js';
import { CheckpointObserver } from '../../src/session/observer.js';
import { writeFile } from '../../src/tools/reference-tools.js';
import { listing, openObserver, sandbox, writeTree } from './helpers.js';

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

  it('rejects an unknown call, a duplicate call and an unknown side-effect class', async () => {
    const { project, storeDir } = await gitProject();
    const observer = await openObserver(project, storeDir);
    await observer.beginTurn();
    await expect(observer.callEnd('never-began')).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' });
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

describe('tool-call snapshots', () => {
  it('captures explicit paths now and restores them, deleting paths seen as absent', async () => {
    const { project, storeDir } = await sandbox();
    await writeTree(project, { 'lib.rs': 'fn main() {}', 'other.rs': 'o' });
    const observer = await openObserver(project, storeDir);
    await observer.beginTurn();
    const scope = { sessionId: 's1', scopeId: 'tc_42' };
    const info = await observer.snapshot({ ...scope, paths: ['lib.rs', 'new.rs', 'other.rs'] });
    expect(info.paths).toEqual(['lib.rs', 'new.rs', 'other.rs']);
    const ctx = { projectRoot: project, observer };
    await observer.withToolCall(scope, async () => {
      await writeFile(ctx, 'lib.rs', 'changed');
      await writeFile(ctx, 'new.rs', 'created');
    });
    // A change the observer never saw has no post-write record: the guard refuses it.
    await fs.writeFile(path.join(project, 'other.rs'), 'edited elsewhere');
    const report = await observer.restoreSnapshot(scope);
    expect(report.restored.map((e) => [e.path, e.action])).toEqual([
      ['lib.rs', 'restore'],
      ['new.rs', 'delete'],
    ]);
    expect(report.refused.map((e) => e.path)).toEqual(['other.rs']);
    expect(await fs.readFile(path.join(project, 'lib.rs'), 'utf8')).toBe('fn main() {}');
    await expect(fs.access(path.join(project, 'new.rs'))).rejects.toThrow();
    expect(await fs.readFile(path.join(project, 'other.rs'), 'utf8')).toBe('edited elsewhere');
  });

  it('auto-captures writes inside the tool call context, without mixing two concurrent calls', async () => {
    const { project, storeDir } = await sandbox();
    await writeTree(project, { 'a.txt': 'a0', 'b.txt': 'b0' });
    const observer = await openObserver(project, storeDir);
    await observer.beginTurn();
    await observer.snapshot({ sessionId: 's1', scopeId: 'call-a' });
    await observer.snapshot({ sessionId: 's1', scopeId: 'call-b' });
    const ctx = { projectRoot: project, observer };
    const tick = () => new Promise((r) => setTimeout(r, 5));
    await Promise.all([
      observer.withToolCall({ sessionId: 's1', scopeId: 'call-a' }, async () => {
        await tick();
        await writeFile(ctx, 'a.txt', 'a1');
        await tick();
        await writeFile(ctx, 'new-a.txt', 'na');
      }),
      observer.withToolCall({ sessionId: 's1', scopeId: 'call-b' }, async () => {
        await writeFile(ctx, 'b.txt', 'b1');
        await tick();
        await tick();
      }),
    ]);
    const list = await observer.listSnapshots('s1');
    expect(list.map((s) => [s.scopeId, s.paths])).toEqual([
      ['call-a', ['a.txt', 'new-a.txt']],
      ['call-b', ['b.txt']],
    ]);
    const report = await observer.restoreSnapshot({ sessionId: 's1', scopeId: 'call-a' });
    expect(report.failed).toEqual([]);
    expect(await fs.readFile(path.join(project, 'a.txt'), 'utf8')).toBe('a0');
    await expect(fs.access(path.join(project, 'new-a.txt'))).rejects.toThrow();
    expect(await fs.readFile(path.join(project, 'b.txt'), 'utf8')).toBe('b1');
    await observer.dropSnapshot({ sessionId: 's1', scopeId: 'call-b' });
    expect((await observer.listSnapshots('s1')).map((s) => s.scopeId)).toEqual(['call-a']);
  });

  it('evicts the oldest snapshots beyond the per-session byte cap', async () => {
    const { project, storeDir } = await sandbox();
    await writeTree(project, { 'one.bin': Buffer.alloc(4000, 1), 'two.bin': Buffer.alloc(4000, 2), 'three.bin': Buffer.alloc(4000, 3) });
    const observer = await openObserver(project, storeDir, { snapshotCapBytes: 9000 });
    for (const [scopeId, file] of [['t1', 'one.bin'], ['t2', 'two.bin'], ['t3', 'three.bin']] as const) {
      await observer.snapshot({ sessionId: 's', scopeId, paths: [file] });
      await observer.withToolCall({ sessionId: 's', scopeId }, async () => undefined);
    }
    expect((await observer.listSnapshots('s')).map((s) => s.scopeId)).toEqual(['t2', 't3']);
  });
});

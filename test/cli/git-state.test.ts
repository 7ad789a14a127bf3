import { execFileSync } from 'node:child_process';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import * as path from 'node:path';
import { describe, expect, it } from 'vitest';
import { cliRepo } from './harness.js';
import { gitStateNotes, parseIndex, readGitState } from '../../src/cli/git-state.js';
import { gitRepoOf } from '../../src/cli/git.js';
import { keptIndexOf } from '../../src/capture/tracked-files.js';
import { withSeed } from '../helpers/seed.js';
import { tempFolder } from '../helpers/temp.js';

// turnback restores files, never .git: a turn that moved HEAD, switched branch or staged files
// says so in one line each, at the turn's end, in show, and in the undo preview.

describe("git's own state in the turn-end list and the undo preview", () => {
  it('a switch to a detached HEAD, a commit, and staged files are each said in one line', async () => {
    const repo = await cliRepo({ 'a.txt': 'a\n', 'b.txt': 'b\n' });
    const branch = repo.git('symbolic-ref', '--short', 'HEAD').trim();
    const first = repo.git('rev-parse', 'HEAD').trim().slice(0, 7);

    const detach = repo.tb(['run', '--', 'git', 'checkout', '-q', '--detach']);
    expect(detach.code).toBe(0);
    expect(detach.stderr).toContain(`note: HEAD moved: ${branch} ${first} → detached ${first} (turnback restores files, not HEAD: git switch ${branch})`);
    repo.git('checkout', '-q', branch);

    const staged = repo.tb(['run', '--', 'sh', '-c', 'echo x > a.txt; echo y > b.txt; echo z > c.txt; git add a.txt b.txt c.txt']);
    expect(staged.stderr).toContain('note: index: 3 files staged during this turn (turnback restores files, not the index)');
    expect(staged.stderr).not.toContain('HEAD moved');
    const stagedId = repo.newestId();

    const commit = repo.tb(['run', '--', 'git', '-c', 'user.email=t@example.com', '-c', 'user.name=t', 'commit', '-qm', 'two']);
    const second = repo.git('rev-parse', 'HEAD').trim().slice(0, 7);
    expect(commit.stderr).toContain(`note: HEAD moved: ${branch} ${first} → ${branch} ${second} (turnback restores files, not HEAD: git reset --soft ${first})`);

    // Kept with the pictures: show and the undo preview say it later, from another process.
    expect(repo.tb(['show', stagedId]).stdout).toContain('note: index: 3 files staged during this turn');
    const preview = repo.tb(['undo', stagedId, '--dry-run']);
    expect(preview.stdout).toContain('note: index: 3 files staged during this turn');
    expect(preview.stdout).toContain(`note: HEAD moved: ${branch} ${first} → ${branch} ${second}`);
    const json = JSON.parse(repo.tb(['undo', stagedId, '--dry-run', '--json']).stdout) as { previews: { notes: string[] }[] };
    expect(json.previews[0]?.notes).toHaveLength(2);
  });

  it('git status (which refreshes the index) and a run outside any repository say nothing about git', async () => {
    const repo = await cliRepo({ 'a.txt': 'a\n' });
    await writeFile(path.join(repo.proj, 'a.txt'), 'changed\n');
    const status = repo.tb(['run', '--', 'git', 'status', '--porcelain']);
    expect(status.stderr).not.toContain('index:');
    expect(status.stderr).not.toContain('HEAD moved');

    const plain = await tempFolder('turnback-nogit-');
    expect(await readGitState(await gitRepoOf(plain))).toBeUndefined();
    const run = repo.tb(['run', '--project', plain, '--', 'sh', '-c', 'echo x > f.txt']);
    expect(run.code).toBe(0);
    expect(run.stderr).not.toContain('HEAD');
  });
});

describe('readGitState reads HEAD from the files git keeps', () => {
  it('a loose ref, a packed ref, a detached HEAD, a worktree, and a branch with no commit yet', async () => {
    const repo = await cliRepo({ 'a.txt': 'a\n' });
    const head = repo.git('rev-parse', 'HEAD').trim();
    const branch = repo.git('symbolic-ref', '--short', 'HEAD').trim();
    expect(await readGitState(await gitRepoOf(repo.proj))).toMatchObject({ branch, commit: head });
    repo.git('pack-refs', '--all');
    expect(await readGitState(await gitRepoOf(repo.proj))).toMatchObject({ branch, commit: head });
    const worktree = path.join(path.dirname(repo.proj), 'wt');
    repo.git('worktree', 'add', '-q', '-b', 'side', worktree);
    expect(await readGitState(await gitRepoOf(worktree))).toMatchObject({ branch: 'side', commit: head });
    repo.git('checkout', '-q', '--detach');
    expect(await readGitState(await gitRepoOf(repo.proj))).toMatchObject({ branch: undefined, commit: head });

    const empty = await tempFolder('turnback-unborn-');
    execFileSync('git', ['init', '-q', '-b', 'trunk'], { cwd: empty });
    expect(await readGitState(await gitRepoOf(empty))).toMatchObject({ branch: 'trunk', commit: undefined, index: { count: 0 } });
  });

  it('read again after a command: the same reading while git changed nothing, a new one after anything git does', async () => {
    const repo = await cliRepo({ 'a.txt': 'a\n', 'b.txt': 'b\n' });
    const gitRepo = await gitRepoOf(repo.proj);
    const commit = (): void => void repo.git('-c', 'user.email=t@example.com', '-c', 'user.name=t', 'commit', '-qm', 'next');
    let reading = await readGitState(gitRepo);
    expect(await readGitState(gitRepo, reading)).toBe(reading);
    // Each step changes one thing git keeps: the index, the loose ref, HEAD, the packed refs.
    const steps: [string, () => void][] = [
      ['stage a file', () => void (execFileSync('sh', ['-c', 'echo more >> a.txt'], { cwd: repo.proj }), repo.git('add', 'a.txt'))],
      ['commit', commit],
      ['switch branch', () => void repo.git('checkout', '-q', '-b', 'side')],
      ['detach', () => void repo.git('checkout', '-q', '--detach')],
      ['back on a branch', () => void repo.git('checkout', '-q', 'side')],
      ['pack the refs, then move the packed one', () => void (repo.git('pack-refs', '--all'), repo.git('update-ref', `refs/heads/side`, repo.git('rev-parse', 'HEAD~1').trim()))],
    ];
    for (const [step, act] of steps) {
      act();
      const again = await readGitState(gitRepo, reading);
      const fresh = await readGitState(gitRepo);
      expect(again, step).not.toBe(reading);
      expect({ branch: again?.branch, commit: again?.commit, index: again?.index?.paths, objects: again?.index?.objects.toString('hex') }, step).toEqual({ branch: fresh?.branch, commit: fresh?.commit, index: fresh?.index?.paths, objects: fresh?.index?.objects.toString('hex') });
      expect(await readGitState(gitRepo, again), `${step}, then nothing`).toBe(again);
      reading = again;
    }
  });
});

describe('a reading holds the index as the capture layer keeps it', () => {
  it("shares the work tree's kept table (no copy of the index file's bytes), and a staged file still counts once", async () => {
    const repo = await cliRepo({ 'a.txt': 'a\n', 'b.txt': 'b\n' });
    const gitRepo = await gitRepoOf(repo.proj);
    const before = await readGitState(gitRepo);
    expect(before?.index).toBeDefined();
    expect(before?.index).toBe(keptIndexOf(repo.proj)?.entries);
    // Another reading of the same index file: the same table, so nothing to compare.
    const same = await readGitState(gitRepo);
    expect(same?.index).toBe(before?.index);
    expect(gitStateNotes(before, same)).toEqual([]);
    execFileSync('sh', ['-c', 'echo more >> a.txt'], { cwd: repo.proj });
    repo.git('add', 'a.txt');
    const after = await readGitState(gitRepo, before);
    expect(after?.index).not.toBe(before?.index);
    expect(gitStateNotes(before, after)).toEqual(['index: 1 file staged during this turn (turnback restores files, not the index)']);
    // Rewritten with the same entries (git refreshing its stat data): nothing staged.
    repo.git('update-index', '--really-refresh');
    const refreshed = await readGitState(gitRepo, after);
    expect(gitStateNotes(after, refreshed)).toEqual([]);
  });
});

describe('parseIndex reads what git ls-files -s lists, in index versions 2, 3 and 4', () => {
  it('seeded random trees, intent-to-add entries (version 3) and prefix-compressed names (version 4)', async () => {
    await withSeed(2024, async (random) => {
    for (const version of [2, 3, 4]) {
      const dir = await tempFolder('turnback-index-');
      const git = (...args: string[]): string => execFileSync('git', args, { cwd: dir, encoding: 'utf8' });
      git('init', '-q');
      const count = random.int(5, 60);
      for (let i = 0; i < count; i++) {
        const depth = random.int(0, 3);
        const parts = Array.from({ length: depth }, () => `d${random.int(0, 4)}`);
        const name = path.join(dir, ...parts, `file-${i}${'x'.repeat(random.int(0, 20))}.txt`);
        await mkdir(path.dirname(name), { recursive: true });
        await writeFile(name, `content ${random.int(0, 1000)}\n`);
      }
      git('add', '-A');
      if (version === 3) {
        await writeFile(path.join(dir, 'later.txt'), 'later\n');
        git('add', '-N', 'later.txt');
      }
      git('update-index', '--index-version', String(version));
      const parsed = parseIndex(await readFile(path.join(dir, '.git', 'index')));
      expect(parsed).toBeDefined();
      const listed = git('ls-files', '-s').split('\n').filter((l) => l.length > 0);
      expect(parsed?.size).toBe(listed.length);
      for (const line of listed) {
        const [meta, name] = line.split('\t') as [string, string];
        const [mode, object, stage] = meta.split(' ') as [string, string, string];
        expect(parsed?.get(`${name}\u0000${stage}`)).toBe(`${mode} ${object} ${stage}`);
      }
    }
    });
  });

  it('refuses what it does not recognise instead of misreading it', () => {
    expect(parseIndex(Buffer.from('not an index at all'))).toBeUndefined();
    const header = Buffer.alloc(12);
    header.write('DIRC', 0, 'latin1');
    header.writeUInt32BE(9, 4);
    expect(parseIndex(header)).toBeUndefined();
    header.writeUInt32BE(2, 4);
    header.writeUInt32BE(5, 8);
    expect(parseIndex(header)).toBeUndefined();
    expect(gitStateNotes(undefined, { branch: 'main', commit: 'a', index: undefined, hashBytes: 20 })).toEqual([]);
  });
});

import { mkdir, readFile, writeFile } from 'node:fs/promises';
import * as path from 'node:path';
import { describe, expect, it } from 'vitest';
import { cliRepo, type CliRepo } from './harness.js';

// A clean tracked file past the copy budget is recorded by its git blob id (read-only: nothing
// is written into .git), restored from git with its bytes checked against the id, and copied into
// the store outside any picture — by the server while idle, or by `turnback prune` — after which
// it outlives a history rewrite and `git gc`; a blob git has lost first is reported, never written wrong.

function tracked(count: number): Record<string, string> {
  const files: Record<string, string> = {};
  for (let i = 0; i < count; i++) files[`src/f${i}.txt`] = `file ${i}\n${'x'.repeat(i * 7)}\n`;
  return files;
}

const rests = /coverage: \d+ files? pictured \((\d+) pre-images? rests? only on git's objects/;

/** What `status` says still rests only on git (0 when it says nothing of it). */
const restingIn = (status: string): number => Number(rests.exec(status)?.[1] ?? 0);

/** The blob ids of `files`, as git names them. */
const blobIds = (repo: { git: (...args: string[]) => string }, files: Record<string, string>): string[] => Object.keys(files).map((name) => repo.git('rev-parse', `HEAD:${name}`).trim());

/** Rewrites history so that no commit holds src/ any more and collects git's garbage: the blobs are gone from git. */
function forgetSrc(repo: { git: (...args: string[]) => string }): void {
  repo.git('rm', '-r', '-q', '--cached', '--ignore-unmatch', 'src');
  repo.git('commit', '-q', '--amend', '--allow-empty', '-m', 'without src');
  repo.git('reflog', 'expire', '--expire=now', '--all');
  repo.git('gc', '-q', '--prune=now');
}

const gitHas = (repo: { git: (...args: string[]) => string }, id: string): boolean => {
  try {
    repo.git('cat-file', '-e', id);
    return true;
  } catch {
    return false;
  }
};

/** Rewrites history so git drops the files' blobs (gc), then undoes `removal`: every file must come back from the store's copies. */
async function undoAfterGitForgot(repo: CliRepo, files: Record<string, string>, removal: string): Promise<void> {
  const ids = blobIds(repo, files);
  forgetSrc(repo);
  for (const id of ids) expect(gitHas(repo, id)).toBe(false);
  const undo = repo.tb(['undo', removal, '--yes']);
  expect(undo.code, undo.stdout + undo.stderr).toBe(0);
  for (const [name, text] of Object.entries(files)) expect(await readFile(path.join(repo.proj, name), 'utf8')).toBe(text);
}

describe("clean tracked files past the copy budget rest on git's objects", () => {
  it('a first picture over the budget copies none of them; an rm of every file comes back byte for byte from git; status counts them; verify is clean', async () => {
    const files = tracked(8);
    const repo = await cliRepo(files);
    await writeFile(path.join(repo.proj, 'turnback.toml'), '[checkpoints]\nmax_picture_files = 3\n');
    expect(repo.tb(['run', '--', 'sh', '-c', 'rm -r src']).code).toBe(0);
    const removal = repo.newestId();
    const status = repo.tb(['status']).stdout;
    const onGit = Number(rests.exec(status)?.[1]);
    // The first picture is a stat sweep and an index read: every tracked file rests on git (a
    // file copied in would not be counted), and the budget went to the one untracked file. (The
    // first command ran in-process, so no server noted the project for its idle copies.)
    expect(onGit).toBe(8);
    expect(repo.tb(['run', '--', 'true']).stderr).not.toContain('cut short');
    expect(repo.tb(['verify']).code).toBe(0);

    // The newest picture (`run -- true`) changed nothing: a bare undo says so (issue #26), so the
    // removal is undone by its id.
    const undo = repo.tb(['undo', removal, '--yes']);
    expect(undo.code, undo.stdout + undo.stderr).toBe(0);
    for (const [name, text] of Object.entries(files)) expect(await readFile(path.join(repo.proj, name), 'utf8')).toBe(text);
    expect(repo.git('status', '--porcelain', '--', 'src')).toBe('');
  });

  it('a served project gets its resting pre-images copied in while the server is idle; then a history rewrite and gc --prune=now lose nothing', async () => {
    const files = tracked(8);
    const repo = await cliRepo(files);
    await writeFile(path.join(repo.proj, 'turnback.toml'), '[checkpoints]\nmax_picture_files = 3\n');
    // Every command from here is served (the server listens once `start` returns).
    expect(repo.tb(['server', 'start']).code).toBe(0);
    expect(repo.tb(['run', '--', 'sh', '-c', 'rm -r src']).code).toBe(0);
    const removal = repo.newestId();
    // Polled until the idle copies are done: each `status` is itself a command, which the copy
    // yields to, and the next idle moment takes it up again. The deadline is only a guard.
    const guard = Date.now() + 60_000;
    let status = repo.tb(['status']).stdout;
    while (restingIn(status) > 0 && Date.now() < guard) status = repo.tb(['status']).stdout;
    expect(status).toMatch(/coverage: \d+ files? pictured; /);
    expect(restingIn(status)).toBe(0);

    await undoAfterGitForgot(repo, files, removal);
    expect(repo.tb(['verify']).code).toBe(0);
  });

  it('without the server, turnback prune copies them in; later pictures copy nothing of them; the checkpoint outlives gc', async () => {
    const files = tracked(8);
    const repo = await cliRepo(files);
    repo.env.TURNBACK_SERVER = 'off';
    await writeFile(path.join(repo.proj, 'turnback.toml'), '[checkpoints]\nmax_picture_files = 3\n');
    expect(repo.tb(['run', '--', 'true']).code).toBe(0);
    expect(repo.tb(['run', '--', 'sh', '-c', 'rm -r src']).code).toBe(0);
    const removal = repo.newestId();
    expect(repo.tb(['run', '--', 'true']).code).toBe(0);
    // No picture took them in: they still rest on git.
    expect(restingIn(repo.tb(['status']).stdout)).toBe(8);
    const prune = repo.tb(['prune']);
    expect(prune.code, prune.stderr).toBe(0);
    expect(prune.stdout).toMatch(/copied 8 pre-images resting on git's objects into the store/);
    expect(restingIn(repo.tb(['status']).stdout)).toBe(0);

    await undoAfterGitForgot(repo, files, removal);
  });

  it('a file git\'s index lets go of (untracked, history rewritten, gc) is copied by the next picture, not left resting on a blob git may drop', async () => {
    const files = tracked(8);
    const repo = await cliRepo(files);
    repo.env.TURNBACK_SERVER = 'off';
    await writeFile(path.join(repo.proj, 'turnback.toml'), '[checkpoints]\nmax_picture_files = 3\n');
    expect(repo.tb(['run', '--', 'true']).code).toBe(0);
    expect(restingIn(repo.tb(['status']).stdout)).toBe(8);
    const ids = blobIds(repo, files);
    // The files stay on disk untouched; only git forgets them.
    forgetSrc(repo);
    for (const id of ids) expect(gitHas(repo, id)).toBe(false);
    const run = repo.tb(['run', '--', 'true']);
    expect(run.code, run.stderr).toBe(0);
    expect(restingIn(repo.tb(['status']).stdout)).toBe(0);
    expect(repo.tb(['run', '--', 'sh', '-c', 'rm -r src']).code).toBe(0);
    const undo = repo.tb(['undo', '--yes']);
    expect(undo.code, undo.stdout + undo.stderr).toBe(0);
    for (const [name, text] of Object.entries(files)) expect(await readFile(path.join(repo.proj, name), 'utf8')).toBe(text);
  });

  it('files resting on git rewritten with their very bytes (new inode and mtime) are not read as changed; one rewritten otherwise is', async () => {
    const files = tracked(8);
    const repo = await cliRepo(files);
    await writeFile(path.join(repo.proj, 'turnback.toml'), '[checkpoints]\nmax_picture_files = 1\n');
    expect(repo.tb(['run', '--', 'true']).code).toBe(0);
    expect(Number(rests.exec(repo.tb(['status']).stdout)?.[1])).toBeGreaterThanOrEqual(6);
    // Every file rewritten whole with the same bytes through a new inode, one of them with other bytes.
    const rewrite = 'for f in src/*.txt; do cp "$f" "$f.new" && mv "$f.new" "$f"; done; echo changed >> src/f7.txt';
    const run = repo.tb(['run', '--', 'sh', '-c', rewrite]);
    expect(run.code).toBe(0);
    const listed = (run.stdout + run.stderr).split('\n').filter((line) => /src\/f\d\.txt/.test(line));
    expect(listed.join('\n')).toMatch(/src\/f7\.txt/);
    // At most the one file the budget let a picture copy in meanwhile (its copy must be read again,
    // past the budget of one); the files still resting on git are proven unchanged by their blob.
    expect(listed.filter((line) => /src\/f[0-6]\.txt/.test(line)).length).toBeLessThanOrEqual(1);
  });

  it('a blob git has garbage-collected since is reported and left; the rest come back', async () => {
    const files = tracked(8);
    const repo = await cliRepo(files);
    await writeFile(path.join(repo.proj, 'turnback.toml'), '[checkpoints]\nmax_picture_files = 1\n');
    expect(repo.tb(['run', '--', 'sh', '-c', 'rm -r src']).code).toBe(0);
    // The commit that held the files is replaced and every path to it expired: git drops its blobs.
    repo.git('rm', '-r', '-q', '--cached', 'src');
    repo.git('commit', '-q', '--amend', '--allow-empty', '-m', 'without src');
    repo.git('reflog', 'expire', '--expire=now', '--all');
    repo.git('gc', '-q', '--prune=now');
    const undo = repo.tb(['undo', '--yes']);
    expect(undo.stdout).toMatch(/its stored copy is missing or damaged/);
    const back = Object.keys(files).filter((name) => undo.stdout.includes(`recreated   ${name}`));
    for (const name of back) expect(await readFile(path.join(repo.proj, name), 'utf8')).toBe(files[name]);
    expect(back.length).toBeLessThan(Object.keys(files).length);
  });

  it('files git does not hold get the copy budget first; every clean tracked file rests on git instead of going without a copy', async () => {
    const files = tracked(8);
    const repo = await cliRepo(files);
    const untracked: Record<string, string> = { 'notes/a.md': 'a\n', 'notes/b.md': 'b\n', 'notes/c.md': 'c\n' };
    for (const [name, text] of Object.entries(untracked)) {
      await mkdir(path.dirname(path.join(repo.proj, name)), { recursive: true });
      await writeFile(path.join(repo.proj, name), text);
    }
    // Three untracked notes and turnback.toml itself: exactly the budget.
    await writeFile(path.join(repo.proj, 'turnback.toml'), '[checkpoints]\nmax_picture_files = 4\n');
    const run = repo.tb(['run', '--', 'sh', '-c', 'rm -r src notes']);
    expect(run.code).toBe(0);
    expect(run.stderr).not.toContain('cut short');
    expect(Number(rests.exec(repo.tb(['status']).stdout)?.[1])).toBe(8);
    expect(repo.tb(['undo', '--yes']).code).toBe(0);
    for (const [name, text] of Object.entries({ ...files, ...untracked })) expect(await readFile(path.join(repo.proj, name), 'utf8')).toBe(text);
  });
});

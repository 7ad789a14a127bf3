import { describe, expect, it } from 'vitest';
import { askGit } from '../../src/cli/git.js';
import { cliRepo } from './harness.js';

// Issue #12, "Git's own state" and "Notes in words": git is asked about every deleted or emptied
// file in one call, a file in HEAD is never flagged `not in git`, and the mass-deletion flag says
// how many files were deleted. Real git, real repositories.

describe('what git holds, asked once', () => {
  it('answers for 300 deleted files at once: tracked ones (in HEAD or only in the index) are in git, the rest not', async () => {
    const files = Object.fromEntries(Array.from({ length: 300 }, (_, i) => [`d/f${i}.txt`, `${i}\n`]));
    const repo = await cliRepo(files);
    // Staged but never committed: in the index, not in HEAD.
    const { writeFile } = await import('node:fs/promises');
    await writeFile(`${repo.proj}/staged.txt`, 'staged\n');
    repo.git('add', 'staged.txt');
    const asked = [...Object.keys(files), 'staged.txt', 'never-tracked.txt', 'a name with spaces.txt'];
    const answer = await askGit(repo.proj, asked);
    expect([...answer.notInGit].sort()).toEqual(['a name with spaces.txt', 'never-tracked.txt']);
    expect(answer.unchecked.size).toBe(0);
  });

  it('a file removed from the index but still in HEAD is in git; outside a repository nothing is', async () => {
    const repo = await cliRepo({ 'kept.txt': 'k\n' });
    repo.git('rm', '-q', '--cached', 'kept.txt');
    expect((await askGit(repo.proj, ['kept.txt'])).notInGit.size).toBe(0);
    const { tempFolder } = await import('../helpers/temp.js');
    const bare = await tempFolder('turnback-no-git-');
    expect([...(await askGit(bare, ['x.txt'])).notInGit]).toEqual(['x.txt']);
  });

  it('a mass deletion says how many files went, in words, and lists no "not checked against git" note', async () => {
    const files = Object.fromEntries(Array.from({ length: 130 }, (_, i) => [`docs/n${i}.md`, `${i}\n`]));
    const repo = await cliRepo({ ...files, 'keep.txt': 'k\n' });
    const run = repo.tb(['run', '--', 'rm', '-rf', 'docs']);
    expect(run.code).toBe(0);
    expect(run.stderr).toContain('130 files deleted');
    expect(run.stderr).not.toContain('20+');
    expect(run.stderr).not.toContain('not checked against git');
    expect(run.stderr).not.toContain('not in git');
  });
});

import { writeFile } from 'node:fs/promises';
import * as path from 'node:path';
import { describe, expect, it } from 'vitest';
import { cliRepo } from './harness.js';

// The copy budget governs only what git holds (issue #27): files whose bytes exist nowhere else
// are copied past it, and run says so before the command starts.

describe('a picture past its copy budget', () => {
  it('run says before the command starts that untracked files were copied past the budget; the checkpoint is whole; undo brings them back', async () => {
    const files: Record<string, string> = {};
    for (let i = 0; i < 8; i++) files[`f${i}.txt`] = `${i}\n`;
    const repo = await cliRepo(files);
    // Untracked files: only these have no other copy; the tracked ones rest on git past the budget.
    for (let i = 0; i < 8; i++) await writeFile(path.join(repo.proj, `u${i}.txt`), `u${i}\n`);
    await writeFile(path.join(repo.proj, 'turnback.toml'), '[checkpoints]\nmax_picture_files = 3\n');
    const run = repo.tb(['run', '--', 'sh', '-c', 'echo COMMAND-STARTED >&2; rm u*.txt']);
    expect(run.code).toBe(0);
    const notice = run.stderr.indexOf("turnback: 6 files git does not hold copied past the copy budget (3 files): they have no other copy");
    expect(notice, run.stderr).toBeGreaterThanOrEqual(0);
    expect(notice).toBeLessThan(run.stderr.indexOf('COMMAND-STARTED'));
    expect(run.stderr).not.toContain('cut short');
    expect(run.stderr).not.toContain('no copy');

    expect(repo.tb(['status']).stdout).not.toContain('cut short');
    const json = JSON.parse(repo.tb(['status', '--json']).stdout) as { last: { cutShort: string[]; state: string } };
    expect(json.last.cutShort).toEqual([]);
    expect(json.last.state).toBe('complete');
    expect(repo.tb(['undo', '--yes']).code).toBe(0);
    expect(repo.git('status', '--porcelain')).toContain('?? u7.txt');
  });
});

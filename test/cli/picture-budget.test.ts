import { writeFile } from 'node:fs/promises';
import * as path from 'node:path';
import { describe, expect, it } from 'vitest';
import { cliRepo } from './harness.js';

// A picture that hits its budget says so before the command runs, and status keeps saying it.

describe('a picture cut short by its budget', () => {
  it('run says so on stderr before the command starts; the checkpoint keeps the gap; status shows it', async () => {
    const files: Record<string, string> = {};
    for (let i = 0; i < 8; i++) files[`f${i}.txt`] = `${i}\n`;
    const repo = await cliRepo(files);
    // Untracked files: only these count against the budget once tracked files rest on git.
    for (let i = 0; i < 8; i++) await writeFile(path.join(repo.proj, `u${i}.txt`), `u${i}\n`);
    await writeFile(path.join(repo.proj, 'turnback.toml'), '[checkpoints]\nmax_picture_files = 3\n');
    const run = repo.tb(['run', '--', 'sh', '-c', 'echo COMMAND-STARTED >&2']);
    expect(run.code).toBe(0);
    const notice = run.stderr.indexOf('turnback: ⚠ the picture before the command is cut short: copy budget reached (3 files)');
    expect(notice).toBeGreaterThanOrEqual(0);
    expect(notice).toBeLessThan(run.stderr.indexOf('COMMAND-STARTED'));
    expect(run.stderr).toMatch(/\d+ files? not copied; a later picture copies them/);

    const status = repo.tb(['status']);
    expect(status.stdout).toMatch(/⚠ last picture cut short: .*not copied/);
    const json = JSON.parse(repo.tb(['status', '--json']).stdout) as { last: { cutShort: string[]; state: string } };
    expect(json.last.cutShort).toHaveLength(1);
    // A finished run whose picture was partial is listed as such, never hidden as a killed one.
    expect(json.last.state).toBe('partial');
    expect(repo.tb(['list']).stdout).toMatch(/before sh -c .*exit 0 · .*\(partial: some files had no copy/);
  });
});

import { readFile, writeFile, mkdir } from 'node:fs/promises';
import * as path from 'node:path';
import { describe, expect, it } from 'vitest';
import { cliRepo } from './harness.js';

// What is not covered is said up front: status lists the categories with counts, and
// copy_credentials = true copies credential files into the owner-only store for those who want it.

describe('coverage said up front', () => {
  it('status counts ignored entries, credential files and files over the size limit of the last picture', async () => {
    const repo = await cliRepo({ '.gitignore': 'dist/\n*.log\n', 'src/a.js': 'a\n' });
    await mkdir(path.join(repo.proj, 'dist'));
    await writeFile(path.join(repo.proj, 'dist', 'bundle.js'), 'b\n');
    await writeFile(path.join(repo.proj, 'debug.log'), 'l\n');
    await writeFile(path.join(repo.proj, '.env'), 'SECRET=1\n');
    await writeFile(path.join(repo.proj, 'big.bin'), Buffer.alloc(2 * 1024 * 1024, 1));
    await writeFile(path.join(repo.proj, 'turnback.toml'), '[checkpoints]\nmax_file_mib = 1\n');
    expect(repo.tb(['run', '--', 'true']).code).toBe(0);
    const status = repo.tb(['status']);
    expect(status.stdout).toContain(
      'coverage: 5 files pictured; left out: 2 ignored (.gitignore, skip; files git tracks are covered all the same), 1 credential file recorded without a copy (copy_credentials = true copies them), 1 over 1 MiB recorded without a copy (max_file_mib)',
    );
    const json = JSON.parse(repo.tb(['status', '--json']).stdout) as { coverage: Record<string, number> };
    expect(json.coverage).toEqual({ files: 5, ignored: 2, credential: 1, tooLarge: 1, onGit: 0 });
    expect(repo.tb(['config']).stdout).toMatch(/copy_credentials = false +default/);
  });

  it('copy_credentials = true copies a .env file, so undo brings it back; without it undo leaves it and says why', async () => {
    const repo = await cliRepo({ 'a.txt': 'a\n' });
    await writeFile(path.join(repo.proj, '.env'), 'SECRET=1\n');
    repo.tb(['run', '--', 'sh', '-c', 'echo SECRET=2 > .env']);
    const without = repo.tb(['undo', '--yes']);
    expect(without.stdout).toMatch(/\.env +no copy \(credential file\)/);
    expect(await readFile(path.join(repo.proj, '.env'), 'utf8')).toBe('SECRET=2\n');

    await writeFile(path.join(repo.proj, 'turnback.toml'), '[checkpoints]\ncopy_credentials = true\n');
    repo.tb(['run', '--', 'sh', '-c', 'echo SECRET=3 > .env']);
    expect(repo.tb(['status']).stdout).not.toContain('credential file');
    const undo = repo.tb(['undo', '--yes']);
    expect(undo.code).toBe(0);
    expect(await readFile(path.join(repo.proj, '.env'), 'utf8')).toBe('SECRET=2\n');

    await writeFile(path.join(repo.proj, 'turnback.toml'), '[checkpoints]\ncopy_credentials = "yes"\n');
    const bad = repo.tb(['run', '--', 'true']);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain('copy_credentials must be true or false');
  });
});

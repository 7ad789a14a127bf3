import { describe, expect, it } from 'vitest';
import { cliRepo } from './harness.js';

// Issue #12: `status` and `verify` agree on the store's size, and `prune` says what its grace
// period kept. Through the built binary in a real git repository.

describe('store figures a person can trust', () => {
  it('status and verify print the same size on disk', async () => {
    const repo = await cliRepo({ 'a.txt': 'a\n'.repeat(5000) });
    expect(repo.tb(['run', '--', 'sh', '-c', 'echo b > a.txt']).code).toBe(0);
    const status = JSON.parse(repo.tb(['status', '--json']).stdout) as { store: { bytes: number } };
    const verify = JSON.parse(repo.tb(['verify', '--json']).stdout) as { storeBytes: number };
    expect(verify.storeBytes).toBe(status.store.bytes);
    const onDisk = /\(([\d.]+ (?:B|KiB|MiB)) on disk\)/.exec(repo.tb(['status']).stdout)?.[1];
    expect(onDisk).toBeDefined();
    expect(repo.tb(['verify']).stdout).toContain(`; ${onDisk} on disk`);
  });

  it('prune says how many unreferenced objects its grace period kept', async () => {
    const repo = await cliRepo({ 'a.txt': 'a\n', 'turnback.toml': '[checkpoints]\nretain = 1\n' });
    for (let i = 0; i < 3; i++) expect(repo.tb(['run', '--', 'sh', '-c', `echo ${i} > a.txt`]).code).toBe(0);
    const prune = repo.tb(['prune']);
    expect(prune.code).toBe(0);
    expect(prune.stdout).toMatch(/kept \d+ unreferenced objects? younger than 10 minutes/);
    const report = JSON.parse(repo.tb(['prune', '--json']).stdout) as { keptByGrace: number; graceMs: number };
    expect(report.keptByGrace).toBeGreaterThan(0);
    expect(report.graceMs).toBe(600_000);
  });
});

describe('prune --dry-run and drop ID', () => {
  it('prune --dry-run names what a prune would clear and removes nothing; the prune then clears the same', async () => {
    const repo = await cliRepo({ 'a.txt': 'a\n', 'turnback.toml': '[checkpoints]\nretain = 100\n' });
    for (let i = 0; i < 3; i++) expect(repo.tb(['run', '--', 'sh', '-c', `echo ${i} > a.txt`]).code).toBe(0);
    const { writeFile } = await import('node:fs/promises');
    await writeFile(`${repo.proj}/turnback.toml`, '[checkpoints]\nretain = 1\n');
    const before = (JSON.parse(repo.tb(['list', '--json', '--all']).stdout) as { checkpoints: unknown[] }).checkpoints.length;
    const dry = repo.tb(['prune', '--dry-run']);
    expect(dry.code).toBe(0);
    expect(dry.stdout).toMatch(/^would clear \d+ checkpoints \(\d+ past retain = 1\)/m);
    const report = JSON.parse(repo.tb(['prune', '--dry-run', '--json']).stdout) as { dryRun: boolean; removedCheckpoints: string[] };
    expect(report.dryRun).toBe(true);
    expect((JSON.parse(repo.tb(['list', '--json', '--all']).stdout) as { checkpoints: unknown[] }).checkpoints).toHaveLength(before);
    const real = JSON.parse(repo.tb(['prune', '--json']).stdout) as { removedCheckpoints: string[] };
    expect(real.removedCheckpoints).toEqual(report.removedCheckpoints);
  });

  it('drop ID removes that one picture, and its id then reads as dropped', async () => {
    const repo = await cliRepo({ 'a.txt': 'a\n' });
    expect(repo.tb(['run', '--', 'sh', '-c', 'echo b > a.txt']).code).toBe(0);
    const id = repo.newestId();
    const dropped = repo.tb(['drop', id.slice(-8)]);
    expect(dropped.code).toBe(0);
    expect(dropped.stdout).toContain(`dropped ${id.slice(-8)}`);
    const shown = repo.tb(['show', id]);
    expect(shown.code).toBe(1);
    expect(shown.stderr).toContain('was dropped');
    expect(repo.tb(['drop', 'abcd1234']).code).toBe(2);
  });
});

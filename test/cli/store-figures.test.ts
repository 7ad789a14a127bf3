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

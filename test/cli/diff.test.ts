import { writeFile } from 'node:fs/promises';
import * as path from 'node:path';
import { describe, expect, it } from 'vitest';
import { cliRepo } from './harness.js';

// `diff ID` shows what that turn did: the picture against what the turn left (the next picture's
// record of each path, or the tree now where nothing later touched it); `--to-now` everything since.

describe('turnback diff', () => {
  it("shows a turn's own change, not the later turns'; --to-now shows everything since the picture", async () => {
    const repo = await cliRepo({ 'log.txt': 'base\n', 'other.txt': 'o\n' });
    repo.tb(['run', '--label', 'add A', '--', 'sh', '-c', 'echo A >> log.txt']);
    const a = repo.newestId();
    repo.tb(['run', '--label', 'add B', '--', 'sh', '-c', 'echo B >> log.txt; echo p > other.txt']);
    const b = repo.newestId();

    const own = repo.tb(['diff', a]);
    expect(own.code).toBe(0);
    expect(own.stdout).toContain('--- a/log.txt');
    expect(own.stdout).toContain('+A');
    expect(own.stdout).not.toContain('+B');
    expect(own.stdout).not.toContain('other.txt');

    const second = repo.tb(['diff', b]);
    expect(second.stdout).toContain('+B');
    expect(second.stdout).not.toContain('+A');
    expect(second.stdout).toContain('+p');

    const toNow = repo.tb(['diff', a, '--to-now']);
    expect(toNow.stdout).toContain('+A');
    expect(toNow.stdout).toContain('+B');
    expect(toNow.stdout).toContain('other.txt');

    const json = JSON.parse(repo.tb(['diff', a, '--json']).stdout) as { toNow: boolean; diffs: { path: string }[] };
    expect(json).toMatchObject({ toNow: false, diffs: [{ path: 'log.txt' }] });
  });

  it('says when a file changed outside any picture since the turn, and what an undo saw counts as the next picture', async () => {
    const repo = await cliRepo({ 'log.txt': 'base\n' });
    repo.tb(['run', '--', 'sh', '-c', 'echo A >> log.txt']);
    const a = repo.newestId();
    await writeFile(path.join(repo.proj, 'log.txt'), 'edited by hand\n');
    const outside = repo.tb(['diff', a]);
    expect(outside.stdout).toContain('log.txt: changed since, outside any picture: the tree now is shown');
    expect(outside.stdout).toContain('+edited by hand');

    await writeFile(path.join(repo.proj, 'log.txt'), 'base\nA\n');
    expect(repo.tb(['undo', '--yes']).code).toBe(0);
    // The undo's save recorded what the turn left, so the turn's diff still shows its own change.
    const after = repo.tb(['diff', a]);
    expect(after.stdout).toContain('+A');
    expect(after.stdout).not.toContain('changed since');
  });

  it('a turn that changed nothing says so', async () => {
    const repo = await cliRepo({ 'log.txt': 'base\n' });
    repo.tb(['run', '--', 'true']);
    const none = repo.tb(['diff', repo.newestId()]);
    expect(none.code).toBe(0);
    expect(none.stdout).toContain('its turn changed nothing');
  });
});

import { lstat } from 'node:fs/promises';
import * as path from 'node:path';
import { describe, expect, it } from 'vitest';
import { cliRepo } from './harness.js';

// Issue #12, "Modes": undo puts back the permission bits the picture recorded, for files written
// back and files recreated (never setuid, setgid or sticky; never more than the picture had), and
// diff and show list mode changes. Through the built binary, in a real git repository.

const SCRIPT = { text: '#!/bin/sh\necho hi\n', mode: 0o755 };
const modeOf = async (file: string) => (await lstat(file)).mode & 0o7777;

describe('undo puts modes back', () => {
  it('undo of a chmod -x makes the file executable again; a deleted executable comes back 0755', async () => {
    const repo = await cliRepo({ 'tool.sh': SCRIPT, 'run.sh': SCRIPT, 'notes.txt': 'notes\n' });
    const run = repo.tb(['run', '--', 'sh', '-c', 'chmod -x tool.sh; rm run.sh']);
    expect(run.code).toBe(0);
    expect(await modeOf(path.join(repo.proj, 'tool.sh'))).toBe(0o644);
    const preview = repo.tb(['undo', '--dry-run']);
    expect(preview.stdout).toMatch(/write back\s+tool\.sh\s+\(mode only\)/);
    expect(preview.stdout).toMatch(/recreate\s+run\.sh/);
    const undo = repo.tb(['undo', '--yes']);
    expect(undo.code).toBe(0);
    expect(await modeOf(path.join(repo.proj, 'tool.sh'))).toBe(0o755);
    expect(await modeOf(path.join(repo.proj, 'run.sh'))).toBe(0o755);
    expect(repo.git('status', '--porcelain')).toBe('');
  });

  it('never sets setuid, setgid or sticky, and never more than the picture had', async () => {
    const repo = await cliRepo({ 'plain.txt': 'plain\n', 'private.txt': { text: 'mine\n', mode: 0o600 } });
    const run = repo.tb(['run', '--', 'sh', '-c', 'chmod 4777 plain.txt; chmod 0666 private.txt']);
    expect(run.code).toBe(0);
    expect(repo.tb(['undo', '--yes']).code).toBe(0);
    expect(await modeOf(path.join(repo.proj, 'plain.txt'))).toBe(0o644);
    expect(await modeOf(path.join(repo.proj, 'private.txt'))).toBe(0o600);
  });

  it('diff shows a mode change (alone, or beside a content change), show lists the file', async () => {
    const repo = await cliRepo({ 'tool.sh': SCRIPT, 'a.txt': 'a\n' });
    expect(repo.tb(['run', '--', 'sh', '-c', 'chmod -x tool.sh; chmod 600 a.txt; echo b >> a.txt']).code).toBe(0);
    const id = repo.newestId();
    const diff = repo.tb(['diff', id]);
    expect(diff.stdout).toContain('tool.sh: mode 755 → 644\n');
    expect(diff.stdout).not.toContain('--- a/tool.sh');
    expect(diff.stdout).toContain('a.txt: mode 644 → 600\n--- a/a.txt\n+++ b/a.txt\n');
    const show = repo.tb(['show', id]);
    expect(show.stdout).toMatch(/changed\s+a\.txt/);
    expect(show.stdout).toMatch(/changed\s+tool\.sh/);
  });
});

import { describe, expect, it } from 'vitest';
import { LABEL_MAX_CHARS, shortLabel } from '../../src/cli/pictures.js';
import { cliRepo } from './harness.js';

// Issue #12, "Lists a person can read": default labels are short (the command cut to about 60
// characters, one line); undo's save is `before undo of <label>`, redo's `before redo`.

interface Listed {
  checkpoints: { id: string; kind: string; label: string }[];
}

describe('labels a person can read', () => {
  it('cuts a long, many-line command to one line of at most 60 characters', async () => {
    const repo = await cliRepo({ 'a.txt': 'a\n' });
    const script = `echo one > a.txt\necho two >> a.txt\n# ${'a long comment '.repeat(10)}`;
    expect(repo.tb(['run', '--', 'sh', '-c', script]).code).toBe(0);
    const listed = JSON.parse(repo.tb(['list', '--json']).stdout) as Listed;
    const label = listed.checkpoints[0]?.label ?? '';
    expect(label.length).toBeLessThanOrEqual(LABEL_MAX_CHARS);
    expect(label).not.toMatch(/[\n\r\t]/);
    expect(label).toMatch(/^before sh -c 'echo one > a\.txt echo two >> a\.txt .*…$/);
    const list = repo.tb(['list']);
    expect(list.stdout.split('\n').filter((line) => line.includes('before sh'))).toHaveLength(1);
  });

  it('names undo\'s save "before undo of <label>" and redo\'s "before redo"', async () => {
    const repo = await cliRepo({ 'a.txt': 'a\n' });
    expect(repo.tb(['run', '--', 'sh', '-c', 'echo b > a.txt']).code).toBe(0);
    expect(repo.tb(['undo', '--yes']).code).toBe(0);
    let listed = JSON.parse(repo.tb(['list', '--json']).stdout) as Listed;
    expect(listed.checkpoints.find((c) => c.kind === 'pre-restore')?.label).toBe("before undo of sh -c 'echo b > a.txt'");
    expect(repo.tb(['redo', '--yes']).code).toBe(0);
    listed = JSON.parse(repo.tb(['list', '--json']).stdout) as Listed;
    expect(listed.checkpoints.filter((c) => c.kind === 'pre-restore').map((c) => c.label)).toEqual(['before redo', "before undo of sh -c 'echo b > a.txt'"]);
  });

  it('shortLabel keeps short text as it is and never leaves a control character', () => {
    expect(shortLabel('before make')).toBe('before make');
    expect(shortLabel('before a\u001b[2Jb')).toBe('before a [2Jb');
    expect(shortLabel(`before ${'x'.repeat(100)}`)).toHaveLength(LABEL_MAX_CHARS);
  });
});

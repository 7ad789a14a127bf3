import { describe, expect, it } from 'vitest';
import type { PathState } from '../../src/index.js';
import { renderInterruptedNotice } from '../../src/report/interrupted.js';

const file: PathState = { type: 'file', object: 'o', hash: '0123456789abcdef', size: 1, mode: 0o644 };

describe('interrupted notice', () => {
  it('names the command, what changed since, and what was not covered', () => {
    const lines = renderInterruptedNotice({
      command: 'printf x >> a.txt && sleep 60',
      startedAt: '2024-05-02T14:02:00.000Z',
      changes: [
        { path: 'a.txt', kind: 'changed', before: file, after: file },
        { path: 'started', kind: 'created', after: file },
        { path: 'big.bin', kind: 'deleted', before: { type: 'uncopied', reason: 'too-large', size: 1, mode: 0o644 } },
      ],
    });
    expect(lines).toEqual([
      'turnback was killed while a command ran: `printf x >> a.txt && sleep 60` (started 2024-05-02T14:02:00.000Z). It may have partly run; its output was not recorded.',
      '  Since it started:',
      '    changed   a.txt     turnback undo restores',
      '    new       started',
      '    deleted   big.bin   no copy (over 100 MiB)',
      '  Not covered: gitignored files, anything outside the project.',
    ]);
  });

  it('says so when nothing changed, and notes a partial picture', () => {
    const lines = renderInterruptedNotice({ command: undefined, startedAt: 't', changes: [], partial: true, summary: '3 folders not checked' });
    expect(lines.slice(1)).toEqual(['  Since it started: no files changed.', '  checkpoint partial: 3 folders not checked', '  Not covered: gitignored files, anything outside the project.']);
  });
});

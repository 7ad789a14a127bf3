import { describe, expect, it } from 'vitest';
import type { PathState, PlanEntry } from '../../src/index.js';
import { buildUndoPreview, previewHeader, renderReceipt, renderUndoPreview } from '../../src/report/preview.js';
import { noCopyText, planReasonText } from '../../src/report/reasons.js';

const file: PathState = { type: 'file', object: 'o', hash: '0123456789abcdef', size: 3, mode: 0o644 };
const absent: PathState = { type: 'absent' };
const big: PathState = { type: 'uncopied', reason: 'too-large', size: 1, mode: 0o644 };

const entries: PlanEntry[] = [
  { path: 'big.bin', action: 'leave', reason: 'no-copy:too-large', target: big },
  { path: 'docs/notes/a.md', action: 'recreate', target: file, expectedHash: 'absent', mode: 0o644 },
  { path: 'same.txt', action: 'skip', reason: 'already-matches', target: file },
  { path: 'scripts/tidy.sh', action: 'leave', reason: 'created-since', target: absent },
  { path: 'src/parser.rs', action: 'restore', target: file, expectedHash: 'file:1', mode: 0o644 },
];

describe('undo preview', () => {
  it('matches the seed layout', () => {
    const preview = buildUndoPreview('before ./tidy.sh', entries);
    expect(renderUndoPreview(preview)).toEqual([
      'undo to before ./tidy.sh: 1 to write back, 1 to recreate, 1 kept, 1 left alone',
      '  write back  src/parser.rs',
      '  recreate    docs/notes/a.md',
      '  kept        scripts/tidy.sh   (created since)',
      '  leave       big.bin   no copy (over 100 MiB)',
    ]);
    expect(preview.unchanged).toBe(1);
    expect(preview.writes).toBe(true);
  });

  it('names refused paths as skipped with the reason, and says when nothing changes', () => {
    const refused: PlanEntry[] = [{ path: 'a.txt', action: 'refuse', reason: 'changed-outside', target: file, expectedHash: 'file:1', foundHash: 'file:2' }];
    const preview = buildUndoPreview('before x', refused);
    expect(renderUndoPreview(preview)).toEqual(['undo to before x: 1 skipped', '  skip        a.txt   changed since (your version is kept)']);
    expect(preview.writes).toBe(false);
    expect(previewHeader(buildUndoPreview('before x', []))).toBe('undo to before x: nothing to change');
  });

  it('counts deletions when created files are deleted', () => {
    const preview = buildUndoPreview('before undo', [{ path: 'n.txt', action: 'delete', target: absent, expectedHash: 'file:1' }]);
    expect(renderUndoPreview(preview)).toEqual(['undo to before undo: 1 to delete', '  delete      n.txt']);
  });
});

describe('receipt', () => {
  it('matches the seed layout', () => {
    const lines = renderReceipt('before ./tidy.sh', {
      restored: [entries[4] as PlanEntry, entries[1] as PlanEntry],
      refused: [],
      skipped: [entries[0] as PlanEntry, entries[2] as PlanEntry, entries[3] as PlanEntry],
      failed: [],
      preRestoreId: '1700000000000-0000-abcdef01' as never,
      cleanupPending: [],
    });
    expect(lines).toEqual([
      'restored 2 files to before ./tidy.sh',
      '  written     src/parser.rs',
      '  recreated   docs/notes/a.md',
      '  skipped     big.bin   no copy (over 100 MiB)',
      '  kept        scripts/tidy.sh',
      '  saved first: turnback undo can undo this',
    ]);
  });

  it('names refused, failed and leftover paths, and omits the save line when nothing was saved', () => {
    const lines = renderReceipt('before x', {
      restored: [],
      refused: [{ path: 'a', action: 'refuse', reason: 'changed-since-plan', target: file }],
      skipped: [],
      failed: [{ path: 'b', error: 'EACCES' }],
      preRestoreId: undefined,
      cleanupPending: ['.turnback-restore-1'],
    });
    expect(lines).toEqual([
      'restored 0 files to before x',
      '  skipped     a   changed since the preview',
      '  failed      b   EACCES',
      '  leftover    .turnback-restore-1   a temporary file; inspect and remove it by hand',
    ]);
  });
});

describe('reason words', () => {
  it('words every uncopied reason and unknown reasons verbatim', () => {
    expect(noCopyText('too-large', 50)).toBe('no copy (over 50 MiB)');
    expect(noCopyText('changed-during-capture')).toBe('no copy (changed during capture)');
    expect(noCopyText('unreadable')).toBe('no copy (unreadable)');
    expect(planReasonText('cannot-save-first:credential')).toBe('cannot save it first: no copy (credential file)');
    expect(planReasonText('something-new')).toBe('something-new');
    expect(planReasonText(undefined)).toBe('');
  });
});

describe('long previews', () => {
  it('folds writes past 10 into one line but always shows kept and skipped rows', () => {
    const many: PlanEntry[] = Array.from({ length: 13 }, (_, i) => ({ path: `src/m${String(i).padStart(2, '0')}.js`, action: 'restore', target: file, expectedHash: 'file:1' }) as PlanEntry);
    many.push({ path: 'zz.txt', action: 'leave', reason: 'created-since', target: absent });
    const lines = renderUndoPreview(buildUndoPreview('before x', many));
    expect(lines).toHaveLength(1 + 10 + 1 + 1);
    expect(lines[11]).toBe('  … and 3 more: 3 to write back (--all lists every one)');
    expect(lines[12]).toBe('  kept        zz.txt   (created since)');
    const receipt = renderReceipt('before x', { restored: many.slice(0, 13), refused: [], skipped: [], failed: [], preRestoreId: undefined, cleanupPending: [] });
    expect(receipt).toHaveLength(1 + 10 + 1);
    expect(receipt.at(-1)).toBe('  … and 3 more: 3 written (--all lists every one)');
  });
});

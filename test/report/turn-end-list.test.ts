import { describe, expect, it } from 'vitest';
import type { PathState } from '../../src/index.js';
import {
  buildTurnEndList,
  collapseCandidates,
  countsLine,
  gitQuestionPaths,
  renderTurnEndList,
  shellQuote,
  type ReportChange,
} from '../../src/report/turn-end-list.js';

const file = (size = 3): PathState => ({ type: 'file', object: `obj${size}`, hash: '0123456789abcdef', size, mode: 0o644 });
const absent: PathState = { type: 'absent' };
const changed = (path: string, after: PathState = file(5)): ReportChange => ({ path, kind: 'changed', before: file(), after });
const created = (path: string): ReportChange => ({ path, kind: 'created', before: absent, after: file() });
const deleted = (path: string, before: PathState = file()): ReportChange => ({ path, kind: 'deleted', before, after: absent });

function render(...args: Parameters<typeof buildTurnEndList>): string[] {
  return renderTurnEndList(buildTurnEndList(...args));
}

describe('turn-end list', () => {
  it('prints the counts line with only the kinds that occurred', () => {
    expect(countsLine({ changed: 2, created: 1, deleted: 16 })).toBe('files: 2 changed, 1 new, 16 deleted');
    expect(countsLine({ changed: 0, created: 0, deleted: 3 })).toBe('files: 3 deleted');
    expect(countsLine({ changed: 0, created: 0, deleted: 0 })).toBe('files: none changed');
  });

  it('lists changed, then new, then deleted, sorted by path', () => {
    const lines = render({ changes: [deleted('z.txt'), created('scripts/tidy.sh'), changed('src/parser.rs'), changed('Cargo.toml')] });
    expect(lines).toEqual([
      'files: 2 changed, 1 new, 1 deleted',
      '  changed  Cargo.toml',
      '  changed  src/parser.rs',
      '  new      scripts/tidy.sh',
      '  deleted  z.txt',
    ]);
  });

  it('shows up to 10 rows then "… and N more", naming what the folded rows did', () => {
    const changes = [...Array.from({ length: 12 }, (_, i) => changed(`f${String(i).padStart(2, '0')}.txt`)), { path: 'g.txt', kind: 'created' as const }];
    const list = buildTurnEndList({ changes });
    expect(list.rows).toHaveLength(10);
    expect(list.hidden).toBe(3);
    expect(list.hiddenByKind).toEqual({ changed: 2, created: 1, deleted: 0 });
    const lines = renderTurnEndList(list);
    expect(lines.at(-1)).toBe('  … and 3 more: 2 changed, 1 new (--all lists every one)');
    expect(lines[0]).toBe('files: 12 changed, 1 new');
  });

  it('never folds a single row: eleven rows under a limit of ten all show', () => {
    const list = buildTurnEndList({ changes: Array.from({ length: 11 }, (_, i) => changed(`f${String(i).padStart(2, '0')}.txt`)) });
    expect(list.rows).toHaveLength(11);
    expect(list.hidden).toBe(0);
    expect(renderTurnEndList(list).some((line) => line.includes('more'))).toBe(false);
  });

  it('always shows flagged rows, even past the limit', () => {
    const changes = [...Array.from({ length: 12 }, (_, i) => changed(`a${String(i).padStart(2, '0')}.txt`)), deleted('zz/lost.md')];
    const list = buildTurnEndList({ changes, git: { notInGit: new Set(['zz/lost.md']), unchecked: new Set() } });
    expect(list.rows).toHaveLength(10);
    expect(list.rows.at(-1)).toMatchObject({ path: 'zz/lost.md', flags: ['not in git'] });
    expect(list.hidden).toBe(3);
  });

  it('collapses a folder whose files all went the same way', () => {
    const notes = Array.from({ length: 16 }, (_, i) => deleted(`docs/notes/n${i}.md`));
    const changes = [changed('src/parser.rs'), changed('Cargo.toml'), created('scripts/tidy.sh'), ...notes];
    const lines = render({ changes, git: { notInGit: new Set(notes.map((n) => n.path)), unchecked: new Set() } });
    expect(lines).toEqual([
      'files: 2 changed, 1 new, 16 deleted',
      '  changed  Cargo.toml',
      '  changed  src/parser.rs',
      '  new      scripts/tidy.sh',
      '⚠ deleted  docs/ (16 files)   not in git   turnback undo',
    ]);
  });

  it('collapses only folders the caller confirmed whole', () => {
    const changes = [deleted('docs/notes/a.md'), deleted('docs/notes/b.md')];
    expect(collapseCandidates(changes).map((c) => c.folder)).toEqual(['docs/', 'docs/notes/']);
    const list = buildTurnEndList({ changes, wholeFolders: new Set(['docs/notes/']) });
    expect(list.rows).toEqual([{ kind: 'deleted', path: 'docs/notes/', files: 2, flags: [] }]);
    const none = buildTurnEndList({ changes, wholeFolders: new Set() });
    expect(none.rows.map((r) => r.path)).toEqual(['docs/notes/a.md', 'docs/notes/b.md']);
  });

  it('does not collapse a folder with mixed kinds or a single file', () => {
    expect(collapseCandidates([deleted('d/a'), created('d/b')])).toEqual([]);
    expect(collapseCandidates([deleted('d/a')])).toEqual([]);
  });

  it('flags not in git only for deleted or emptied files, and offers undo --path', () => {
    const changes = [deleted('notes.md'), changed('empty.txt', file(0)), changed('edited.txt')];
    const git = { notInGit: new Set(['notes.md', 'empty.txt', 'edited.txt']), unchecked: new Set<string>() };
    expect(gitQuestionPaths(changes)).toEqual(['empty.txt', 'notes.md']);
    const lines = render({ changes, git });
    expect(lines).toContain('⚠ changed  empty.txt   not in git   turnback undo --path empty.txt');
    expect(lines).toContain('⚠ deleted  notes.md   not in git   turnback undo --path notes.md');
    expect(lines).toContain('  changed  edited.txt');
  });

  it('flags 20+ deleted on every deletion once 20 files are deleted', () => {
    const changes = Array.from({ length: 20 }, (_, i) => deleted(`d${i}/x.txt`));
    const list = buildTurnEndList({ changes });
    expect(list.rows).toHaveLength(20);
    expect(list.rows.every((r) => r.flags.includes('20+ deleted'))).toBe(true);
    expect(buildTurnEndList({ changes: changes.slice(0, 19) }).rows.every((r) => r.flags.length === 0)).toBe(true);
  });

  it('flags protected paths; a new protected file offers no undo', () => {
    const lines = render({ changes: [changed('.github/workflows/ci.yml'), created('.github/CODEOWNERS'), changed('src/a.ts')], protected: ['.github/'] });
    expect(lines).toContain('⚠ changed  .github/workflows/ci.yml   protected   turnback undo --path .github/workflows/ci.yml');
    expect(lines).toContain('⚠ new      .github/CODEOWNERS   protected');
    expect(lines).toContain('  changed  src/a.ts');
  });

  it('shows the no-copy reason instead of an undo for a loss without a copy', () => {
    const big: PathState = { type: 'uncopied', reason: 'too-large', size: 200 * 1024 * 1024, mode: 0o644 };
    const cred: PathState = { type: 'uncopied', reason: 'credential', size: 10, mode: 0o600 };
    const lines = render({ changes: [deleted('big.bin', big), deleted('.env', cred)], git: { notInGit: new Set(['big.bin', '.env']), unchecked: new Set() } });
    expect(lines).toContain('⚠ deleted  big.bin   not in git   no copy (over 100 MiB)');
    expect(lines).toContain('⚠ deleted  .env   not in git   no copy (credential file)');
  });

  it('a folder line counts files without a copy and still offers undo when some have one', () => {
    const budget: PathState = { type: 'uncopied', reason: 'picture-budget', size: 1, mode: 0o644 };
    const changes = [deleted('out/a', budget), deleted('out/b'), deleted('out/c')];
    const lines = render({ changes, git: { notInGit: new Set(['out/a', 'out/b', 'out/c']), unchecked: new Set() } });
    expect(lines[1]).toBe('⚠ deleted  out/ (3 files)   not in git   1 of 3 without a copy: no copy (picture budget)   turnback undo');
  });

  it('states every gap in notes so a partial list never reads as nothing changed', () => {
    const list = buildTurnEndList({
      changes: [],
      partial: true,
      gaps: [
        { reason: 'picture-budget', detail: '48,000 new files in out/, 10,000 copied' },
        { reason: 'store-busy', detail: 'the checkpoint store is busy (another session is using it)' },
        { path: 'vendor/', reason: 'gitignore-unusable', detail: 'its .gitignore is over 1 MiB' },
        { path: 'a.pem', reason: 'credential', detail: 'credential file' },
        { path: 'b.key', reason: 'credential', detail: 'credential file' },
      ],
      git: { notInGit: new Set(), unchecked: new Set(['x', 'y']), uncheckedWhy: 'git asked about at most 100 files' },
    });
    expect(renderTurnEndList(list)).toEqual([
      'files: none changed',
      'note: checkpoint partial: 48,000 new files in out/, 10,000 copied; changes past it are not listed',
      'note: no checkpoint: the checkpoint store is busy (another session is using it)',
      'note: not checked: vendor/: its .gitignore is over 1 MiB',
      'note: not copied: 2 files no copy (credential file)',
      'note: not checked against git: 2 deleted or emptied files (git asked about at most 100 files)',
    ]);
  });

  it('names a walk limit the pictures before and after both hit once, as the picture before says it', () => {
    const before = 'the walk reached its entry limit (30 entries); 15 folders not walked: untracked files in them not pictured (the 90 files git tracks there are)';
    const after = 'the walk reached its entry limit (30 entries); 14 folders not walked: untracked files in them not pictured (the 70 files git tracks there are)';
    const list = buildTurnEndList({
      changes: [],
      partial: true,
      gaps: [
        { reason: 'walk-entries', detail: before },
        { reason: 'time-limit', detail: 'the picture reached its time limit (10 s)' },
        { reason: 'walk-entries', detail: after },
        { reason: 'time-limit', detail: 'the picture reached its time limit (10 s)' },
      ],
    });
    expect(renderTurnEndList(list)).toEqual(['files: none changed', `note: checkpoint partial: ${before}; the picture reached its time limit (10 s); changes past it are not listed`]);
  });

  it('quotes paths for the shell only when needed', () => {
    expect(shellQuote('src/a.ts')).toBe('src/a.ts');
    expect(shellQuote("it's here.md")).toBe(`'it'\\''s here.md'`);
  });

  it('applies a style to flags and notes', () => {
    const style = { warn: (t: string) => `<${t}>`, dim: (t: string) => `(${t})`, bold: (t: string) => `*${t}*` };
    const lines = renderTurnEndList(buildTurnEndList({ changes: [deleted('a')], git: { notInGit: new Set(['a']), unchecked: new Set() } }), style);
    expect(lines[1]).toBe('<⚠ >deleted  a   <not in git>   *turnback undo --path a*');
  });
});

describe('folder flags', () => {
  it('counts how many files of a folder git has no copy of', () => {
    const changes = [deleted('docs/a.md'), deleted('docs/b.md'), deleted('docs/c.md')];
    const lines = render({ changes, git: { notInGit: new Set(['docs/b.md']), unchecked: new Set() } });
    expect(lines[1]).toBe('⚠ deleted  docs/ (3 files)   not in git (1 of 3)   turnback undo');
  });
});

import * as nodeFs from 'node:fs';
import * as fs from 'node:fs/promises';
import * as path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { IgnoreStack, resolveCoverage, type ResolvedCoverage } from '../../src/capture/coverage.js';
import { ScanMemo, scanTree, type ScanResult, type StatRecord } from '../../src/capture/scan.js';
import { restoreScanIndex, scanIndexOf } from '../../src/capture/scan-index.js';
import { withSeed, type Seeded } from '../helpers/seed.js';
import { keepFolderTime as keepTime, makeTree, settleFolders as settle, tempDir } from './helpers.js';

const settleFolders = (dir: string = root): void => settle(dir);
const keepFolderTime = (rel: string, change: () => void): void => keepTime(rel === '' ? root : path.join(root, rel), change);

// The scan index carries settled folder listings from one process to the next. Each "process"
// here is a fresh memo and ignore stack; what passes between them is only the JSON document and
// the records (the stat cache), exactly what the picture keeper persists.

let root: string;
beforeEach(async () => {
  root = await tempDir();
});
afterEach(async () => {
  await fs.rm(root, { recursive: true, force: true });
});

function view(result: ScanResult): Record<string, Omit<StatRecord, 'path'>> {
  const out: Record<string, Omit<StatRecord, 'path'>> = {};
  for (const [p, r] of [...result.entries].sort((a, b) => (a[0] < b[0] ? -1 : 1))) {
    out[p] = { type: r.type, size: r.size, mode: r.mode, mtimeMs: r.mtimeMs, ino: r.ino, ...(r.target !== undefined ? { target: r.target } : {}) };
  }
  return out;
}

/** What one process hands the next: the scan index document (through JSON) and its records. */
interface Handover {
  doc: unknown;
  records: Map<string, StatRecord>;
}

/** One process: a fresh memo and ignore stack, started from `handover` when there is one. */
async function processScan(coverage: ResolvedCoverage, handover: Handover | undefined): Promise<{ result: ScanResult; listed: string[]; next: Handover }> {
  const memo = new ScanMemo();
  const ignores = new IgnoreStack();
  const listed: string[] = [];
  let previous: { entries: Map<string, StatRecord>; epoch: number } | undefined;
  if (handover !== undefined) {
    const restored = restoreScanIndex(handover.doc, handover.records);
    if (restored !== undefined && memo.restore(restored.folders, handover.records, restored.scope)) {
      previous = { entries: handover.records, epoch: ignores.seed(coverage, restored.keys) };
    } else {
      previous = { entries: handover.records, epoch: -1 };
    }
  }
  const result = await scanTree(root, coverage, {
    memo,
    ignores,
    readDir: (abs) => {
      listed.push(path.relative(root, abs) || '.');
      return nodeFs.readdirSync(abs, { withFileTypes: true });
    },
    ...(previous !== undefined ? { previous: previous.entries, previousEpoch: previous.epoch } : {}),
  });
  memo.bind(result.memoGeneration, result.entries);
  return { result, listed, next: { doc: JSON.parse(JSON.stringify(scanIndexOf(memo, ignores) ?? null)), records: result.entries } };
}

describe('the scan index between processes', () => {
  it("a fresh process's first scan lists no settled folder, and finds what the tree holds", async () => {
    await makeTree(root, { '.gitignore': 'build/\n*.log\n', 'a.txt': 'a', 'x.log': 'x', 'build/out.js': 'o', 'src/b.ts': 'b', 'src/deep/c.ts': 'c' });
    settleFolders();
    const coverage = resolveCoverage({});
    const first = await processScan(coverage, undefined);
    expect(first.listed.sort()).toEqual(['.', 'src', 'src/deep']);
    const second = await processScan(coverage, first.next);
    expect(second.listed).toEqual([]);
    expect(view(second.result)).toEqual(view(await scanTree(root, coverage)));
    expect(second.result.ignored.sort()).toEqual(['build/', 'x.log']);
    // Unchanged files come back as the very records the earlier process handed over.
    expect(second.result.entries.get('src/b.ts')).toBe(first.result.entries.get('src/b.ts'));
  });

  it("a fresh process's scan over restored listings stops at the walk limit where a scan with no memory stops, at every limit", async () => {
    await makeTree(root, { '.gitignore': 'build/\n*.log\n', 'a.txt': 'a', 'x.log': 'x', 'build/out.js': 'o', 'src/b.ts': 'b', 'src/deep/c.ts': 'c', 'src/deep/d.ts': 'd', 'lib/e.ts': 'e' });
    settleFolders();
    const full = await processScan(resolveCoverage({}), undefined);
    let cut = 0;
    for (let limit = 1; limit <= 14; limit++) {
      const coverage = resolveCoverage({ maxWalkEntries: limit });
      const restored = await processScan(coverage, full.next);
      const fresh = await scanTree(root, coverage);
      expect(restored.result.unchecked, `limit ${limit}`).toEqual(fresh.unchecked);
      expect(view(restored.result), `limit ${limit}`).toEqual(view(fresh));
      if (fresh.partial) cut++;
    }
    expect(cut).toBeGreaterThan(4);
  });

  it('a .gitignore edited in place (its folder keeps its mtime) is noticed: the folder is listed and matched again', async () => {
    await makeTree(root, { '.gitignore': 'gen/\n', 'gen/made.js': 'm', 'src/a.ts': 'a' });
    settleFolders();
    const coverage = resolveCoverage({});
    const first = await processScan(coverage, undefined);
    expect(first.result.entries.has('gen/made.js')).toBe(false);
    keepFolderTime('', () => nodeFs.writeFileSync(path.join(root, '.gitignore'), '# nothing ignored now\n'));
    const second = await processScan(coverage, first.next);
    expect(second.listed).toContain('.');
    expect(second.result.entries.has('gen/made.js')).toBe(true);
    expect(view(second.result)).toEqual(view(await scanTree(root, coverage)));
  });

  it('another scope (skip patterns) uses nothing of the index', async () => {
    await makeTree(root, { 'a.txt': 'a', 'out/b.txt': 'b' });
    settleFolders();
    const first = await processScan(resolveCoverage({}), undefined);
    const skipping = resolveCoverage({ skip: ['out/'] });
    const second = await processScan(skipping, first.next);
    expect(second.listed.sort()).toEqual(['.']);
    expect(second.result.entries.has('out/b.txt')).toBe(false);
  });

  it('a folder whose files the handed-over records lack is listed afresh, never reused without them', async () => {
    await makeTree(root, { 'src/a.ts': 'a', 'src/b.ts': 'b', 'lib/c.ts': 'c' });
    settleFolders();
    const coverage = resolveCoverage({});
    const first = await processScan(coverage, undefined);
    const records = new Map(first.next.records);
    records.delete('src/b.ts');
    const second = await processScan(coverage, { doc: first.next.doc, records });
    expect(second.listed).toEqual(['src']);
    expect(view(second.result)).toEqual(view(await scanTree(root, coverage)));
  });

  it('a malformed document is not half trusted: every folder is listed', async () => {
    await makeTree(root, { 'src/a.ts': 'a' });
    settleFolders();
    const coverage = resolveCoverage({});
    const first = await processScan(coverage, undefined);
    const doc = first.next.doc as { columns: { mtimes: unknown[]; shared: unknown[] } };
    const mtimes = [...doc.columns.mtimes];
    doc.columns.mtimes[0] = 'not a number';
    expect(restoreScanIndex(doc, first.next.records)).toBeUndefined();
    doc.columns.mtimes = mtimes;
    doc.columns.shared[1] = 1_000; // more than the path before it holds
    expect(restoreScanIndex(doc, first.next.records)).toBeUndefined();
    doc.columns.mtimes = mtimes.slice(1); // a column of another length
    expect(restoreScanIndex(doc, first.next.records)).toBeUndefined();
    const second = await processScan(coverage, first.next);
    expect(second.listed.sort()).toEqual(['.', 'src']);
  });

  it('random changes between processes: each first scan equals a scan with no memory (seeded)', async () => {
    await withSeed(4242, async (random) => {
      const files: Record<string, string> = { '.gitignore': 'tmp/\n' };
      for (let i = 0; i < 40; i++) files[`d${i % 5}/s${i % 3}/f${i}.txt`] = `file ${i}`;
      await makeTree(root, files);
      settleFolders();
      const coverage = resolveCoverage({});
      let handover = (await processScan(coverage, undefined)).next;
      let skipped = 0;
      for (let round = 0; round < 12; round++) {
        for (let k = random.int(1, 3); k > 0; k--) mutate(random);
        if (random.next() < 0.5) settleFolders();
        const step = await processScan(coverage, handover);
        expect(view(step.result), `round ${round}`).toEqual(view(await scanTree(root, coverage)));
        expect(step.result.ignored.sort(), `round ${round}`).toEqual((await scanTree(root, coverage)).ignored.sort());
        const fresh: string[] = [];
        await scanTree(root, coverage, { readDir: (abs) => (fresh.push(abs), nodeFs.readdirSync(abs, { withFileTypes: true })) });
        skipped += fresh.length - step.listed.length;
        handover = step.next;
      }
      // The index was used, not just ignored: many folders were never listed again.
      expect(skipped).toBeGreaterThan(12);
    });
  });
});

/** One random change of the tree, some of them leaving the folder's mtime as it was. */
function mutate(random: Seeded): void {
  const folders: string[] = [];
  const files: string[] = [];
  const walk = (rel: string): void => {
    for (const entry of nodeFs.readdirSync(path.join(root, rel), { withFileTypes: true })) {
      const child = rel === '' ? entry.name : `${rel}/${entry.name}`;
      if (entry.isDirectory()) {
        folders.push(child);
        walk(child);
      } else files.push(child);
    }
  };
  walk('');
  const pick = <T>(items: T[]): T | undefined => (items.length === 0 ? undefined : items[random.int(0, items.length - 1)]);
  const file = pick(files.filter((f) => !f.endsWith('.gitignore')));
  const folder = pick(folders) ?? '';
  switch (random.int(0, 6)) {
    case 0:
      if (file !== undefined) nodeFs.appendFileSync(path.join(root, file), ' more');
      break;
    case 1:
      nodeFs.writeFileSync(path.join(root, folder, `new${random.int(0, 999)}.txt`), 'new');
      break;
    case 2:
      if (file !== undefined) nodeFs.rmSync(path.join(root, file));
      break;
    case 3: {
      // Rules edited in place keep the folder's mtime (the file's changes); a new file changes it.
      const rules = path.join(root, folder, '.gitignore');
      const text = random.next() < 0.5 ? '*.txt\n' : 'new*\n';
      if (nodeFs.existsSync(rules)) keepFolderTime(folder, () => nodeFs.writeFileSync(rules, text));
      else nodeFs.writeFileSync(rules, text);
      break;
    }
    case 4:
      keepFolderTime(folder, () => {
        if (nodeFs.existsSync(path.join(root, folder, '.gitignore'))) nodeFs.writeFileSync(path.join(root, folder, '.gitignore'), '');
      });
      break;
    case 5:
      nodeFs.mkdirSync(path.join(root, folder, 'tmp'), { recursive: true });
      nodeFs.writeFileSync(path.join(root, folder, 'tmp', 'x.txt'), 'x');
      break;
    default:
      if (file !== undefined) nodeFs.chmodSync(path.join(root, file), random.next() < 0.5 ? 0o600 : 0o755);
  }
}

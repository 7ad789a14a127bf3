import * as nodeFs from 'node:fs';
import * as fs from 'node:fs/promises';
import * as path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { IgnoreStack, resolveCoverage } from '../../src/capture/coverage.js';
import { ScanMemo, scanTree, type ScanOptions, type ScanResult, type StatRecord } from '../../src/capture/scan.js';
import { PARALLEL_MIN_PATHS, ParallelLstat } from '../../src/fs/parallel-lstat.js';
import { keepFolderTime as keepTime, makeTree, settleFolders as settle, tempDir, unsettleFolders } from './helpers.js';

const settleFolders = (dir: string = root): void => settle(dir);
const keepFolderTime = (rel: string, change: () => void): void => keepTime(rel === '' ? root : path.join(root, rel), change);

let root: string;
let parallel: ParallelLstat | undefined;
beforeEach(async () => {
  root = await tempDir();
});
afterEach(async () => {
  await parallel?.close();
  parallel = undefined;
  await fs.rm(root, { recursive: true, force: true });
});

/** Repeat scans the way a picture drives them: one memo and ignore stack, each scan bound to the last. */
function scanner(extra: Omit<ScanOptions, 'memo' | 'ignores' | 'previous' | 'previousEpoch' | 'readDir'> = {}, coverage = resolveCoverage({}), onList?: (rel: string) => void) {
  const memo = new ScanMemo();
  const ignores = new IgnoreStack();
  let last: ScanResult | undefined;
  const listed: string[] = [];
  return {
    listed,
    async scan(): Promise<ScanResult> {
      listed.length = 0;
      const result = await scanTree(root, coverage, {
        ...extra,
        memo,
        ignores,
        readDir: (abs) => {
          listed.push(path.relative(root, abs) || '.');
          onList?.(path.relative(root, abs));
          return nodeFs.readdirSync(abs, { withFileTypes: true });
        },
        ...(last !== undefined ? { previous: last.entries, previousEpoch: last.ignoreEpoch } : {}),
      });
      memo.bind(result.memoGeneration, result.entries);
      last = result;
      return result;
    },
  };
}

function view(result: ScanResult): Record<string, Omit<StatRecord, 'path'>> {
  const out: Record<string, Omit<StatRecord, 'path'>> = {};
  for (const [p, r] of [...result.entries].sort((a, b) => (a[0] < b[0] ? -1 : 1))) {
    out[p] = { type: r.type, size: r.size, mode: r.mode, mtimeMs: r.mtimeMs, ino: r.ino, ...(r.target !== undefined ? { target: r.target } : {}) };
  }
  return out;
}

/** A scan with no memory of earlier scans: the truth a repeat scan must match. */
async function freshScan(): Promise<ScanResult> {
  return scanTree(root, resolveCoverage({}));
}

describe('settled folder listings', () => {
  it('a settled folder is not listed again; a change of its entries changes its mtime and it is listed', async () => {
    await makeTree(root, { 'a.txt': 'a', 'src/b.ts': 'b', 'src/deep/c.ts': 'c' });
    settleFolders();
    const s = scanner();
    await s.scan();
    expect(s.listed.sort()).toEqual(['.', 'src', 'src/deep']);
    const again = await s.scan();
    expect(s.listed).toEqual([]);
    expect(view(again)).toEqual(view(await freshScan()));

    await fs.writeFile(path.join(root, 'src/new.ts'), 'new');
    const third = await s.scan();
    expect(s.listed).toEqual(['src']);
    expect(third.entries.has('src/new.ts')).toBe(true);
    // Changed moments ago: not settled, so listed every time until it is.
    await s.scan();
    expect(s.listed).toEqual(['src']);
  });

  it('sees a file changed in place without listing its folder', async () => {
    await makeTree(root, { 'src/b.ts': 'b' });
    settleFolders();
    const s = scanner();
    await s.scan();
    await fs.appendFile(path.join(root, 'src/b.ts'), ' and more');
    await fs.chmod(path.join(root, 'src/b.ts'), 0o600);
    const after = await s.scan();
    expect(s.listed).toEqual([]);
    expect(after.entries.get('src/b.ts')).toMatchObject({ size: 10, mode: 0o600 });
  });

  it('lists a folder again when the disk contradicts its listing (an entry gone or of another kind)', async () => {
    await makeTree(root, { 'src/a.ts': 'a', 'src/b.ts': 'b', 'src/c.ts': 'c' });
    settleFolders();
    const s = scanner();
    await s.scan();
    keepFolderTime('src', () => nodeFs.rmSync(path.join(root, 'src/a.ts')));
    const gone = await s.scan();
    expect(s.listed).toEqual(['src']);
    expect(view(gone)).toEqual(view(await freshScan()));

    settleFolders();
    await s.scan();
    keepFolderTime('src', () => {
      nodeFs.rmSync(path.join(root, 'src/b.ts'));
      nodeFs.mkdirSync(path.join(root, 'src/b.ts'));
      nodeFs.writeFileSync(path.join(root, 'src/b.ts/inner.ts'), 'inner');
    });
    const kind = await s.scan();
    expect(s.listed).toContain('src');
    expect(kind.entries.has('src/b.ts/inner.ts')).toBe(true);
    expect(view(kind)).toEqual(view(await freshScan()));
  });

  it('never lists through a folder replaced by a link, even when its parent keeps its listing', async () => {
    const outside = await tempDir();
    try {
      await makeTree(outside, { 'secret.txt': 'outside the project' });
      await makeTree(root, { 'src/sub/a.ts': 'a', 'src/b.ts': 'b' });
      settleFolders();
      const s = scanner();
      await s.scan();
      keepFolderTime('src', () => {
        nodeFs.rmSync(path.join(root, 'src/sub'), { recursive: true });
        nodeFs.symlinkSync(outside, path.join(root, 'src/sub'));
      });
      const after = await s.scan();
      expect([...after.entries.keys()].some((p) => p.includes('secret'))).toBe(false);
      expect(s.listed).not.toContain('src/sub');
      expect(after.entries.has('src/b.ts')).toBe(true);
    } finally {
      await fs.rm(outside, { recursive: true, force: true });
    }
  });

  it('lists a folder again when its .gitignore rules change', async () => {
    await makeTree(root, { '.gitignore': '*.log\n', 'src/run.log': 'log', 'src/a.ts': 'a' });
    settleFolders();
    const s = scanner();
    expect((await s.scan()).entries.has('src/run.log')).toBe(false);
    keepFolderTime('', () => nodeFs.writeFileSync(path.join(root, '.gitignore'), '# nothing ignored\n'));
    const after = await s.scan();
    expect(s.listed.sort()).toEqual(['.', 'src']);
    expect(after.entries.has('src/run.log')).toBe(true);
  });

  it('lists dependency folders again when the project becomes a git repository', async () => {
    await makeTree(root, { 'pkg/node_modules/x.js': 'x', 'pkg/index.js': 'i' });
    settleFolders();
    const s = scanner();
    expect((await s.scan()).entries.has('pkg/node_modules/x.js')).toBe(false);
    await s.scan();
    expect(s.listed).toEqual([]);
    await fs.mkdir(path.join(root, '.git'));
    const after = await s.scan();
    expect(after.entries.has('pkg/node_modules/x.js')).toBe(true);
    expect(view(after)).toEqual(view(await freshScan()));
  });

  it('a repeat scan reusing settled listings stops at the walk limit where a fresh scan stops, at every limit', async () => {
    // Folders, ignored names, a .git entry: each one an entry the limit counts, listed or reused.
    await makeTree(root, { 'a.txt': 'a', 'b/1': '1', 'b/2': '2', 'b/c/3': '3', 'd/4': '4', 'd/e/5': '5', 'd/e/f/6': '6', 'd/.gitignore': '*.tmp\n', 'd/x.tmp': 'x', 'd/node_modules/m.js': 'm', '.git/HEAD': 'ref: refs/heads/main\n' });
    settleFolders();
    const all = (await freshScan()).list.length;
    let cut = 0;
    for (let limit = 1; limit <= 20; limit++) {
      const coverage = resolveCoverage({ maxWalkEntries: limit });
      const s = scanner({}, coverage);
      await s.scan();
      const again = await s.scan();
      const fresh = await scanTree(root, coverage);
      // Reused, every listing the first scan took in full: only the folder the limit stops at is tried again.
      expect(s.listed.every((rel) => fresh.unchecked.some((u) => u.path === rel)), `limit ${limit}: listed ${s.listed.join(', ')}`).toBe(true);
      expect(again.unchecked, `limit ${limit}`).toEqual(fresh.unchecked);
      expect(view(again), `limit ${limit}`).toEqual(view(fresh));
      if (fresh.partial) cut++;
    }
    // The limits tried cut the walk at every folder, and the last ones cut nothing.
    expect(cut).toBeGreaterThan(5);
    expect((await scanTree(root, resolveCoverage({ maxWalkEntries: 20 }))).list.length).toBe(all);
  });

  it('a folder whose entry could not be recorded keeps being listed, so the gap is reported every time', async () => {
    await makeTree(root, { 'src/a.ts': 'a' });
    nodeFs.writeFileSync(Buffer.concat([Buffer.from(`${root}/src/bad-`), Buffer.from([0xff]), Buffer.from('.ts')]), 'x');
    settleFolders();
    const s = scanner();
    const first = await s.scan();
    expect(first.gaps.some((g) => g.reason === 'unreadable-name')).toBe(true);
    const second = await s.scan();
    expect(s.listed).toContain('src');
    expect(second.gaps.some((g) => g.reason === 'unreadable-name')).toBe(true);
  });
});

describe('two-thread lstat of settled listings', () => {
  async function bigTree(): Promise<void> {
    const spec: Record<string, string> = {};
    for (let i = 0; i < PARALLEL_MIN_PATHS + 500; i++) spec[`d${i % 40}/sub${i % 7}/f${i}.txt`] = `file ${i}`;
    await makeTree(root, spec);
    await fs.symlink('d0', path.join(root, 'link-to-d0'));
    settleFolders();
  }

  async function warmed(): Promise<ParallelLstat> {
    const helper = new ParallelLstat();
    helper.warm();
    expect(await helper.ready()).toBe(true);
    expect(helper.parallel).toBe(true);
    return helper;
  }

  it('a scan with the helper thread matches a fresh scan, through edits, deletions, new files and contradicted listings', async () => {
    await bigTree();
    parallel = await warmed();
    const s = scanner({ parallel });
    await s.scan();
    expect(view(await s.scan())).toEqual(view(await freshScan()));
    expect(s.listed).toEqual([]);

    for (let i = 0; i < 60; i++) await fs.appendFile(path.join(root, `d${i % 40}/sub${i % 7}/f${i}.txt`), ' edited');
    await fs.rm(path.join(root, 'd5/sub5/f5.txt'));
    await fs.writeFile(path.join(root, 'd6/sub6/new.txt'), 'new');
    keepFolderTime('d7/sub0', () => nodeFs.rmSync(path.join(root, 'd7/sub0/f7.txt')));
    await fs.rm(path.join(root, 'link-to-d0'));
    await fs.symlink('d1', path.join(root, 'link-to-d0'));
    const after = await s.scan();
    expect(view(after)).toEqual(view(await freshScan()));
    expect(after.entries.has('d7/sub0/f7.txt')).toBe(false);
    expect(after.entries.get('link-to-d0')?.target).toBe('d1');
  });

  it('folders listed afresh (their listings not settled yet) take their files\' stats from the batch: the same scan as a fresh one, through edits, deletions, new files and a file become a link', async () => {
    const spec: Record<string, string> = {};
    for (let i = 0; i < PARALLEL_MIN_PATHS + 500; i++) spec[`d${i % 40}/sub${i % 7}/f${i}.txt`] = `file ${i}`;
    await makeTree(root, spec);
    unsettleFolders(root);
    parallel = await warmed();
    const batched: number[] = [];
    const lstatAll = parallel.lstatAll.bind(parallel);
    parallel.lstatAll = (at, rels) => {
      batched.push(rels.length);
      return lstatAll(at, rels);
    };
    const s = scanner({ parallel });
    await s.scan();
    const again = await s.scan();
    // Folders never settled (their mtimes ahead): every one is listed again, its files' stats taken in the batch.
    expect(s.listed.length).toBeGreaterThan(40);
    expect(batched).toEqual([again.list.length + s.listed.length]);
    expect(view(again)).toEqual(view(await freshScan()));
    for (let i = 0; i < 60; i++) await fs.appendFile(path.join(root, `d${i % 40}/sub${i % 7}/f${i}.txt`), ' edited');
    await fs.rm(path.join(root, 'd5/sub5/f5.txt'));
    await fs.writeFile(path.join(root, 'd6/sub6/new.txt'), 'new');
    await fs.rm(path.join(root, 'd8/sub1/f8.txt'));
    await fs.symlink('f48.txt', path.join(root, 'd8/sub1/f8.txt'));
    const after = await s.scan();
    expect(view(after)).toEqual(view(await freshScan()));
    expect(after.entries.get('d8/sub1/f8.txt')).toMatchObject({ type: 'symlink', target: 'f48.txt' });
    expect(after.entries.has('d5/sub5/f5.txt')).toBe(false);
  });

  it('a change made between the batch and the listing of its folder is seen by the next scan at the latest', async () => {
    const spec: Record<string, string> = {};
    for (let i = 0; i < PARALLEL_MIN_PATHS + 500; i++) spec[`d${i % 40}/sub${i % 7}/f${i}.txt`] = `file ${i}`;
    await makeTree(root, spec);
    // d3/sub3 must be listed afresh by the third scan, where the race is made.
    unsettleFolders(root);
    parallel = await warmed();
    let during: (() => void) | undefined;
    const s = scanner({ parallel }, resolveCoverage({}), (rel) => {
      if (rel === 'd3/sub3') during?.();
    });
    await s.scan();
    await s.scan();
    during = () => {
      during = undefined;
      nodeFs.appendFileSync(path.join(root, 'd3/sub3/f3.txt'), ' raced');
      nodeFs.rmSync(path.join(root, 'd3/sub3/f283.txt'));
      nodeFs.writeFileSync(path.join(root, 'd3/sub3/raced-new.txt'), 'new');
    };
    const raced = await s.scan();
    expect(raced.entries.has('d3/sub3/raced-new.txt')).toBe(true);
    expect(raced.entries.has('d3/sub3/f283.txt')).toBe(false);
    expect(view(await s.scan())).toEqual(view(await freshScan()));
  });

  it('a tree past one stat window (several windows on both threads) scans as a fresh scan does, through edits and deletions', async () => {
    await bigTree();
    const helper = new ParallelLstat({ windowPaths: PARALLEL_MIN_PATHS });
    parallel = helper;
    helper.warm();
    expect(await helper.ready()).toBe(true);
    const s = scanner({ parallel: helper });
    await s.scan();
    expect(view(await s.scan())).toEqual(view(await freshScan()));
    expect(s.listed).toEqual([]);
    for (let i = 0; i < 40; i++) await fs.appendFile(path.join(root, `d${i % 40}/sub${i % 7}/f${i}.txt`), ' edited');
    await fs.rm(path.join(root, 'd9/sub2/f2000.txt'), { force: true });
    keepFolderTime('d3/sub3', () => nodeFs.rmSync(path.join(root, 'd3/sub3/f3.txt')));
    const after = await s.scan();
    expect(view(after)).toEqual(view(await freshScan()));
    expect(after.entries.has('d3/sub3/f3.txt')).toBe(false);
  });

  it('gives the same scan after the helper is closed (every batch on the calling thread)', async () => {
    await bigTree();
    parallel = await warmed();
    const s = scanner({ parallel });
    await s.scan();
    await parallel.close();
    expect(parallel.parallel).toBe(false);
    await fs.appendFile(path.join(root, 'd1/sub1/f1.txt'), ' edited');
    expect(view(await s.scan())).toEqual(view(await freshScan()));
  });

  it('the second repeat scan of a big tree starts the helper for the next ones; a first scan and one repeat do not', async () => {
    await bigTree();
    parallel = new ParallelLstat();
    const s = scanner({ parallel });
    await s.scan();
    await s.scan();
    // No helper was started: ready() answers false at once (a started one would answer when online).
    expect(await parallel.ready()).toBe(false);
    expect(parallel.parallel).toBe(false);
    await s.scan();
    expect(await parallel.ready()).toBe(true);
    expect(parallel.parallel).toBe(true);
  });
});

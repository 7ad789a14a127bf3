import { execFileSync, spawn } from 'node:child_process';
import * as nodeFs from 'node:fs';
import * as path from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterEach, beforeEach, describe, expect, it, onTestFinished } from 'vitest';
import { PARALLEL_MIN_PATHS, ParallelLstat } from '../../src/fs/parallel-lstat.js';
import { tempFolder } from '../helpers/temp.js';
import { KIND_FAILED, KIND_FILE, KIND_FOLDER, KIND_MISSING, KIND_OTHER, KIND_SYMLINK, STAT_FIELDS, lstatInto, lstatJoinedInto } from '../../src/fs/stat-batch.js';

let dir: string;
let helper: ParallelLstat;
beforeEach(async () => {
  dir = await tempFolder('turnback-lstat-');
  helper = new ParallelLstat();
});
afterEach(async () => {
  await helper.close();
});

async function untilParallel(h: ParallelLstat): Promise<void> {
  h.warm();
  expect(await h.ready()).toBe(true);
  expect(h.parallel).toBe(true);
}

/** A helper program of the test's own, written as a real module file. */
function helperFile(name: string, source: string): URL {
  const file = path.join(dir, name);
  nodeFs.writeFileSync(file, `import { parentPort } from 'node:worker_threads';\n${source}\n`);
  return pathToFileURL(file);
}

/** Every kind of entry (relative to `dir`), repeated past the batch threshold so the helper thread takes part. */
function mixedPaths(): string[] {
  nodeFs.writeFileSync(path.join(dir, 'file'), 'hello');
  nodeFs.chmodSync(path.join(dir, 'file'), 0o640);
  nodeFs.symlinkSync('file', path.join(dir, 'link'));
  nodeFs.mkdirSync(path.join(dir, 'folder'));
  execFileSync('mkfifo', [path.join(dir, 'fifo')]);
  const kinds = ['file', 'link', 'folder', 'fifo', 'missing', 'file/below-a-file', 'link/x', ''];
  const paths: string[] = [];
  while (paths.length < PARALLEL_MIN_PATHS * 2) paths.push(...kinds);
  return paths;
}

describe('lstatJoinedInto (the helper thread\'s form of a batch)', () => {
  it('gives number for number what lstatInto gives for the same paths joined by NUL, the base itself and a last path included', () => {
    const paths = [...mixedPaths().slice(0, 40), 'file'];
    const one = new Float64Array(paths.length * STAT_FIELDS);
    lstatInto(dir, paths, 0, paths.length, one);
    const joined = new Float64Array(paths.length * STAT_FIELDS);
    lstatJoinedInto(dir, paths.join('\0'), paths.length, joined);
    expect(Array.from(joined)).toEqual(Array.from(one));
    expect(new Set(Array.from({ length: paths.length }, (_, i) => one[i * STAT_FIELDS]))).toEqual(new Set([KIND_FILE, KIND_SYMLINK, KIND_FOLDER, KIND_OTHER, KIND_MISSING]));
  });
});

describe('ParallelLstat', () => {
  it('a batch past one window goes window after window on both threads, number for number what one thread gives', async () => {
    const paths = mixedPaths();
    nodeFs.writeFileSync(path.join(dir, 'other'), 'other file');
    // Four windows and a ragged end: the windows split evenly, every path answered once in place.
    while (paths.length < PARALLEL_MIN_PATHS * 7 + 13) paths.push('other', 'file', 'missing');
    const windowed = new ParallelLstat({ windowPaths: PARALLEL_MIN_PATHS * 2 });
    try {
      await untilParallel(windowed);
      const one = new Float64Array(paths.length * STAT_FIELDS);
      lstatInto(dir, paths, 0, paths.length, one);
      expect(Array.from(await windowed.lstatAll(dir, paths))).toEqual(Array.from(one));
      // Again, with the split retuned by the last batch's timings.
      expect(Array.from(await windowed.lstatAll(dir, paths))).toEqual(Array.from(one));
      // A window's helper share that fails is done on the calling thread (the helper closed under it).
      const pending = windowed.lstatAll(dir, paths);
      await windowed.close();
      expect(Array.from(await pending)).toEqual(Array.from(one));
    } finally {
      await windowed.close();
    }
  });

  it('lets the helper thread go once a batch past one window is answered, and starts it again for the next batch', async () => {
    const paths = mixedPaths();
    while (paths.length < PARALLEL_MIN_PATHS * 5) paths.push('file', 'missing');
    const one = new Float64Array(paths.length * STAT_FIELDS);
    lstatInto(dir, paths, 0, paths.length, one);
    const threads = (): number => Number(/^Threads:\s+(\d+)/m.exec(nodeFs.readFileSync('/proc/self/status', 'utf8'))?.[1]);
    const without = threads();
    const windowed = new ParallelLstat({ windowPaths: PARALLEL_MIN_PATHS * 2 });
    try {
      await untilParallel(windowed);
      expect(threads()).toBeGreaterThan(without);
      expect(Array.from(await windowed.lstatAll(dir, paths))).toEqual(Array.from(one));
      // Let go: its thread ends, and a batch may still use it.
      expect(windowed.dormant).toBe(true);
      expect(windowed.parallel).toBe(true);
      expect(await windowed.ready()).toBe(false);
      expect(threads()).toBe(without);
      // Repeat scans counted meanwhile do not start it (the picture is being persisted).
      windowed.noteRepeatScan();
      windowed.noteRepeatScan();
      expect(windowed.dormant).toBe(true);
      // The next big batch starts it again while this thread takes the first window, then uses it.
      expect(Array.from(await windowed.lstatAll(dir, paths))).toEqual(Array.from(one));
      expect(windowed.dormant).toBe(true);
      // A batch of one window starts it without waiting for it, and keeps it running.
      const small = paths.slice(0, PARALLEL_MIN_PATHS + 7);
      expect(Array.from(await windowed.lstatAll(dir, small))).toEqual(Array.from(one.subarray(0, small.length * STAT_FIELDS)));
      expect(windowed.dormant).toBe(false);
      expect(await windowed.ready()).toBe(true);
      expect(Array.from(await windowed.lstatAll(dir, small))).toEqual(Array.from(one.subarray(0, small.length * STAT_FIELDS)));
      expect(windowed.parallel).toBe(true);
      await windowed.close();
      expect(windowed.parallel).toBe(false);
      expect(windowed.dormant).toBe(false);
    } finally {
      await windowed.close();
    }
  });

  it('classifies every kind the same on both threads, and matches lstat', async () => {
    const paths = mixedPaths();
    await untilParallel(helper);
    const both = await helper.lstatAll(dir, paths);
    const one = new Float64Array(paths.length * STAT_FIELDS);
    lstatInto(dir, paths, 0, paths.length, one);
    expect(Array.from(both)).toEqual(Array.from(one));
    const kindOf = (i: number): number => both[i * STAT_FIELDS] as number;
    expect([0, 1, 2, 3, 4, 5, 6, 7].map(kindOf)).toEqual([KIND_FILE, KIND_SYMLINK, KIND_FOLDER, KIND_OTHER, KIND_MISSING, KIND_MISSING, KIND_MISSING, KIND_FOLDER]);
    const stats = nodeFs.lstatSync(path.join(dir, 'file'));
    // The last copy of the file's row came from the helper thread.
    const last = paths.lastIndexOf('file') * STAT_FIELDS;
    expect(Array.from(both.subarray(last, last + STAT_FIELDS))).toEqual([KIND_FILE, 0o640, 5, stats.mtimeMs, stats.ino]);
  });

  it('a batch of other paths after a batch (same length, or the same array changed) is statted afresh, not from the last one', async () => {
    const paths = mixedPaths();
    nodeFs.writeFileSync(path.join(dir, 'other'), 'other file');
    for (const parallel of [false, true]) {
      const h = new ParallelLstat();
      try {
        if (parallel) await untilParallel(h);
        const expectedOf = (rels: string[]): number[] => {
          const out = new Float64Array(rels.length * STAT_FIELDS);
          lstatInto(dir, rels, 0, rels.length, out);
          return Array.from(out);
        };
        expect(Array.from(await h.lstatAll(dir, paths))).toEqual(expectedOf(paths));
        const changed = [...paths];
        changed[1] = 'other';
        changed[changed.length - 1] = 'other';
        expect(Array.from(await h.lstatAll(dir, changed))).toEqual(expectedOf(changed));
        const reused = changed;
        reused[0] = 'missing';
        expect(Array.from(await h.lstatAll(dir, reused))).toEqual(expectedOf(reused));
        expect(Array.from(await h.lstatAll(dir, paths.slice(0, -1)))).toEqual(expectedOf(paths.slice(0, -1)));
      } finally {
        await h.close();
      }
    }
  });

  it('reports a path that cannot be statted as failed, not missing, on both threads', async () => {
    nodeFs.symlinkSync('loop', path.join(dir, 'loop'));
    const bad = ['loop/x', 'n'.repeat(300)];
    const paths: string[] = [];
    while (paths.length < PARALLEL_MIN_PATHS * 2) paths.push(...bad);
    await untilParallel(helper);
    const out = await helper.lstatAll(dir, paths);
    for (const i of [0, 1, paths.length - 2, paths.length - 1]) expect(out[i * STAT_FIELDS]).toBe(KIND_FAILED);
  });

  it('a helper that dies in the middle of a batch leaves the batch complete (its part redone here), and is not used again', async () => {
    const paths = mixedPaths();
    const dying = new ParallelLstat({ helperUrl: helperFile('dying.mjs', "parentPort.on('message', () => process.exit(3));") });
    try {
      await untilParallel(dying);
      const expected = new Float64Array(paths.length * STAT_FIELDS);
      lstatInto(dir, paths, 0, paths.length, expected);
      expect(Array.from(await dying.lstatAll(dir, paths))).toEqual(Array.from(expected));
      expect(dying.parallel).toBe(false);
      expect(Array.from(await dying.lstatAll(dir, paths))).toEqual(Array.from(expected));
    } finally {
      await dying.close();
    }
  });

  it('a helper that answers with the wrong shape is ignored for that batch', async () => {
    const paths = mixedPaths();
    const wrong = new ParallelLstat({
      helperUrl: helperFile('wrong.mjs', "parentPort.on('message', () => { const out = new Float64Array(3); parentPort.postMessage(out, [out.buffer]); });"),
    });
    try {
      await untilParallel(wrong);
      const expected = new Float64Array(paths.length * STAT_FIELDS);
      lstatInto(dir, paths, 0, paths.length, expected);
      expect(Array.from(await wrong.lstatAll(dir, paths))).toEqual(Array.from(expected));
    } finally {
      await wrong.close();
    }
  });

  it('runs every batch on the calling thread before warm and after close', async () => {
    const paths = mixedPaths();
    expect(helper.parallel).toBe(false);
    const cold = await helper.lstatAll(dir, paths);
    await untilParallel(helper);
    await helper.close();
    expect(helper.parallel).toBe(false);
    const closed = await helper.lstatAll(dir, paths);
    expect(Array.from(closed)).toEqual(Array.from(cold));
    helper.warm(); // closed for good: warming again starts nothing
    expect(helper.parallel).toBe(false);
  });

  it('an observer left open with a warm helper does not keep its process alive', async () => {
    // Past the threshold, so the first picture warms the helper and the second uses it.
    for (let i = 0; i < PARALLEL_MIN_PATHS + 100; i++) {
      nodeFs.mkdirSync(path.join(dir, 'project', `d${i % 20}`), { recursive: true });
      nodeFs.writeFileSync(path.join(dir, 'project', `d${i % 20}`, `f${i}.txt`), `${i}`);
    }
    const script = path.join(dir, 'child.mjs');
    nodeFs.writeFileSync(
      script,
      `const { openStore, openObserver } = await import(process.env.TURNBACK_DIST);
      const [project, storeDir] = process.argv.slice(2);
      const store = await openStore(storeDir, { projectRoot: project });
      const observer = openObserver(store, { sessionId: 's' });
      for (const id of ['one', 'two', 'three']) { await observer.callBegin(id); await observer.callEnd(id); }
      console.log('pictured');`,
    );
    const dist = path.resolve(path.dirname(new URL(import.meta.url).pathname), '../../dist/admin.js');
    const child = spawn(process.execPath, [script, path.join(dir, 'project'), path.join(dir, 'store')], {
      env: { ...process.env, TURNBACK_DIST: dist },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    let err = '';
    child.stdout.on('data', (chunk: Buffer) => (out += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (err += chunk.toString()));
    // A helper that held the process would never let it exit: the test's time-out says so, and
    // the child does not outlive the test.
    onTestFinished(() => void child.kill('SIGKILL'));
    const [code, signal] = await new Promise<[number | null, NodeJS.Signals | null]>((resolve) => child.on('exit', (c, s) => resolve([c, s])));
    expect(err).toBe('');
    expect(signal).toBeNull();
    expect(code).toBe(0);
    expect(out.trim()).toBe('pictured');
  }, 90_000);
});

// The store's size on disk (issue #28): 21 pictures of prettier's repository, turnback's store
// against a shadow git repository of the same tree, side by side in one run, both measured with
// `du -sk` — git's after `git gc` (its packed form, the fair comparison).
//
// The sequence is the bar's of issue #3: a first picture, then 20 pictures after 10 edited files
// each (bench/tree.mjs `editFiles`: a line appended to 10 files chosen from the round number).
// Both sides see the same trees: each round, turnback's call brackets the edit and git commits
// the tree the call's after picture saw (`add -A && commit`, GIT_DIR outside the tree).
//
// prettier comes from a local git repository named by TURNBACK_BENCH_PRETTIER (a bare git dir or
// a clone; `fetch github:prettier/prettier` gives one), checked out at TURNBACK_BENCH_PRETTIER_REF
// (default its HEAD) into a temp clone that shares its objects; nothing is written to it.
import { spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { fmtMs, git, say, timeAsync, timeSync } from './lib.mjs';
import { editFiles } from './tree.mjs';

const ROUNDS = 20;
const EDITS_PER_ROUND = 10;
const GOAL = 0.6;

/** KiB on disk of `target` as `du -sk` counts it (folders included), or NaN when it is absent. */
function duKib(target) {
  const result = spawnSync('du', ['-sk', target], { encoding: 'utf8' });
  if (result.status !== 0) return Number.NaN;
  return Number(result.stdout.split('\t')[0]);
}

/** KiB on disk of the named files and folders under `dir` (`du -skc`), 0 when there are none. */
function duKibOf(dir, names) {
  if (names.length === 0) return 0;
  const result = spawnSync('du', ['-skc', ...names], { cwd: dir, encoding: 'utf8' });
  const total = result.stdout.trim().split('\n').at(-1) ?? '';
  return Number(total.split('\t')[0]);
}

/** Files of `dir` whose names pass `test` (empty when `dir` is absent). */
function namesIn(dir, test) {
  try {
    return fs.readdirSync(dir).filter(test);
  } catch {
    return [];
  }
}

/** Where the store's bytes are, by part, in KiB (`du`, so folders and block rounding are counted). */
export function storeParts(storeDir) {
  const packs = path.join(storeDir, 'objects', 'packs');
  const state = path.join(storeDir, 'state');
  const checkpoints = path.join(storeDir, 'checkpoints');
  const parts = {
    packs: duKibOf(packs, namesIn(packs, (n) => n.endsWith('.pack'))),
    'pack indexes': duKibOf(packs, namesIn(packs, (n) => n.endsWith('.idx'))),
    'loose objects': duKib(path.join(storeDir, 'objects', 'v1')),
    'picture bases': duKibOf(state, namesIn(state, (n) => n.startsWith('pic-'))),
    'scan index': duKibOf(state, namesIn(state, (n) => n.startsWith('scan-index'))),
    'stat cache': duKibOf(state, namesIn(state, (n) => n.startsWith('stat-cache'))),
    'other state': duKibOf(state, namesIn(state, (n) => !/^(pic-|scan-index|stat-cache)/.test(n))),
    manifests: duKibOf(checkpoints, namesIn(checkpoints, (n) => n.endsWith('.json'))),
    journals: duKibOf(checkpoints, namesIn(checkpoints, (n) => n.endsWith('.journal'))),
  };
  const total = duKib(storeDir);
  const counted = Object.values(parts).reduce((sum, kib) => sum + (Number.isFinite(kib) ? kib : 0), 0);
  parts['folders and the rest'] = total - counted;
  return { total, parts };
}

/** Where shadow git's bytes are, in KiB. */
function gitParts(gitDir) {
  const packDir = path.join(gitDir, 'objects', 'pack');
  const parts = {
    pack: duKibOf(packDir, namesIn(packDir, (n) => n.endsWith('.pack'))),
    'pack index': duKibOf(packDir, namesIn(packDir, (n) => n.endsWith('.idx'))),
    index: duKibOf(gitDir, ['index']),
  };
  const total = duKib(gitDir);
  parts['hooks, logs, refs, folders'] = total - parts.pack - parts['pack index'] - parts.index;
  return { total, parts };
}

const describeParts = (parts) =>
  Object.entries(parts)
    .filter(([, kib]) => kib !== 0)
    .map(([name, kib]) => `${name} ${kib.toLocaleString('en-US')}`)
    .join(', ');

/** A temp clone of prettier at the bench's commit, sharing the source's objects; undefined when there is none. */
function prettierTree(temp) {
  const source = process.env.TURNBACK_BENCH_PRETTIER;
  if (source === undefined || source === '') return undefined;
  const tree = temp.path('store-size-prettier');
  const clone = spawnSync('git', ['clone', '-q', '--shared', '--no-checkout', path.resolve(source), tree], { encoding: 'utf8' });
  if (clone.status !== 0) throw new Error(`cannot clone ${source}: ${clone.stderr}`);
  const ref = process.env.TURNBACK_BENCH_PRETTIER_REF || 'HEAD';
  const checkout = spawnSync('git', ['-C', tree, 'checkout', '-q', '--detach', ref], { encoding: 'utf8' });
  if (checkout.status !== 0) throw new Error(`cannot check out ${ref}: ${checkout.stderr}`);
  const commit = spawnSync('git', ['-C', tree, 'rev-parse', '--short=10', 'HEAD'], { encoding: 'utf8' }).stdout.trim();
  const files = spawnSync('git', ['-C', tree, 'ls-files', '-z'], { encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 }).stdout.split('\0').filter(Boolean).sort();
  return { tree, commit, files };
}

/** The store-size section: see the top of this file. */
export async function benchStoreSize({ temp, row, notes, openObserver }) {
  say('\n## store size: 21 pictures of prettier, turnback store vs shadow git after git gc (du -sk)');
  const prettier = prettierTree(temp);
  if (prettier === undefined) {
    row('store size after 21 pictures of prettier: turnback / git gc', 'not measured: set TURNBACK_BENCH_PRETTIER to a git repository of prettier', `≤ ${GOAL.toFixed(2)}`, 'MISS');
    return;
  }
  const { tree, commit, files } = prettier;
  say(`  prettier ${commit}: ${files.length.toLocaleString('en-US')} tracked files`);
  const storeDir = temp.path('store-size-store');
  const gitDir = temp.path('store-size-shadow.git');
  const env = { GIT_DIR: gitDir, GIT_WORK_TREE: tree };
  git(['init', '-q'], { env });
  // A time budget no loaded machine reaches: past it clean tracked files rest on git's blobs, and
  // the store would measure something else than the sequence (the copies of 21 pictures).
  const { store, observer } = await openObserver(tree, storeDir, { coverage: { maxPictureSeconds: 600 } });
  let tbMs = 0;
  let gitMs = 0;
  let attributed = 0;
  const commitAll = (message) => {
    gitMs += timeSync(() => {
      git(['add', '-A'], { env });
      git(['commit', '-q', '--no-verify', '-m', message], { env });
    });
  };
  tbMs += await timeAsync(async () => {
    const first = await observer.callBegin('first');
    if (first.partial) notes.push(`store size: the first picture was partial (${first.summary}).`);
    await observer.callEnd('first');
  });
  commitAll('first');
  for (let round = 1; round <= ROUNDS; round++) {
    const id = `round-${round}`;
    tbMs += await timeAsync(() => observer.callBegin(id));
    editFiles(tree, files, EDITS_PER_ROUND, round);
    tbMs += await timeAsync(async () => {
      const attribution = await observer.callEnd(id);
      attributed += attribution.changes.length;
    });
    commitAll(id);
  }
  await observer.close();
  await store.close();
  const gcMs = timeSync(() => git(['gc', '-q'], { env }));
  const ours = storeParts(storeDir);
  const theirs = gitParts(gitDir);
  const ratio = ours.total / theirs.total;
  say(`  turnback ${ours.total} KiB (${describeParts(ours.parts)})`);
  say(`  git      ${theirs.total} KiB (${describeParts(theirs.parts)})`);
  row('store size, 21 pictures of prettier: turnback store (du -sk)', `${ours.total.toLocaleString('en-US')} KiB: ${describeParts(ours.parts)}`);
  row('store size, 21 pictures of prettier: shadow git after git gc (du -sk)', `${theirs.total.toLocaleString('en-US')} KiB: ${describeParts(theirs.parts)}`);
  row('store size, 21 pictures of prettier: turnback / git gc', `${ratio.toFixed(3)}×`, `≤ ${GOAL.toFixed(2)}`, ratio <= GOAL ? 'PASS' : 'MISS');
  row('store size sequence, time: turnback calls / git add+commit (git gc apart)', `${fmtMs(tbMs)} / ${fmtMs(gitMs)} (gc ${fmtMs(gcMs)})`);
  if (attributed !== ROUNDS * EDITS_PER_ROUND) notes.push(`store size: ${attributed} changes attributed over the ${ROUNDS} rounds (expected ${ROUNDS * EDITS_PER_ROUND}).`);
  notes.push(
    `store size: prettier ${commit} (${files.length.toLocaleString('en-US')} files), a first picture and ${ROUNDS} calls editing ${EDITS_PER_ROUND} files each (issue #3's sequence, bench/tree.mjs editFiles), observer.callBegin/callEnd in process; git: GIT_DIR outside the tree, add -A && commit per picture, then git gc; both du -sk.`,
  );
}

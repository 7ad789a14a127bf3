// The picture sections of the benchmark report (issue #3): pictures of a 10,000-file tree against
// a shadow git repository, and the memory of a picture of a 100,000-file tree.
import { spawnSync } from 'node:child_process';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';
import { collect, diskUsage, fmtBytes, fmtMs, fmtRatio, git, median, say, shadowEnv, timeAsync, timeSync } from './lib.mjs';
import { editFiles, generateTree } from './tree.mjs';

const verdict = (ok) => (ok ? 'PASS' : 'MISS');

// ---------------------------------------------------------------------------------------------
// 3. Pictures vs a shadow git repository.
export async function benchPictures({ temp, row, notes, quick, openObserver }) {
  say('\n## pictures: 10,000-file tree, callBegin/callEnd vs shadow git (GIT_DIR outside the tree)');
  const tree = temp.dir('pictures-tree');
  let gen;
  const genMs = timeSync(() => (gen = generateTree(tree, { files: 10_000, seed: 42 })));
  say(`  generated ${gen.files.length} files (${gen.covered.length} not ignored), ${fmtBytes(gen.bytes)}, ${gen.folders} folders in ${fmtMs(genMs)}`);
  const reps = quick ? 1 : 2;
  const K = quick ? 3 : 6;
  const rounds = 20;
  const gitFirst = [];
  const tbFirst = [];
  const gitNoop = [];
  const tbNoopBegin = [];
  const tbNoopEnd = [];
  const callInProcess = [];
  const callShell = [];
  const shellAlone = [];
  let sizes;
  let editRound = 0;
  let partial = false;
  for (let rep = 0; rep < reps; rep++) {
    const gitDir = temp.path(`shadow-git-${rep}`);
    const env = shadowEnv(gitDir, tree);
    const storeDir = temp.path(`pictures-store-${rep}`);
    const doGit = () => {
      git(['init', '-q'], { env });
      collect();
      gitFirst.push(
        timeSync(() => {
          git(['add', '-A'], { env });
          git(['commit', '-q', '--no-verify', '-m', 'first'], { env });
        }),
      );
      for (let k = 0; k < K; k++) {
        gitNoop.push(
          timeSync(() => {
            git(['add', '-A'], { env });
            git(['write-tree'], { env });
          }),
        );
      }
    };
    let opened;
    const doTurnback = async () => {
      opened = await openObserver(tree, storeDir);
      collect();
      let begin;
      tbFirst.push(await timeAsync(async () => (begin = await opened.observer.callBegin(`first-${rep}`))));
      partial ||= begin.partial;
      if (begin.partial) say(`  first picture partial: ${begin.summary}`);
      tbNoopEnd.push(await timeAsync(() => opened.observer.callEnd(`first-${rep}`)));
      for (let k = 0; k < K; k++) {
        tbNoopBegin.push(await timeAsync(() => opened.observer.callBegin(`noop-${rep}-${k}`)));
        tbNoopEnd.push(await timeAsync(() => opened.observer.callEnd(`noop-${rep}-${k}`)));
      }
    };
    if (rep % 2 === 0) {
      doGit();
      await doTurnback();
    } else {
      await doTurnback();
      doGit();
    }
    say(`  rep ${rep}: first git ${fmtMs(gitFirst.at(-1))} / turnback ${fmtMs(tbFirst.at(-1))}; nothing changed git ${fmtMs(median(gitNoop.slice(-K)))} / turnback ${fmtMs(median(tbNoopBegin.slice(-K)))}`);
    if (rep === 0) {
      // 20 pictures with 10 edited files each, then compare store sizes.
      for (let r = 0; r < rounds; r++) {
        editFiles(tree, gen.covered, 10, ++editRound);
        git(['add', '-A'], { env });
        git(['commit', '-q', '--no-verify', '-m', `round ${r}`], { env });
      }
      const { observer } = opened;
      // The git side's 20 rounds above edited 200 files behind turnback's back: one untimed call
      // takes them in, so each timed call below is what the goal names, a call around a command
      // that changes 10 files (not one that also absorbs 200 outside edits).
      await observer.callBegin('absorb-outside-edits');
      await observer.callEnd('absorb-outside-edits');
      for (let r = 0; r < rounds; r++) {
        const id = `round-${r}`;
        let attribution;
        callInProcess.push(
          await timeAsync(async () => {
            await observer.callBegin(id);
            editFiles(tree, gen.covered, 10, ++editRound);
            attribution = await observer.callEnd(id);
          }),
        );
        if (attribution.changes.length !== 10) say(`  call ${id}: ${attribution.changes.length} changes attributed (expected 10)`);
      }
      const storeUse = diskUsage(storeDir);
      const gitUse = diskUsage(gitDir);
      git(['gc', '-q'], { env });
      const gitPacked = diskUsage(gitDir);
      sizes = { storeUse, gitUse, gitPacked };
      // The same call with the change made by a spawned shell.
      for (let r = 0; r < (quick ? 3 : 7); r++) {
        const id = `shell-${r}`;
        const targets = gen.covered.filter((p) => p !== '.gitignore').slice(100 + r * 10, 110 + r * 10);
        const script = targets.map((p) => `echo "// shell ${r}" >> '${p}'`).join('; ');
        callShell.push(
          await timeAsync(async () => {
            await observer.callBegin(id, { command: 'sh -c edits' });
            shellAlone.push(timeSync(() => spawnSync('sh', ['-c', script], { cwd: tree })));
            await observer.callEnd(id);
          }),
        );
      }
    }
    await opened.observer.close();
    await opened.store.close();
  }
  const noop = median(tbNoopBegin);
  const gitNoopMed = median(gitNoop);
  row('picture, nothing changed (callBegin, same process)', `${fmtMs(noop)} (callEnd ${fmtMs(median(tbNoopEnd))})`, '≤ 45 ms', verdict(noop <= 45));
  row('shadow git add -A && write-tree, nothing changed', fmtMs(gitNoopMed), '—');
  row('picture nothing changed: turnback / git', fmtRatio(noop / gitNoopMed), '< 1', verdict(noop < gitNoopMed));
  const firstRatio = median(tbFirst) / median(gitFirst);
  row('first picture into an empty store (callBegin)', fmtMs(median(tbFirst)), '—');
  row('shadow git first add -A && commit', fmtMs(median(gitFirst)), '—');
  row('first picture: turnback / git', fmtRatio(firstRatio), '≤ 0.30', verdict(firstRatio <= 0.3));
  if (sizes) {
    const sizeRatio = sizes.storeUse.bytes / sizes.gitUse.bytes;
    row('store on disk after first + 20×10 edits: turnback', `${fmtBytes(sizes.storeUse.bytes)} (${sizes.storeUse.files} files)`);
    row('store on disk: shadow git (loose objects)', `${fmtBytes(sizes.gitUse.bytes)} (${sizes.gitUse.files} files; after git gc ${fmtBytes(sizes.gitPacked.bytes)})`);
    row('store size: turnback / git', fmtRatio(sizeRatio), '≤ 0.60', verdict(sizeRatio <= 0.6));
    const call = median(callInProcess);
    row('callBegin + callEnd, 10 files changed in-process', fmtMs(call), '≤ 60 ms', verdict(call <= 60));
    row('callBegin + callEnd, 10 files changed by spawned sh -c', `${fmtMs(median(callShell))} (sh alone ${fmtMs(median(shellAlone))})`, '—');
  }
  notes.push(
    `pictures: tree of ${gen.files.length} files (${gen.covered.length} not ignored by .gitignore), ${fmtBytes(gen.bytes)}, seed 42; git runs as separate processes (spawnSync, process start included), default config with gc.auto=0; disk usage = sum of st_blocks×512 over regular files.${partial ? ' WARNING: a first picture was partial.' : ''}`,
  );
}

// ---------------------------------------------------------------------------------------------
// 3b. Memory of a picture of a 100,000-file tree, in a child process.
export async function benchMemory({ temp, row, notes }) {
  say('\n## memory: picture of a 100,000-file tree in a child process');
  const tree = temp.dir('memory-tree');
  let gen;
  const genMs = timeSync(() => (gen = generateTree(tree, { files: 100_000, seed: 7, tiny: true, ignoredFiles: 100, logFiles: 0 })));
  say(`  generated ${gen.files.length} tiny files in ${gen.folders} folders in ${fmtMs(genMs)}`);
  const child = path.join(path.dirname(fileURLToPath(import.meta.url)), 'picture-child.mjs');
  const spawnOptions = { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'], maxBuffer: 16 * 1024 * 1024 };
  const idle = spawnSync(process.execPath, ['--no-warnings', child, tree, temp.path('memory-idle-store'), 'idle'], spawnOptions);
  const idleKb = JSON.parse(idle.stdout?.trim().split('\n').at(-1) || '{}').idleMaxRssKb ?? Number.NaN;
  const run = spawnSync(process.execPath, ['--no-warnings', child, tree, temp.path('memory-store')], { ...spawnOptions, timeout: 240_000 });
  say(`  child exit ${run.status ?? run.signal}${run.error ? ` (${run.error.message})` : ''}`);
  const line = run.stdout?.trim().split('\n').at(-1);
  if (run.status !== 0 || !line) {
    row('picture of 100,000 files: peak RSS', `child failed (${run.signal ?? run.status}${run.error ? `, ${run.error.message}` : ''})`, '< 200 MB', 'MISS');
    return;
  }
  const result = JSON.parse(line);
  const mib = result.maxRssKb / 1024;
  // The goal is in MB (10^6 bytes): 200 MB is 190.7 MiB.
  const mb = (result.maxRssKb * 1024) / 1e6;
  row('picture of 100,000 files: child peak RSS (maxRSS)', `${mb.toFixed(0)} MB = ${mib.toFixed(0)} MiB (idle node + library ${(idleKb / 1024).toFixed(0)} MiB)`, '< 200 MB', verdict(mb < 200));
  row('picture of 100,000 files: first / second picture time', `${fmtMs(result.firstMs)} / ${fmtMs(result.secondMs)}${result.partial ? ` (partial: ${result.summary})` : ''}`);
  // The same with two more pictures: a session's repeat pictures (the helper thread of repeat
  // pictures stays off above 50,000 paths, so this is the calling thread's cost).
  const three = spawnSync(process.execPath, ['--no-warnings', child, tree, temp.path('memory-store-3'), 'three'], { ...spawnOptions, timeout: 240_000 });
  const threeLine = three.stdout?.trim().split('\n').at(-1);
  if (three.status === 0 && threeLine) {
    const r3 = JSON.parse(threeLine);
    row('picture of 100,000 files, four pictures: peak RSS', `${((r3.maxRssKb * 1024) / 1e6).toFixed(0)} MB; third + fourth ${fmtMs(r3.thirdMs)}`, '—');
  } else {
    row('picture of 100,000 files, four pictures: peak RSS', `child failed (${three.signal ?? three.status})`, '—');
  }
  notes.push('memory: 100,000 files of 16–64 B; the child raises maxPictureFiles/maxWalkEntries/maxPictureSeconds so the whole tree is pictured (defaults stop at 10,000 copied files); peak RSS after callBegin (first picture, empty store) and callEnd (second picture).');
}


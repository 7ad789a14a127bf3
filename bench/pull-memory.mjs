// Memory of a pull (issue #31: pulling a 300 MiB bundle cost 984 MiB). Two remotes of about
// 300 MiB each are pushed to a directory backend: one turn of 38 incompressible 8 MiB files (ten
// bundles of 32 MiB, the push's batch) and one turn of a single 300 MiB file (max_file_mib = 1024:
// one object, so one bundle of 300 MiB). Each is pulled into a clone by a fresh process per build
// given, and that process's peak RSS is printed beside the bundle bytes it pulled. Run side by side
// against the build before the streaming pull (bf25483^) to see the ratio it changed:
//
//   node bench/pull-memory.mjs dist /tmp/old-audit-5/dist
//
// Peak RSS is the pulling process's VmHWM. The builds are folders holding admin.js and remote.js (a `npx tsup` output).
import { execFileSync, spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { pathToFileURL } from 'node:url';
import { TempRoot, fmtBytes } from './lib.mjs';

const MIB = 1024 * 1024;
const builds = process.argv.slice(2).map((dir) => path.resolve(dir));
if (builds.length === 0) {
  console.error('usage: node bench/pull-memory.mjs DIST [DIST…]');
  process.exit(2);
}
// The remote is written by the first build given; every build reads the same bundles.
const writer = builds[0];
const { openStore, openObserver, resolveCheckpointConfig } = await import(pathToFileURL(path.join(writer, 'admin.js')).href);
const { DirectoryBackend, pushCheckpoints, workspaceIdentity } = await import(pathToFileURL(path.join(writer, 'remote.js')).href);

const gitIn = (cwd, ...args) => execFileSync('git', ['-c', 'user.email=b@example.com', '-c', 'user.name=b', ...args], { cwd, encoding: 'utf8' });

/** A committed project whose one turn writes `files` (name → size) of random bytes, pushed to a remote of its own. */
async function pushed(temp, name, files) {
  const project = temp.path(`${name}-project`);
  fs.mkdirSync(project, { recursive: true });
  fs.writeFileSync(path.join(project, 'a.txt'), 'a\n');
  gitIn(project, 'init', '-q');
  gitIn(project, 'add', '-A');
  gitIn(project, 'commit', '-qm', 'first');
  const store = await openStore(temp.path(`${name}-store`), { projectRoot: project });
  const config = resolveCheckpointConfig({ enabled: true, max_file_mib: 1024 });
  // Two turns: a checkpoint holds what came before, so the files' bytes are in the second one.
  const write = openObserver(store, { sessionId: 'bench', config });
  await write.callBegin('write');
  for (const [file, size] of Object.entries(files)) fs.writeFileSync(path.join(project, file), randomBytes(size));
  await write.callEnd('write');
  await write.close();
  const remove = openObserver(store, { sessionId: 'bench', config });
  await remove.callBegin('remove');
  for (const file of Object.keys(files)) fs.rmSync(path.join(project, file));
  await remove.callEnd('remove');
  await remove.close();
  const remote = temp.path(`${name}-remote`);
  const report = await pushCheckpoints(store, await DirectoryBackend.open(remote), await workspaceIdentity(project));
  await store.close();
  const clone = temp.path(`${name}-clone`);
  gitIn(temp.root, 'clone', '-q', project, clone);
  return { remote, clone, bundles: report.bundles, bytes: report.bytes };
}

/** Pulls `remote` into a new store of `clone` with `dist`, in a process of its own: its peak RSS. */
function pullPeak(temp, dist, remote, clone, label) {
  const script = temp.path('pull.mjs');
  fs.writeFileSync(
    script,
    `import * as fs from 'node:fs';
    const { openStore } = await import(${JSON.stringify(pathToFileURL(path.join(dist, 'admin.js')).href)});
    const { DirectoryBackend, pullCheckpoints, workspaceIdentity } = await import(${JSON.stringify(pathToFileURL(path.join(dist, 'remote.js')).href)});
    const [project, storeDir, remote] = process.argv.slice(2);
    const store = await openStore(storeDir, { projectRoot: project });
    const report = await pullCheckpoints(store, await DirectoryBackend.open(remote), await workspaceIdentity(project));
    await store.close();
    // VmHWM, not resourceUsage().maxRSS: Linux carries ru_maxrss over from the forked parent across exec.
    const hwm = Number(/VmHWM:\\s+(\\d+) kB/.exec(fs.readFileSync('/proc/self/status', 'utf8'))[1]);
    console.log(JSON.stringify({ pulled: report.pulled.length, objects: report.objects, peakKib: hwm }));`,
  );
  const child = spawnSync(process.execPath, [script, clone, temp.path(`store-${label}`), remote], { encoding: 'utf8' });
  if (child.status !== 0) throw new Error(`pull with ${dist} failed: ${child.stderr}`);
  return JSON.parse(child.stdout);
}

const temp = new TempRoot();
try {
  const many = await pushed(temp, 'many', Object.fromEntries(Array.from({ length: 38 }, (_, i) => [`f${i}.bin`, 8 * MIB])));
  const one = await pushed(temp, 'one', { 'big.bin': 300 * MIB });
  console.log('| remote | build | bundles (bytes) | pull peak RSS | RSS / bundle bytes |');
  console.log('| --- | --- | --- | --- | --- |');
  for (const [name, remote] of [['38 × 8 MiB files', many], ['one 300 MiB file', one]]) {
    for (const [i, dist] of builds.entries()) {
      const measured = pullPeak(temp, dist, remote.remote, remote.clone, `${name.length}-${i}`);
      const rss = measured.peakKib * 1024;
      if (measured.pulled === 0) throw new Error(`${dist} pulled nothing`);
      console.log(`| ${name} | ${dist} | ${remote.bundles} (${fmtBytes(remote.bytes)}) | ${fmtBytes(rss)} | ${(rss / remote.bytes).toFixed(2)} |`);
    }
  }
} finally {
  temp.remove();
}

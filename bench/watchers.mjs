// Which file-system watcher can answer "what changed since token T" for turnback (issue #28).
// A REPORT, not a test: measures Node's own recursive fs.watch, @parcel/watcher and watchman on
// generated trees of 10k, 50k and 250k files and prints one table row per watcher and size.
//
// Usage: node bench/watchers.mjs [--sizes=10000,50000,250000] [--only=fswatch,parcel,watchman]
//        [--modules=/tmp/parcel-probe/node_modules]   (where @parcel/watcher and fb-watchman are,
//        when they are not the project's own dependencies)
// Run it with each Node (e.g. PATH=/work/main/.ci/nodes/node_modules/node22/bin:$PATH) for fs.watch.
//
// Each watcher runs in a child process of its own (its RSS and inotify watches are its own; for
// watchman, the daemon's, a private one started here with its own socket and state). Measured:
// subscribe (until a write in the deepest folder is reported), RSS added, inotify watches
// (/proc/PID/fdinfo), latency of 10 writes to their events, the cost of "what changed since",
// a folder renamed in (is a write in its nested subfolder reported after?), a folder renamed out
// (is a write there still reported as a project path?), and a queue overflow (the watcher is
// stopped with SIGSTOP while 20,000 files are touched, more than the kernel's queue of
// /proc/sys/fs/inotify/max_queued_events): is it reported, and how many of the paths arrive?
import { execFileSync, spawn } from 'node:child_process';
import * as fs from 'node:fs';
import { createRequire } from 'node:module';
import * as os from 'node:os';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';
import { generateTree } from './tree.mjs';

const HERE = fileURLToPath(import.meta.url);
const args = Object.fromEntries(process.argv.slice(2).filter((a) => a.startsWith('--')).map((a) => {
  const [k, v] = a.slice(2).split('=');
  return [k, v ?? 'true'];
}));

function requireFrom(name) {
  const places = [args.modules, path.join(path.dirname(HERE), '..', 'node_modules'), '/tmp/parcel-probe/node_modules'].filter(Boolean);
  for (const place of places) {
    try {
      return createRequire(path.join(place, 'x.js'))(name);
    } catch {
      // next place
    }
  }
  throw new Error(`${name} not found (install it, or pass --modules=DIR)`);
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const rssOf = (pid) => Number(/VmRSS:\s+(\d+)/.exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'))[1]) * 1024;
function inotifyWatches(pid) {
  let count = 0;
  for (const fd of fs.readdirSync(`/proc/${pid}/fd`)) {
    let link;
    try {
      link = fs.readlinkSync(`/proc/${pid}/fd/${fd}`);
    } catch {
      continue;
    }
    if (link !== 'anon_inode:inotify') continue;
    const info = fs.readFileSync(`/proc/${pid}/fdinfo/${fd}`, 'utf8');
    count += info.split('\n').filter((l) => l.startsWith('inotify wd:')).length;
  }
  return count;
}

// ---------------------------------------------------------------- child: one watcher, one tree
if (process.argv[2] === '--child') {
  const [, , , kind, root, deepest, sock] = process.argv;
  const seen = new Map(); // path → first time seen (performance.now() of this process)
  let errors = [];
  let fresh = false;
  const note = (p) => {
    if (!seen.has(p)) seen.set(p, performance.now());
  };
  const rss0 = rssOf(process.pid);
  const t0 = performance.now();
  let close;
  let since; // () => { ms, paths, fresh }
  /** "What changed since" for a watcher whose events this process gathers itself: the paths seen since the last question. */
  const sinceSeen = () => {
    let token = new Map(seen);
    return () => {
      const s = performance.now();
      const paths = [...seen.keys()].filter((p) => !token.has(p));
      token = new Map(seen);
      return { ms: performance.now() - s, paths: paths.length, fresh: false };
    };
  };
  if (kind === 'fswatch') {
    const w = fs.watch(root, { recursive: true }, (_type, name) => {
      if (name) note(path.join(root, name.toString()));
    });
    w.on('error', (e) => errors.push(String(e)));
    close = () => w.close();
    since = sinceSeen();
  } else if (kind === 'parcel') {
    const watcher = requireFrom('@parcel/watcher');
    // The inotify backend itself: by default the package hands the tree to a watchman daemon when one is installed.
    const sub = await watcher.subscribe(root, (err, events) => {
      if (err) errors.push(String(err));
      for (const e of events ?? []) note(e.path);
    }, { backend: 'inotify' });
    close = () => sub.unsubscribe();
    since = sinceSeen();
  } else {
    process.env.WATCHMAN_SOCK = sock;
    const { Client } = requireFrom('fb-watchman');
    const client = new Client();
    const cmd = (c) => new Promise((res, rej) => client.command(c, (e, r) => (e ? rej(e) : res(r))));
    const w = await cmd(['watch-project', root]);
    const watchRoot = w.watch;
    const rel = w.relative_path;
    client.on('subscription', (r) => {
      if (r.is_fresh_instance) return;
      for (const f of r.files ?? []) note(path.join(watchRoot, typeof f === 'string' ? f : f.name));
    });
    let clock = (await cmd(['clock', watchRoot, { sync_timeout: 60_000 }])).clock;
    await cmd(['subscribe', watchRoot, 'bench', { fields: ['name'], since: clock, ...(rel ? { relative_root: rel } : {}) }]);
    close = () => client.end();
    since = async () => {
      const s = performance.now();
      const r = await cmd(['query', watchRoot, { since: clock, fields: ['name', 'exists', 'type'], empty_on_fresh_instance: true }]);
      clock = r.clock;
      if (r.is_fresh_instance) fresh = true;
      return { ms: performance.now() - s, paths: r.files.length, fresh: r.is_fresh_instance === true, warning: r.warning };
    };
  }
  // Ready once a write in the deepest folder is reported.
  const probe = path.join(deepest, `probe-${process.pid}`);
  for (let i = 0; !seen.has(probe); i++) {
    fs.writeFileSync(probe, String(i));
    const until = performance.now() + 200;
    while (!seen.has(probe) && performance.now() < until) await sleep(2);
    if (performance.now() - t0 > 600_000) break;
  }
  const subscribeMs = performance.now() - t0;
  const send = (m) => process.send(m);
  send({ t: 'ready', subscribeMs, rssAdded: kind === 'watchman' ? undefined : rssOf(process.pid) - rss0, watches: kind === 'watchman' ? undefined : inotifyWatches(process.pid) });
  process.on('message', async (m) => {
    if (process.env.BENCH_DEBUG) console.error('child got', m.t);
    if (m.t === 'wait') {
      // Waits until every path of m.paths was seen (or 5 s), reporting when each was.
      const until = performance.now() + (m.ms ?? 5000);
      while (m.paths.some((p) => !seen.has(p)) && performance.now() < until) await sleep(1);
      send({ t: 'seen', at: m.paths.map((p) => seen.get(p) ?? null), origin: performance.timeOrigin, errors });
    } else if (m.t === 'since') {
      const r = await since();
      send({ t: 'since', ...r, errors, fresh });
    } else if (m.t === 'count') {
      await sleep(m.quietMs ?? 1000);
      const n = m.paths.filter((p) => seen.has(p)).length;
      send({ t: 'count', n, errors });
    } else if (m.t === 'close') {
      await close();
      process.exit(0);
    }
  });
} else {
  // -------------------------------------------------------------- parent: trees and the table
  const sizes = (args.sizes ?? '10000,50000,250000').split(',').map(Number);
  const only = (args.only ?? 'fswatch,parcel,watchman').split(',');
  const work = fs.mkdtempSync(path.join(os.tmpdir(), 'turnback-watchers-'));
  const rows = [];
  let daemon;
  const node = process.version;
  try {
    for (const files of sizes) {
      const root = path.join(work, `tree-${files}`);
      fs.mkdirSync(root);
      const gen = generateTree(root, { files, seed: 28, tiny: true, ignoredFiles: 0, logFiles: 0, folders: Math.round(files / 25) });
      const folders = [...new Set(gen.files.map((f) => path.dirname(f)))].filter((d) => d !== '.');
      const deepest = path.join(root, folders.reduce((a, b) => (b.split('/').length > a.split('/').length ? b : a)));
      for (const kind of only) {
        let sock;
        let daemonPid;
        if (kind === 'watchman') {
          const state = fs.mkdtempSync(path.join(work, 'wm-'));
          sock = path.join(state, 'sock');
          daemon = spawn('watchman', ['--foreground', `--sockname=${sock}`, `--statefile=${state}/state`, `--logfile=${state}/log`, `--pidfile=${state}/pid`, '--no-save-state'], { stdio: 'ignore' });
          daemonPid = daemon.pid;
          while (!fs.existsSync(sock)) await sleep(10);
        }
        const rss0 = daemonPid ? rssOf(daemonPid) : 0;
        const child = spawn(process.execPath, [HERE, '--child', kind, root, deepest, sock ?? ''], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
        const next = (t) => new Promise((res) => child.on('message', function on(m) {
          if (m.t === t) {
            child.off('message', on);
            res(m);
          }
        }));
        const ask = (m, t) => {
          const p = next(t);
          child.send(m);
          return p;
        };
        const row = { node, files, kind };
        const exited = new Promise((res) => child.once('exit', res));
        console.error(`  ${kind} at ${files} files…`);
        const ready = await Promise.race([next('ready'), exited.then(() => undefined)]);
        if (ready === undefined) {
          rows.push({ ...row, note: 'the watcher process died' });
          continue;
        }
        row.subscribeMs = ready.subscribeMs;
        row.rssMiB = ((ready.rssAdded ?? rssOf(daemonPid) - rss0) / 1048576);
        row.watches = ready.watches ?? inotifyWatches(daemonPid);
        // Latency: 10 writes in 10 folders, each timed to its event.
        await ask({ t: 'since' }, 'since');
        const edited = [];
        const writtenAt = [];
        for (let i = 0; i < 10; i++) {
          const p = path.join(root, folders[(i * 7919) % folders.length], `edit-${kind}-${i}`);
          writtenAt.push(performance.timeOrigin + performance.now());
          fs.writeFileSync(p, 'x');
          edited.push(p);
        }
        const seen = await ask({ t: 'wait', paths: edited }, 'seen');
        const lat = seen.at.map((at, i) => (at === null ? Infinity : seen.origin + at - writtenAt[i]));
        row.latencyMs = Math.max(...lat);
        const s = await ask({ t: 'since' }, 'since');
        row.sinceMs = s.ms;
        row.sincePaths = s.paths;
        // A folder renamed in: a nested tree from outside, then a write in its deepest folder.
        const outside = fs.mkdtempSync(path.join(work, 'outside-'));
        fs.mkdirSync(path.join(outside, 'moved/a/b'), { recursive: true });
        fs.writeFileSync(path.join(outside, 'moved/a/b/old.txt'), 'x');
        const movedIn = path.join(root, folders[3], `moved-in-${kind}`);
        fs.renameSync(path.join(outside, 'moved'), movedIn);
        await ask({ t: 'wait', paths: [movedIn], ms: 3000 }, 'seen');
        const inner = path.join(movedIn, 'a/b/new.txt');
        fs.writeFileSync(inner, 'x');
        const innerSeen = await ask({ t: 'wait', paths: [inner], ms: 3000 }, 'seen');
        row.renamedIn = innerSeen.at[0] === null ? 'nested write missed' : 'nested write seen';
        // A folder renamed out: a write in its subfolder must not come back as a project path.
        const movedOut = path.join(outside, 'out');
        fs.renameSync(movedIn, movedOut);
        await sleep(300);
        fs.writeFileSync(path.join(movedOut, 'a/b/after.txt'), 'x');
        const ghost = await ask({ t: 'wait', paths: [path.join(movedIn, 'a/b/after.txt')], ms: 1500 }, 'seen');
        row.renamedOut = ghost.at[0] === null ? 'not reported' : 'reported at its old path';
        // Overflow: the watcher stopped while 20,000 files are touched.
        const before = await ask({ t: 'since' }, 'since');
        void before;
        const stopPid = kind === 'watchman' ? daemonPid : child.pid;
        // 20,000 new names, more than the kernel queues for a reader that does not read.
        const touched = Array.from({ length: 20_000 }, (_, i) => path.join(root, folders[i % folders.length], `burst-${kind}-${i}`));
        process.kill(stopPid, 'SIGSTOP');
        for (const p of touched) fs.closeSync(fs.openSync(p, 'w'));
        process.kill(stopPid, 'SIGCONT');
        const counted = await ask({ t: 'count', paths: touched, quietMs: 3000 }, 'count');
        const after = await ask({ t: 'since' }, 'since');
        for (const p of touched) fs.rmSync(p);
        row.overflow = `${counted.n}/${touched.length} paths; ${after.fresh ? 'reported (fresh instance)' : after.warning !== undefined ? `reported (warning: ${after.warning.split('\n')[0].slice(0, 70)})` : counted.errors.length > 0 ? `error: ${counted.errors[0].slice(0, 60)}` : 'not reported'}`;
        child.send({ t: 'close' });
        await exited;
        if (daemon) {
          daemon.kill('SIGTERM');
          await new Promise((r) => daemon.once('exit', r));
          daemon = undefined;
        }
        rows.push(row);
        console.error(JSON.stringify(row));
      }
    }
  } finally {
    if (daemon) daemon.kill('SIGKILL');
    fs.rmSync(work, { recursive: true, force: true });
  }
  const f = (n, d = 0) => (n === undefined ? '—' : Number.isFinite(n) ? n.toFixed(d) : '∞');
  console.log(`| Node | files | watcher | subscribe | RSS added | inotify watches | write → event | changed since | folder renamed in (a write in its nested folder) | a write in a folder renamed out | queue overflow |`);
  console.log(`| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |`);
  for (const r of rows) {
    console.log(`| ${r.node} | ${r.files.toLocaleString('en')} | ${r.kind} | ${f(r.subscribeMs)} ms | ${f(r.rssMiB, 1)} MiB | ${f(r.watches)} | ${f(r.latencyMs, 1)} ms | ${f(r.sinceMs, 2)} ms | ${r.renamedIn ?? r.note} | ${r.renamedOut ?? ''} | ${r.overflow ?? ''} |`);
  }
  console.log(`\nmax_user_watches ${fs.readFileSync('/proc/sys/fs/inotify/max_user_watches', 'utf8').trim()}, max_queued_events ${fs.readFileSync('/proc/sys/fs/inotify/max_queued_events', 'utf8').trim()}; ${os.cpus().length} cores; ${execFileSync('uname', ['-r']).toString().trim()}`);
}

import { execFileSync, spawnSync } from 'node:child_process';
import * as fs from 'node:fs/promises';
import * as path from 'node:path';
import { deflateRawSync } from 'node:zlib';
import { describe, it } from 'vitest';
import { parseWorkspaceCheckpointParams } from '../../src/adapters/acp.js';
import { isCheckpointError } from '../../src/core/errors.js';
import type { CheckpointId } from '../../src/core/id.js';
import { openObserver, openStore } from '../../src/admin.js';
import { observerForConfig, openCheckpoints } from '../../src/session/open.js';
import { isUnavailable } from '../../src/session/unavailable.js';
import { deletePath, editFile, movePath, writeFile } from '../../src/tools/reference-tools.js';
import { canMountSmallDisk, mountSmallDisk } from '../helpers/small-disk.js';
import { tempFolder } from '../helpers/temp.js';
import { CLI } from '../cli/harness.js';
import { listing, sandbox, writeTree } from '../session/helpers.js';
import { Tally, trials } from './campaign.js';

// Bad input and escapes, each one attack: a path out of the project (`..`, absolute, through a
// symlinked folder, into `.git`), a leaf that is a link, FIFO, device or folder, a hard link to an
// outside file, a bad or unknown id, a deflate bomb in place of an object, an unsafe store folder,
// a size limit past its ceiling. Held: a typed CheckpointError (or the documented unavailable
// stand-in), nothing outside the project changes, and the project changes only as the call says.

const IS_ROOT = process.getuid?.() === 0;

/** Expects `call` to throw a typed error whose code is one of `codes`. */
async function refusedTyped(call: () => Promise<unknown>, codes: string[]): Promise<void> {
  try {
    await call();
  } catch (error) {
    if (!isCheckpointError(error)) throw new Error(`untyped error: ${String(error)}`);
    if (!codes.includes(error.code)) throw new Error(`code ${error.code}, expected ${codes.join(' or ')}: ${error.message}`);
    return;
  }
  throw new Error('accepted');
}

async function world() {
  const { base, project, storeDir } = await sandbox();
  const outside = await tempFolder('turnback-outside-');
  await writeTree(outside, { 'secret.txt': 'outside secret', 'x': 'outside x' });
  await writeTree(project, { 'd/a.txt': 'project a', 'keep.txt': 'keep', '.git/config': '[core]' });
  await fs.symlink(outside, path.join(project, 'escape'));
  await fs.symlink(path.join(outside, 'secret.txt'), path.join(project, 'leaf-link'));
  execFileSync('mkfifo', [path.join(project, 'fifo')]);
  if (IS_ROOT) execFileSync('mknod', [path.join(project, 'device'), 'c', '1', '3']);
  const store = await openStore(storeDir, { projectRoot: project });
  const observer = openObserver(store, { sessionId: 'attacked' });
  const turn = await observer.beginTurn({ label: 'under attack' });
  const context = { projectRoot: project, observer };
  return { base, project, storeDir, outside, store, observer, turn, context, outsideBefore: await listing(outside) };
}

type World = Awaited<ReturnType<typeof world>>;

const ATTACKS: { name: string; run(w: World): Promise<void> }[] = [
  { name: 'write ../x', run: (w) => refusedTyped(() => writeFile(w.context, '../x', 'pwned'), ['OUTSIDE_ROOT']) },
  { name: 'write an absolute path outside', run: (w) => refusedTyped(() => writeFile(w.context, path.join(w.outside, 'x'), 'pwned'), ['OUTSIDE_ROOT']) },
  { name: 'write through a symlinked folder', run: (w) => refusedTyped(() => writeFile(w.context, 'escape/x', 'pwned'), ['INVALID_PATH']) },
  { name: 'write into .git', run: (w) => refusedTyped(() => writeFile(w.context, '.git/config', 'pwned'), ['INVALID_PATH']) },
  { name: 'write a leaf symlink to an outside file', run: (w) => refusedTyped(() => writeFile(w.context, 'leaf-link', 'pwned'), ['INVALID_PATH']) },
  { name: 'write a FIFO (never blocks)', run: (w) => refusedTyped(() => writeFile(w.context, 'fifo', 'pwned'), ['INVALID_PATH']) },
  { name: 'edit a FIFO (never blocks)', run: (w) => refusedTyped(() => editFile(w.context, 'fifo', 'a', 'b'), ['INVALID_PATH']) },
  ...(IS_ROOT
    ? [
        { name: 'write a device', run: (w: World) => refusedTyped(() => writeFile(w.context, 'device', 'pwned'), ['INVALID_PATH']) },
        { name: 'edit a device (reads nothing)', run: (w: World) => refusedTyped(() => editFile(w.context, 'device', 'a', 'b'), ['INVALID_PATH']) },
      ]
    : []),
  { name: 'write a folder', run: (w) => refusedTyped(() => writeFile(w.context, 'd', 'pwned'), ['INVALID_PATH']) },
  { name: 'write an empty path', run: (w) => refusedTyped(() => writeFile(w.context, '', 'pwned'), ['INVALID_PATH']) },
  { name: 'write a path with a NUL byte', run: (w) => refusedTyped(() => writeFile(w.context, 'a\0b', 'pwned'), ['INVALID_PATH']) },
  { name: 'write a path that is not a string', run: (w) => refusedTyped(() => writeFile(w.context, 42 as unknown as string, 'pwned'), ['INVALID_PATH']) },
  { name: 'delete through a symlinked folder', run: (w) => refusedTyped(() => deletePath(w.context, 'escape/secret.txt'), ['INVALID_PATH']) },
  { name: 'delete a folder', run: (w) => refusedTyped(() => deletePath(w.context, 'd'), ['INVALID_ARGUMENT']) },
  { name: 'move a file out of the project', run: (w) => refusedTyped(() => movePath(w.context, 'keep.txt', '../keep.txt'), ['OUTSIDE_ROOT']) },
  { name: 'move an outside file in', run: (w) => refusedTyped(() => movePath(w.context, 'escape/secret.txt', 'stolen.txt'), ['INVALID_PATH']) },
  { name: 'beforeWrite ../x', run: (w) => refusedTyped(() => w.observer.beforeWrite('../x'), ['OUTSIDE_ROOT']) },
  { name: 'beforeWrite into .git', run: (w) => refusedTyped(() => w.observer.beforeWrite('.git/HEAD'), ['INVALID_PATH']) },
  { name: 'restore a malformed id', run: (w) => refusedTyped(() => w.observer.restore('not-an-id' as CheckpointId), ['INVALID_ID']) },
  { name: 'restore an id that never existed', run: (w) => refusedTyped(() => w.observer.restore('1700000000000-0000-00000000' as CheckpointId), ['UNKNOWN_CHECKPOINT']) },
  { name: 'restore paths outside the project', run: (w) => refusedTyped(() => w.observer.restore(w.turn, { paths: ['../x'] }), ['OUTSIDE_ROOT']) },
  {
    name: 'restore over a hard link to an outside file (a shell made it)',
    async run(w) {
      await w.observer.beforeWrite('keep.txt');
      await fs.writeFile(path.join(w.project, 'keep.txt'), 'agent keep');
      await w.observer.afterWrite('keep.txt');
      // A shell call replaces the file with a hard link to an outside file of the same content.
      await fs.writeFile(path.join(w.outside, 'x'), 'agent keep');
      await fs.rm(path.join(w.project, 'keep.txt'));
      await fs.link(path.join(w.outside, 'x'), path.join(w.project, 'keep.txt'));
      const report = await w.observer.restore(w.turn, { paths: ['keep.txt'] });
      if ((await fs.readFile(path.join(w.project, 'keep.txt'), 'utf8')) !== 'keep' && report.restored.length > 0) throw new Error('reported restored, but is not');
      // The outside file is exactly what the attacker left; the check below compares the rest.
      if ((await fs.readFile(path.join(w.outside, 'x'), 'utf8')) !== 'agent keep') throw new Error('the outside file was written through the link');
      await fs.writeFile(path.join(w.outside, 'x'), 'outside x');
    },
  },
  {
    name: 'a deflate bomb in place of an object',
    async run(w) {
      // Large enough to be stored as a loose object, which the bomb then replaces.
      const original = Buffer.alloc(300_000, 7);
      await fs.writeFile(path.join(w.project, 'big.bin'), original);
      await w.observer.beforeWrite('big.bin');
      await fs.writeFile(path.join(w.project, 'big.bin'), 'agent big');
      await w.observer.afterWrite('big.bin');
      await w.observer.close();
      const objects = (await fs.readdir(path.join(w.storeDir, 'objects', 'v1'), { recursive: true, withFileTypes: true })).filter((entry) => entry.isFile());
      if (objects.length === 0) throw new Error('no loose object to replace');
      const bomb = deflateRawSync(Buffer.alloc(64 * 1024 * 1024));
      for (const entry of objects) await fs.writeFile(path.join(entry.parentPath, entry.name), bomb);
      const again = openObserver(w.store, { sessionId: 'after-bomb' });
      try {
        const report = await again.restore(w.turn, { paths: ['big.bin'] });
        if ((await fs.readFile(path.join(w.project, 'big.bin'), 'utf8')) !== 'agent big') throw new Error('wrote bytes decoded from a bomb');
        if (!report.skipped.some((entry) => entry.path === 'big.bin' && entry.reason === 'object-missing')) throw new Error('the damaged copy is not reported');
      } finally {
        await again.close();
      }
    },
  },
  ...(IS_ROOT
    ? [
        {
          name: "a restore run as root keeps each file's owner and never widens its mode",
          async run(w: World) {
            const file = path.join(w.project, 'bobs.txt');
            await fs.writeFile(file, "bob's original", { mode: 0o600 });
            await fs.chown(file, 1001, 1001);
            // The agent, as root, rewrites bob's file in place: it stays bob's.
            await w.observer.beforeWrite('bobs.txt');
            await fs.writeFile(file, 'agent rewrote it');
            await w.observer.afterWrite('bobs.txt');
            await w.observer.restore(w.turn, { paths: ['bobs.txt'] });
            const stats = await fs.lstat(file);
            if ((await fs.readFile(file, 'utf8')) !== "bob's original") throw new Error('not restored');
            if ((stats.mode & 0o777) !== 0o600) throw new Error(`mode is ${(stats.mode & 0o777).toString(8)}, not 600`);
            if (stats.uid !== 1001 || stats.gid !== 1001) throw new Error(`owner changed to ${stats.uid}:${stats.gid}`);
          },
        },
      ]
    : []),
  {
    name: 'a store folder inside the project',
    async run(w) {
      const opened = await openCheckpoints(`[capabilities.checkpoint]\nenabled = true\ndir = ${JSON.stringify(path.join(w.project, 'store-here'))}`, { projectRoot: w.project, sessionId: 'x' });
      if (!isUnavailable(opened)) throw new Error('opened a store inside the project');
    },
  },
  {
    name: 'a world-writable store folder',
    async run(w) {
      const shared = path.join(w.base, 'shared');
      await fs.mkdir(shared, { mode: 0o777 });
      await fs.chmod(shared, 0o1777);
      const opened = await openCheckpoints(`[capabilities.checkpoint]\nenabled = true\ndir = ${JSON.stringify(shared)}`, { projectRoot: w.project, sessionId: 'x' });
      if (!isUnavailable(opened)) throw new Error('opened a world-writable store');
      if (((await fs.stat(shared)).mode & 0o7777) !== 0o1777) throw new Error('changed the mode of a folder turnback did not create');
    },
  },
  ...(canMountSmallDisk
    ? [
        {
          name: 'a read-only store: one warning and the unavailable stand-in, never a throwing write',
          async run(w: World) {
            const disk = mountSmallDisk(path.join(w.base, 'ro-disk'), 1024);
            if (disk === undefined) throw new Error('cannot mount a tmpfs');
            try {
              const dir = path.join(disk.dir, 'store');
              const first = await openCheckpoints(`[capabilities.checkpoint]\nenabled = true\ndir = ${JSON.stringify(dir)}`, { projectRoot: w.project, sessionId: 'ro' });
              if (isUnavailable(first)) throw new Error('could not open the store before it was made read-only');
              await first.close();
              execFileSync('mount', ['-o', 'remount,ro', disk.dir]);
              const warnings: string[] = [];
              const observer = await observerForConfig(`[capabilities.checkpoint]\nenabled = true\ndir = ${JSON.stringify(dir)}`, { projectRoot: w.project, sessionId: 'ro', onWarning: (message: string) => warnings.push(message) });
              if (!isUnavailable(await openCheckpoints(`[capabilities.checkpoint]\nenabled = true\ndir = ${JSON.stringify(dir)}`, { projectRoot: w.project, sessionId: 'ro' }))) throw new Error('opened a read-only store');
              if (warnings.length !== 1) throw new Error(`${warnings.length} warnings`);
              if (observer !== undefined) throw new Error('observerForConfig returned an observer for a read-only store');
              await writeFile({ projectRoot: w.project, observer }, 'd/a.txt', 'the agent still writes');
              if ((await fs.readFile(path.join(w.project, 'd', 'a.txt'), 'utf8')) !== 'the agent still writes') throw new Error('the write was blocked');
            } finally {
              disk.unmount();
            }
          },
        },
      ]
    : []),
  {
    name: 'a file name with terminal escapes and a newline: the command prints it escaped',
    async run(w: World) {
      const evil = 'x\u001b]0;pwned\u0007\nwrite back  innocent.txt';
      await fs.writeFile(path.join(w.project, evil), 'before');
      const home = path.join(w.base, 'home');
      await fs.mkdir(home, { recursive: true });
      const run = spawnSync(process.execPath, ['--no-warnings', CLI, 'run', '--store', path.join(w.base, 'cli-store'), '--', 'sh', '-c', 'for f in x*; do echo after > "$f"; done'], {
        cwd: w.project,
        env: { PATH: process.env.PATH, HOME: home, NO_COLOR: '1', TURNBACK_SERVER: 'off' },
        encoding: 'utf8',
      });
      if (run.status !== 0) throw new Error(`run failed: ${run.stderr}`);
      if (/[\u0000-\u0008\u000b-\u001f\u007f]/.test(run.stderr)) throw new Error('a control character reached the terminal');
      if (run.stderr.split('\n').some((line) => line.trim() === 'write back  innocent.txt')) throw new Error('a name forged a line');
    },
  },
  {
    // Issue #30: a 100,000-character ACP boundary id was taken as a turn label.
    name: 'ACP checkpoint requests with ids past 512 characters',
    async run() {
      for (const length of [513, 100_000]) {
        const long = 'i'.repeat(length);
        for (const params of [
          { sessionId: long, action: 'capture', boundaryId: 'b' },
          { sessionId: 's', action: 'capture', boundaryId: long },
          { sessionId: 's', action: 'call_begin', callId: long },
        ]) {
          let refused: { code?: number; data?: { code?: string } } | undefined;
          try {
            parseWorkspaceCheckpointParams(params);
          } catch (error) {
            refused = error as typeof refused;
          }
          if (refused === undefined) throw new Error(`a ${length}-character id was accepted`);
          if (refused.code !== -32602 || refused.data?.code !== 'INVALID_ARGUMENT') throw new Error(`refused untyped: ${JSON.stringify(refused).slice(0, 200)}`);
        }
      }
    },
  },
  {
    // Issue #30: `diff ID ../../etc/passwd` said "undo takes a path".
    name: 'a path out of the project given to diff, show and undo: refused by the command typed',
    async run(w: World) {
      const home = path.join(w.base, 'home');
      await fs.mkdir(home, { recursive: true });
      const store = path.join(w.base, 'cli-paths-store');
      const tb = (args: string[]) => spawnSync(process.execPath, ['--no-warnings', CLI, args[0] as string, '--store', store, ...args.slice(1)], { cwd: w.project, env: { PATH: process.env.PATH, HOME: home, NO_COLOR: '1', TURNBACK_SERVER: 'off' }, encoding: 'utf8' });
      const made = tb(['run', '--', 'sh', '-c', 'echo changed > keep.txt']);
      if (made.status !== 0) throw new Error(`run failed: ${made.stderr}`);
      const id = (JSON.parse(tb(['list', '--json']).stdout) as { checkpoints: { id: string }[] }).checkpoints[0]?.id;
      if (id === undefined) throw new Error('no checkpoint to name');
      for (const [command, args] of [
        ['diff', ['diff', id, '../../etc/passwd']],
        ['show', ['show', id, '../../etc/passwd']],
        ['undo', ['undo', id, '--path', '../../etc/passwd', '--yes']],
      ] as const) {
        const result = tb([...args]);
        if (result.status !== 2 || !result.stderr.includes(`${command} takes a path inside the project`)) throw new Error(`${command}: exit ${String(result.status)}: ${result.stderr.slice(0, 200)}`);
      }
    },
  },
  { name: 'max_file_mib past its ceiling', run: (w) => refusedTyped(() => openCheckpoints('[capabilities.checkpoint]\nenabled = true\nmax_file_mib = 4096', { projectRoot: w.project, sessionId: 'x' }), ['INVALID_ARGUMENT', 'INVALID_CONFIG']) },
];

describe('fault campaign: bad input and escapes', () => {
  it('every attack gets a typed refusal and changes nothing outside', async () => {
    const tally = new Tally('bad input and escapes', 1601);
    for (let round = 0; round < trials(5, 1); round++) {
      // A seeded order, so an attack that leaves state behind would show against the next one.
      const order = ATTACKS.map((attack) => ({ attack, key: tally.random.next() })).sort((a, b) => a.key - b.key);
      for (const { attack } of order) {
        await tally.trial(attack.name, async () => {
          const w = await world();
          try {
            await attack.run(w);
            if (JSON.stringify(await listing(w.outside)) !== JSON.stringify(w.outsideBefore)) throw new Error('a byte outside the project changed');
          } finally {
            await w.observer.close().catch(() => undefined);
            await w.store.close();
          }
        });
      }
    }
    tally.finish();
  });
});

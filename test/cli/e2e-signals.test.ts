import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import * as path from 'node:path';
import { describe, expect, it } from 'vitest';
import { CheckpointStore } from '../../src/store/store.js';
import { CLI, EDIT, env, json, lineOn, proj, tb, useE2eProject } from './e2e-harness.js';

// The built command end to end under signals, kills and concurrency: SIGINT and SIGTERM reach the
// command, a busy store, a killed run named and recorded, progress on stderr, two runs at once.

useE2eProject();

describe('signals, crashes and concurrency', () => {
  it('forwards SIGINT to the command and still prints the list', async () => {
    const child = spawn(process.execPath, ['--no-warnings', CLI, 'run', '--', 'sh', '-c', 'echo s > started; echo ready; exec sleep 30'], { cwd: proj, env, stdio: ['ignore', 'pipe', 'pipe'] });
    let stderr = '';
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    await lineOn(child.stdout, 'ready');
    child.kill('SIGINT');
    const code = await new Promise<number | null>((resolve) => child.once('exit', (c) => resolve(c)));
    expect(code).toBe(130);
    expect(stderr).toContain('files: 1 new');
    expect(stderr).toContain('  new      started');
  });

  it('forwards SIGTERM sent to turnback itself, prints the list, and exits 128 + 15', async () => {
    const child = spawn(process.execPath, ['--no-warnings', CLI, 'run', '--', 'sh', '-c', 'echo s > started; echo ready; exec sleep 30'], { cwd: proj, env, stdio: ['ignore', 'pipe', 'pipe'] });
    let stderr = '';
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    await lineOn(child.stdout, 'ready');
    process.kill(child.pid as number, 'SIGTERM');
    const code = await new Promise<number | null>((resolve) => child.once('exit', (c) => resolve(c)));
    expect(code).toBe(143);
    expect(stderr).toContain('files: 1 new');
  });

  it('undo says the store is busy (exit 4) while another session holds it, and changes nothing', async () => {
    tb(['run', '--', ...EDIT]);
    const dir = json<{ store: { dir: string } }>(tb(['status', '--json'])).store.dir;
    const store = await CheckpointStore.open(dir, { projectRoot: proj });
    const busy = await store.withLock(async () => tb(['undo', '--yes']));
    expect(busy.code, busy.stderr).toBe(4);
    expect(busy.stderr).toContain('the checkpoint store is busy (another session is using it); try again when it finishes');
    expect(existsSync(path.join(proj, 'docs'))).toBe(false);
    const after = tb(['undo', '--yes']);
    expect(after.code, after.stderr).toBe(0);
    expect(existsSync(path.join(proj, 'docs', 'notes', 'n0.md'))).toBe(true);
  });

  it('status names a run whose turnback was killed, and the next run records it for undo', async () => {
    const child = spawn(process.execPath, ['--no-warnings', CLI, 'run', '--', 'sh', '-c', 'printf x >> Cargo.toml && printf ok > started && echo ready && sleep 30'], {
      cwd: proj,
      env,
      stdio: ['ignore', 'pipe', 'ignore'],
      detached: true,
    });
    await lineOn(child.stdout, 'ready');
    process.kill(child.pid as number, 'SIGKILL');
    await new Promise((resolve) => child.once('exit', resolve));
    try {
      process.kill(-(child.pid as number), 'SIGKILL');
    } catch {
      // The group may already be gone.
    }
    const status = tb(['status']);
    expect(status.stdout).toContain('turnback was killed while a command ran: `sh -c');
    expect(status.stdout).toMatch(/changed +Cargo\.toml +turnback undo restores/);
    expect(status.stdout).toMatch(/new +started/);
    expect(status.stdout).toContain('Not covered: gitignored files, anything outside the project.');
    expect(json<{ interrupted: unknown[] }>(tb(['status', '--json'])).interrupted).toHaveLength(1);

    const next = tb(['run', '--', 'true']);
    expect(next.stderr).toContain('turnback was killed while a command ran');
    expect(tb(['status']).stdout).not.toContain('was killed');
    const undo = tb(['undo', '--path', 'Cargo.toml', '--yes']);
    expect(undo.code).toBe(0);
    expect(await readFile(path.join(proj, 'Cargo.toml'), 'utf8')).toBe('[package]\nname = "p"\n');
  });

  it('list shows a running run, then the killed run as one honest row, never an empty open turn', async () => {
    tb(['run', '--label', 'earlier', '--', 'sh', '-c', 'echo e > e.txt']);
    const child = spawn(process.execPath, ['--no-warnings', CLI, 'run', '--', 'sh', '-c', 'printf x >> Cargo.toml && rm -rf docs && printf ok > started && echo ready && sleep 30'], {
      cwd: proj,
      env,
      stdio: ['ignore', 'pipe', 'ignore'],
      detached: true,
    });
    await lineOn(child.stdout, 'ready');
    const during = tb(['list']);
    expect(during.stdout).toMatch(/ {2}before sh -c .* · \d\d:\d\d {3}0 files changed {3}\(running now\)\n/);
    process.kill(child.pid as number, 'SIGKILL');
    await new Promise((resolve) => child.once('exit', resolve));
    try {
      process.kill(-(child.pid as number), 'SIGKILL');
    } catch {
      // The group may already be gone.
    }

    const list = tb(['list']);
    expect(list.code).toBe(0);
    // list records the killed run first (as run and undo do), so its ids are the ones undo offers.
    expect(list.stderr).toContain('turnback was killed while a command ran: `sh -c');
    const rows = list.stdout.trim().split('\n');
    expect(rows).toHaveLength(2);
    expect(rows[0]).toMatch(/^[0-9a-f]{8} {2}before sh -c 'printf x >> Cargo\.toml.* · \d\d:\d\d {3}6 files changed {3}\(interrupted: turnback was killed while it ran\)$/);
    expect(rows[1]).toMatch(/^[0-9a-f]{8} {2}earlier · \d\d:\d\d {3}1 file changed {3}exit 0 · \d+\.\d s$/);
    expect(list.stdout).not.toContain('0 files changed');

    const listed = json<{ checkpoints: { kind: string; state: string; files: number }[]; interrupted: unknown[] }>(tb(['list', '--json']));
    expect(listed.checkpoints.map((c) => [c.kind, c.state, c.files])).toEqual([
      ['call', 'interrupted', 6],
      ['turn', 'complete', 1],
    ]);
    expect(listed.interrupted).toEqual([]);
    expect(tb(['status']).stdout).toMatch(/last picture: before sh -c .*\(6 files changed; interrupted: turnback was killed while it ran\)/);

    const undo = tb(['undo'], { input: '1\ny\n' });
    expect(undo.stdout).toMatch(/ {2}1 {2}[0-9a-f]{8} {2}before sh -c .* \(6 files; interrupted: turnback was killed while it ran\)/);
    expect(undo.code, undo.stderr).toBe(0);
    expect(await readFile(path.join(proj, 'Cargo.toml'), 'utf8')).toBe('[package]\nname = "p"\n');
    expect(await readFile(path.join(proj, 'docs', 'notes', 'draft.md'), 'utf8')).toBe('not committed\n');
    // The file the killed run itself created, still as it left it, goes with its undo (issue #26 point 7).
    expect(existsSync(path.join(proj, 'started'))).toBe(false);
  });

  it('prints a progress line on stderr when a picture takes longer than the threshold', () => {
    env.TURNBACK_PROGRESS_AFTER_MS = '0';
    const run = tb(['run', '--', 'sh', '-c', 'echo hi > a.txt']);
    expect(run.code).toBe(0);
    expect(run.stdout).toBe('');
    // Off a terminal: one line when it starts, one when it ends, for the picture before and after.
    expect(run.stderr).toMatch(/^turnback: taking a picture (before sh -c 'echo hi > a\.txt'…|… \d+ files seen, \d+ of \d+ copied)$/m);
    expect(run.stderr).toMatch(/^turnback: taking a picture after sh -c 'echo hi > a\.txt'…$/m);
    expect(run.stderr.match(/^turnback: picture taken in \d+\.\d s$/gm)).toHaveLength(2);
    expect(run.stderr).toContain('files: 1 new');
    expect(run.stderr).not.toContain('\r');

    env.TURNBACK_PROGRESS_AFTER_MS = '600000';
    const quick = tb(['run', '--', 'sh', '-c', 'echo again > a.txt']);
    expect(quick.code).toBe(0);
    expect(quick.stderr).not.toContain('taking a picture');
    expect(quick.stderr).not.toContain('picture taken');
    expect(quick.stderr).toContain('files: 1 changed');
  });

  it('two concurrent runs on one store both finish and both are listed', async () => {
    const start = (name: string): Promise<number | null> =>
      new Promise((resolve) => {
        const child = spawn(process.execPath, ['--no-warnings', CLI, 'run', '--', 'sh', '-c', `echo ${name} > ${name}.txt; sleep 1`], { cwd: proj, env, stdio: 'ignore' });
        child.once('exit', (code) => resolve(code));
      });
    const codes = await Promise.all([start('one'), start('two')]);
    expect(codes).toEqual([0, 0]);
    const listed = json<{ checkpoints: { kind: string }[] }>(tb(['list', '--json']));
    expect(listed.checkpoints.filter((c) => c.kind === 'turn')).toHaveLength(2);
    expect(tb(['verify']).code).toBe(0);
  });
});


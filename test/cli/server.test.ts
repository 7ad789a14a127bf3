import { spawn, spawnSync } from 'node:child_process';
import { once } from 'node:events';
import { chmod, mkdir, readdir, readFile, writeFile } from 'node:fs/promises';
import * as net from 'node:net';
import * as path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { CLI, cliRepo, killGroup, startRun, TEST_SERVER_IDLE_SECONDS, type CliRepo } from './harness.js';
import { onPath } from '../../src/cli/command-process.js';
import { tempFolder } from '../helpers/temp.js';

// The per-user command server (src/server/server.ts) behind the small client (dist/cli/turnback.cjs):
// a served command must do exactly what the same command does in its own process, with the
// person's folder, output, exit code, signals and process life.

interface ServerState {
  available: boolean;
  running: boolean;
  socket: string | null;
  pid: number | null;
  served: number | null;
}

const started: CliRepo[] = [];

function serverState(repo: CliRepo, env: NodeJS.ProcessEnv = repo.env): ServerState {
  const result = spawnSync(process.execPath, ['--no-warnings', CLI, 'server', '--json'], { cwd: repo.proj, env, encoding: 'utf8' });
  return JSON.parse(result.stdout) as ServerState;
}

/** A repository whose server is listening (started and waited for by `turnback server start`). */
async function servedRepo(files: Record<string, string>): Promise<CliRepo> {
  const repo = await cliRepo(files);
  expect(repo.tb(['server', 'start']).code).toBe(0);
  started.push(repo);
  const state = serverState(repo);
  expect(state.running).toBe(true);
  return repo;
}

afterEach(() => {
  for (const repo of started.splice(0)) repo.tb(['server', 'stop']);
});

/** `turnback run` with the server turned off: the same command in its own process. */
function inProcess(repo: CliRepo, args: string[]): { code: number | null; stdout: string; stderr: string } {
  const result = spawnSync(process.execPath, ['--no-warnings', CLI, ...args], { cwd: repo.proj, env: { ...repo.env, TURNBACK_SERVER: 'off' }, encoding: 'utf8' });
  return { code: result.status, stdout: result.stdout, stderr: result.stderr };
}

const canBind = process.platform === 'linux' && onPath('setpriv') !== undefined;

describe('the command server', () => {
  it('a served run prints, lists and records exactly what the same run in its own process does', async () => {
    const files = { 'a.txt': 'a\n', 'b.txt': 'b\n', 'src/c.txt': 'c\n' };
    const script = 'echo out; echo changed > a.txt; rm b.txt; echo new > src/d.txt; exit 5';
    const served = await servedRepo(files);
    const before = serverState(served).served ?? 0;
    const viaServer = served.tb(['run', '--report', 'report.json', '--', 'sh', '-c', script]);
    expect(serverState(served).served).toBe(before + 1);
    const alone = await cliRepo(files);
    const viaProcess = inProcess(alone, ['run', '--report', 'report.json', '--', 'sh', '-c', script]);

    expect(viaServer.code).toBe(5);
    expect(viaProcess.code).toBe(5);
    expect(viaServer.stdout).toBe('out\n');
    expect(viaServer.stdout).toBe(viaProcess.stdout);
    // The change list names the same files; only the short ids differ between two stores.
    const withoutIds = (text: string): string => text.replace(/\b[0-9a-z]{8,}\b/g, 'ID');
    expect(withoutIds(viaServer.stderr)).toBe(withoutIds(viaProcess.stderr));
    const reportOf = async (repo: CliRepo): Promise<unknown> => {
      const report = JSON.parse(await readFile(path.join(repo.proj, 'report.json'), 'utf8')) as { changes: unknown; exitCode: number };
      return { changes: report.changes, exitCode: report.exitCode };
    };
    expect(await reportOf(served)).toEqual(await reportOf(alone));
    expect(await reportOf(served)).toEqual({ changes: expect.arrayContaining([{ path: 'a.txt', kind: 'changed' }, { path: 'b.txt', kind: 'deleted' }, { path: 'src/d.txt', kind: 'created' }]), exitCode: 5 });

    // And the served run's picture is undone like any other.
    const undo = served.tb(['undo', '--yes', '--delete-created']);
    expect(undo.code).toBe(0);
    expect(await readFile(path.join(served.proj, 'a.txt'), 'utf8')).toBe('a\n');
    expect(await readFile(path.join(served.proj, 'b.txt'), 'utf8')).toBe('b\n');
  });

  it("takes the client's folder: the project, a relative --report and relative paths are the person's", async () => {
    const repo = await servedRepo({ 'sub/a.txt': 'a\n', 'b.txt': 'b\n' });
    const sub = path.join(repo.proj, 'sub');
    const run = repo.tb(['run', '--report', 'r.json', '--', 'sh', '-c', 'echo x > a.txt'], { cwd: sub });
    expect(run.code).toBe(0);
    const report = JSON.parse(await readFile(path.join(sub, 'r.json'), 'utf8')) as { changes: unknown };
    expect(report.changes).toEqual([{ path: 'sub/a.txt', kind: 'changed' }]);
    const show = repo.tb(['show', repo.newestId(), 'a.txt'], { cwd: sub });
    expect(show.stdout).toContain('sub/a.txt');
    expect(serverState(repo).served).toBeGreaterThanOrEqual(3);
  });

  it.runIf(canBind)('a killed client takes its command with it, and the run is found as interrupted with the client as its process', async () => {
    const repo = await servedRepo({ 'a.txt': 'a\n' });
    const program = "require('fs').writeFileSync('a.txt', 'changed\\n'); console.log('started'); setInterval(() => {}, 1000)";
    const servedBefore = serverState(repo).served ?? 0;
    const run = startRun(repo, [process.execPath, '-e', program]);
    try {
      await run.line('started');
      expect(serverState(repo).served).toBe(servedBefore + 1);
      const exited = once(run.child, 'exit');
      process.kill(run.child.pid as number, 'SIGKILL');
      // Ends only when the command died too (its parent was the client).
      await run.closed;
      await exited;
      const status = JSON.parse(repo.tb(['status', '--json']).stdout) as { interrupted: { pid: number }[] };
      expect(status.interrupted.map((r) => r.pid)).toEqual([run.child.pid]);
      const undo = repo.tb(['undo', '--path', 'a.txt', '--yes']);
      expect(undo.code).toBe(0);
      expect(undo.stderr).toContain('turnback was killed while a command ran');
      expect(await readFile(path.join(repo.proj, 'a.txt'), 'utf8')).toBe('a\n');
      // The server lives on and serves the next command.
      expect(repo.tb(['list']).code).toBe(0);
    } finally {
      killGroup(run.child);
    }
  });

  it("Ctrl-C reaches the served run's command through the client, and the change list still prints", async () => {
    const repo = await servedRepo({ 'a.txt': 'a\n' });
    const program = "process.on('SIGINT', () => { require('fs').writeFileSync('a.txt', 'interrupted\\n'); console.log('got-int'); process.exit(3); }); console.log('started'); setInterval(() => {}, 1000)";
    const servedBefore = serverState(repo).served ?? 0;
    const child = spawn(process.execPath, ['--no-warnings', CLI, 'run', '--', process.execPath, '-e', program], { cwd: repo.proj, env: repo.env, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
    const startedLine = new Promise<void>((resolve) => {
      child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
        stdout += chunk;
        if (stdout.includes('started\n')) resolve();
      });
    });
    await startedLine;
    expect(serverState(repo).served).toBe(servedBefore + 1);
    child.kill('SIGINT');
    const [code] = (await once(child, 'exit')) as [number];
    expect(code).toBe(3);
    expect(stdout).toBe('started\ngot-int\n');
    expect(stderr).toContain('a.txt');
    expect(await readFile(path.join(repo.proj, 'a.txt'), 'utf8')).toBe('interrupted\n');
  });

  it('a socket folder that others could use, or another owner could have made, is never used: commands run in their own process', async () => {
    const repo = await cliRepo({ 'a.txt': 'a\n' });
    const runtime = await tempFolder('turnback-runtime-');
    await mkdir(path.join(runtime, 'turnback'));
    await chmod(path.join(runtime, 'turnback'), 0o777);
    const env = { ...repo.env, XDG_RUNTIME_DIR: runtime };
    const state = serverState(repo, env);
    expect(state.available).toBe(false);
    const run = spawnSync(process.execPath, ['--no-warnings', CLI, 'run', '--', 'sh', '-c', 'echo x > a.txt'], { cwd: repo.proj, env, encoding: 'utf8' });
    expect(run.status).toBe(0);
    expect(run.stderr).toContain('a.txt');
    expect(await readdir(path.join(runtime, 'turnback'))).toEqual([]);
  });

  it('one server per user and build: another HOME, PATH, XDG folder or TURNBACK_* finds the same server; another time zone another', async () => {
    const repo = await servedRepo({ 'a.txt': 'a\n' });
    const own = serverState(repo);
    const other = { ...repo.env, HOME: path.join(repo.home, 'elsewhere'), PATH: `/nowhere${path.delimiter}${repo.env.PATH ?? ''}`, XDG_CONFIG_HOME: path.join(repo.home, 'other-config'), TURNBACK_PROGRESS_AFTER_MS: '5000' };
    expect(serverState(repo, other)).toMatchObject({ running: true, socket: own.socket, pid: own.pid });
    const zoned = serverState(repo, { ...repo.env, TZ: 'UTC' });
    expect(zoned.running).toBe(false);
    expect(zoned.socket).not.toBe(own.socket);
  });

  it("serves two clients at once, each with its own HOME, config, store, PATH and TURNBACK_*: one blocked in a long run, the other's command answers and reads its own", async () => {
    const alice = await servedRepo({ 'a.txt': 'a\n' });
    const bob = await cliRepo({ 'b.txt': 'b\n' });
    // Bob's shell shares alice's socket folder (one user), and nothing else.
    bob.env.XDG_RUNTIME_DIR = alice.runtime;
    const configOf = async (repo: CliRepo, entries: number): Promise<void> => {
      await mkdir(path.join(repo.home, 'config', 'turnback'), { recursive: true });
      await writeFile(path.join(repo.home, 'config', 'turnback', 'config.toml'), `[checkpoints]\nmax_walk_entries = ${entries}\n`);
    };
    await configOf(alice, 1111);
    await configOf(bob, 2222);
    alice.env.TURNBACK_DIR = path.join(alice.home, 'alice-store');
    bob.env.TURNBACK_DIR = path.join(bob.home, 'bob-store');
    // A git only bob's PATH has, which notes each call; the discovery variable makes turnback ask git.
    const bobBin = path.join(bob.home, 'bob-bin');
    const gitLog = path.join(bob.home, 'git-calls.log');
    await mkdir(bobBin);
    await writeFile(path.join(bobBin, 'git'), `#!/bin/sh\necho "$*" >> '${gitLog}'\nexec '${onPath('git') as string}' "$@"\n`);
    await chmod(path.join(bobBin, 'git'), 0o755);
    bob.env.PATH = `${bobBin}${path.delimiter}${bob.env.PATH ?? ''}`;
    bob.env.GIT_CEILING_DIRECTORIES = path.dirname(bob.proj);
    const { pid } = serverState(alice);
    expect(serverState(bob).pid).toBe(pid);

    const gate = path.join(alice.proj, 'gate');
    expect(spawnSync('mkfifo', [gate]).status).toBe(0);
    const run = startRun(alice, ['sh', '-c', 'echo started; echo changed > a.txt; cat gate > /dev/null']);
    try {
      await run.line('started');
      const servedBefore = serverState(bob).served ?? 0;
      // Alice's run waits on the gate until bob's command has answered: a server that served one at a time would never get here.
      const config = bob.tb(['config', '--json']);
      expect(config.code, config.stderr).toBe(0);
      const seen = JSON.parse(config.stdout) as { config: Record<string, { value: unknown; from: string }> };
      expect(seen.config.max_walk_entries).toEqual({ value: 2222, from: path.join(bob.home, 'config', 'turnback', 'config.toml') });
      expect(seen.config.dir).toEqual({ value: path.join(bob.home, 'bob-store'), from: 'TURNBACK_DIR' });
      expect(await readFile(gitLog, 'utf8')).toContain('rev-parse');
      expect(serverState(bob)).toMatchObject({ pid, served: servedBefore + 1 });
      expect(run.lines).toEqual(['started']);
    } finally {
      await writeFile(gate, 'go\n');
    }
    const [code] = (await once(run.child, 'exit')) as [number];
    expect(code).toBe(0);
    const aliceConfig = JSON.parse(alice.tb(['config', '--json']).stdout) as { config: Record<string, { value: unknown }> };
    expect(aliceConfig.config.max_walk_entries?.value).toBe(1111);
    expect(aliceConfig.config.dir?.value).toBe(path.join(alice.home, 'alice-store'));
    // The run went into alice's store, none into bob's.
    const listed = (repo: CliRepo): number => (JSON.parse(repo.tb(['list', '--json']).stdout) as { checkpoints: unknown[] }).checkpoints.length;
    expect(listed(alice)).toBe(1);
    expect(listed(bob)).toBe(0);
    expect(serverState(alice).pid).toBe(pid);
  });

  it('a time zone is its own server: each list shows times in its own zone, as its own process does', async () => {
    const repo = await servedRepo({ 'a.txt': 'a\n' });
    expect(repo.tb(['run', '--', 'sh', '-c', 'echo x > a.txt']).code).toBe(0);
    const listIn = (tz: string, server: 'on' | 'off'): string => {
      const env = { ...repo.env, TZ: tz, ...(server === 'off' ? { TURNBACK_SERVER: 'off' } : {}) };
      if (server === 'on') expect(spawnSync(process.execPath, ['--no-warnings', CLI, 'server', 'start'], { cwd: repo.proj, env }).status).toBe(0);
      const result = spawnSync(process.execPath, ['--no-warnings', CLI, 'list'], { cwd: repo.proj, env, encoding: 'utf8' });
      expect(result.status, result.stderr).toBe(0);
      return result.stdout;
    };
    const utc = listIn('UTC', 'on');
    const tokyo = listIn('Asia/Tokyo', 'on');
    expect(utc).toBe(listIn('UTC', 'off'));
    expect(tokyo).toBe(listIn('Asia/Tokyo', 'off'));
    expect(utc).not.toBe(tokyo);
    const servers = (JSON.parse(repo.tb(['server', '--json']).stdout) as { servers: { tz: string | null; pid: number }[] }).servers;
    expect(servers.map((s) => s.tz).sort()).toEqual(['Asia/Tokyo', 'UTC', null].sort());
    expect(repo.tb(['server', 'stop', '--all']).code).toBe(0);
  });

  it('status shows every server of this user (builds, versions, time zones); stop ends this build\'s, stop --all every one', async () => {
    const repo = await servedRepo({ 'a.txt': 'a\n' });
    // Another build of turnback: the same files at another path.
    const other = path.join(await tempFolder('turnback-other-build-'), 'dist', 'cli');
    await mkdir(other, { recursive: true });
    for (const name of ['main.cjs', 'turnback.cjs']) await writeFile(path.join(other, name), await readFile(path.join(path.dirname(CLI), name)));
    const otherCli = path.join(other, 'turnback.cjs');
    expect(spawnSync(process.execPath, [otherCli, 'server', 'start'], { cwd: repo.proj, env: repo.env }).status).toBe(0);
    expect(spawnSync(process.execPath, [CLI, 'server', 'start'], { cwd: repo.proj, env: { ...repo.env, TZ: 'UTC' } }).status).toBe(0);
    const state = JSON.parse(repo.tb(['server', '--json']).stdout) as { pid: number; servers: { pid: number; thisBuild: boolean; mainFile: string; version: string | null; served: number; rss: number; idleSince: string | null; idleSeconds: number; startedAt: string }[] };
    expect(state.servers).toHaveLength(3);
    expect(new Set(state.servers.map((s) => s.pid)).size).toBe(3);
    expect(state.servers.filter((s) => s.thisBuild).map((s) => s.pid)).toEqual([state.pid]);
    expect(state.servers.map((s) => s.mainFile).sort()).toEqual([path.join(path.dirname(CLI), 'main.cjs'), path.join(path.dirname(CLI), 'main.cjs'), path.join(other, 'main.cjs')].sort());
    for (const s of state.servers) {
      expect(s.rss).toBeGreaterThan(1024 * 1024);
      expect(s.idleSeconds).toBe(Number(TEST_SERVER_IDLE_SECONDS));
      expect(Date.parse(s.idleSince ?? '')).toBeGreaterThanOrEqual(Date.parse(s.startedAt));
    }
    expect(state.servers.find((s) => s.mainFile.startsWith(other))?.version).toBeNull();
    const text = repo.tb(['server']).stdout;
    expect(text).toContain('servers of this user (3');
    expect(text).toContain('this build');
    expect(text).toContain('TZ=UTC');
    expect(text).toContain(path.join(other, 'main.cjs'));
    // The other build's status sees the same three.
    expect((JSON.parse(spawnSync(process.execPath, [otherCli, 'server', '--json'], { cwd: repo.proj, env: repo.env, encoding: 'utf8' }).stdout) as { servers: unknown[] }).servers).toHaveLength(3);

    expect(repo.tb(['server', 'stop']).stdout).toMatch(/^server: stopped \(pid \d+\)/);
    const left = (JSON.parse(repo.tb(['server', '--json']).stdout) as { running: boolean; servers: { pid: number }[] });
    expect(left.running).toBe(false);
    expect(left.servers).toHaveLength(2);
    expect(repo.tb(['server', 'start', '--all']).code).toBe(2);
    const all = repo.tb(['server', 'stop', '--all', '--json']);
    expect((JSON.parse(all.stdout) as { stopped: { pid: number }[] }).stopped.map((s) => s.pid).sort()).toEqual(left.servers.map((s) => s.pid).sort());
    expect((JSON.parse(repo.tb(['server', '--json']).stdout) as { servers: unknown[] }).servers).toEqual([]);
  });

  it("status shows the idle copier's state: no look yet; then its last look, what it copied in, nothing waiting, and when the settled store is looked at again", async () => {
    const files: Record<string, string> = {};
    for (let i = 0; i < 8; i++) files[`src/f${i}.txt`] = `file ${i}\n${'x'.repeat(i * 7)}\n`;
    const repo = await servedRepo(files);
    type Copies = { running: boolean; pending: number; looks: number; copied: number; bytes: number; settled: number; nextRescan: string | null; lastLook: { at: string; storeRoot: string; copied: number; left: number; lost: number; stopped: boolean; failed?: string } | null };
    const copies = (): Copies => {
      const state = JSON.parse(repo.tb(['server', '--json']).stdout) as { servers: { thisBuild: boolean; idleCopies: Copies | null }[] };
      const own = state.servers.find((s) => s.thisBuild)?.idleCopies;
      expect(own).toBeTruthy();
      return own as Copies;
    };
    expect(copies()).toEqual({ running: false, pending: 0, looks: 0, copied: 0, bytes: 0, settled: 0, nextRescan: null, lastLook: null });
    expect(repo.tb(['server']).stdout).toContain('idle copies: no look yet; nothing waiting');

    // Past the copy budget: the run's clean tracked files rest on git, and the server copies them in once idle.
    await writeFile(path.join(repo.proj, 'turnback.toml'), '[checkpoints]\nmax_picture_files = 3\n');
    expect(repo.tb(['run', '--', 'sh', '-c', 'rm -r src']).code).toBe(0);
    // Asking the server about itself is not a command: polling it never interrupts the copy. The deadline only guards a hang.
    const guard = Date.now() + 60_000;
    let state = copies();
    while ((state.running || state.pending > 0 || state.lastLook === null) && Date.now() < guard) state = copies();
    expect(state).toMatchObject({ running: false, pending: 0, looks: 1, settled: 1 });
    const look = state.lastLook as NonNullable<Copies['lastLook']>;
    expect(look).toMatchObject({ left: 0, lost: 0, stopped: false });
    expect(look.failed).toBeUndefined();
    expect(look.copied).toBe(8);
    expect(state.copied).toBe(8);
    expect(state.bytes).toBeGreaterThan(0);
    expect(path.basename(look.storeRoot)).not.toBe('');
    // The settled store is not looked at again for the rescan window (10 minutes) after its look.
    expect(Date.parse(state.nextRescan ?? '') - Date.parse(look.at)).toBe(10 * 60_000);
    const text = repo.tb(['server']).stdout;
    expect(text).toContain(`idle copies: 1 look, 8 blobs copied in (`);
    expect(text).toContain(`last look ${look.at} at `);
    expect(text).toContain(': 8 copied, 0 left on git; nothing waiting; 1 store settled, looked at again from ');
    expect(repo.tb(['status']).stdout).not.toMatch(/rests? only on git's objects/);
  });

  it('leaves by itself after its idle time, which a command being served stops and asking its status does not restart', async () => {
    const repo = await cliRepo({ 'a.txt': 'a\n' });
    const env = { ...repo.env, TURNBACK_SERVER_IDLE_SECONDS: '1' };
    const { socket } = serverState(repo, env);
    const server = spawn(process.execPath, [path.join(path.dirname(CLI), 'main.cjs'), '--turnback-serve', socket as string], { cwd: '/', env, stdio: ['ignore', 'pipe', 'ignore'] });
    const exited = once(server, 'exit');
    try {
      await new Promise<void>((resolve) => {
        let said = '';
        server.stdout.setEncoding('utf8').on('data', (chunk: string) => {
          said += chunk;
          if (said.includes('ready\n')) resolve();
        });
      });
      const gate = path.join(repo.proj, 'gate');
      expect(spawnSync('mkfifo', [gate]).status).toBe(0);
      const run = spawn(process.execPath, ['--no-warnings', CLI, 'run', '--', 'sh', '-c', 'echo started; cat gate > /dev/null'], { cwd: repo.proj, env, stdio: ['ignore', 'pipe', 'pipe'] });
      let stderr = '';
      run.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
      await new Promise<void>((resolve) => run.stdout.setEncoding('utf8').on('data', (chunk: string) => chunk.includes('started') && resolve()));
      const busy = JSON.parse(spawnSync(process.execPath, [CLI, 'server', '--json'], { cwd: repo.proj, env, encoding: 'utf8' }).stdout) as { servers: { pid: number; active: number; idleSince: string | null }[] };
      expect(busy.servers).toEqual([expect.objectContaining({ pid: server.pid, active: 1, idleSince: null })]);
      await writeFile(gate, 'go\n');
      const [code] = (await once(run, 'exit')) as [number];
      expect([code, stderr]).toEqual([0, expect.not.stringContaining('server stopped')]);
      const idle = JSON.parse(spawnSync(process.execPath, [CLI, 'server', '--json'], { cwd: repo.proj, env, encoding: 'utf8' }).stdout) as { servers: { active: number; idleSince: string | null; served: number }[] };
      expect(idle.servers).toEqual([expect.objectContaining({ active: 0, idleSince: expect.any(String), served: 1 })]);
      // Its own exit, with nobody asking it to.
      const [exitCode] = (await exited) as [number];
      expect(exitCode).toBe(0);
      expect(await readdir(path.dirname(socket as string))).not.toContain(path.basename(socket as string));
      expect(serverState(repo, env).running).toBe(false);
    } finally {
      server.kill('SIGKILL');
    }
  });

  it('a connection that does not speak the protocol is closed, and the server keeps serving', async () => {
    const repo = await servedRepo({ 'a.txt': 'a\n' });
    const { socket } = serverState(repo);
    const talk = async (text: string): Promise<string> => {
      const connection = net.connect(socket as string);
      let heard = '';
      connection.setEncoding('utf8').on('data', (chunk: string) => (heard += chunk));
      await once(connection, 'connect');
      connection.write(text);
      await once(connection, 'close');
      return heard;
    };
    expect(await talk('not json\n')).toMatch(/^\{"t":"hello"/);
    // A command that asks the person (undo) is never run by the server: the connection is closed, nothing is restored.
    const frames = (text: string): string[] => text.split('\n').filter((l) => l.length > 0).map((l) => (JSON.parse(l) as { t: string }).t);
    const env = { HOME: repo.home, PATH: repo.env.PATH as string, XDG_DATA_HOME: repo.env.XDG_DATA_HOME as string };
    const undoRequest = `${JSON.stringify({ t: 'request', argv: ['node', 'x', 'undo', '--yes'], cwd: repo.proj, pid: process.pid, env, stdout: { tty: false }, stderr: { tty: false } })}\n`;
    expect(frames(await talk(undoRequest))).toEqual(['hello']);
    // A served command with an environment no client of ours sends: closed, nothing run.
    const listWith = (environment: unknown): string => `${JSON.stringify({ t: 'request', argv: ['node', 'x', 'list', '--json'], cwd: repo.proj, pid: process.pid, env: environment, stdout: { tty: false }, stderr: { tty: false } })}\n`;
    const servedBefore = serverState(repo).served ?? 0;
    for (const environment of [undefined, null, ['HOME=/x'], { ...env, LD_PRELOAD: '/tmp/x.so' }, { ...env, TURNBACK_RUN: 'x' }, { ...env, HOME: 7 }, { ...env, HOME: 'a\u0000b' }, { PATH: 'x'.repeat(300 * 1024) }]) {
      expect(frames(await talk(listWith(environment)))).toEqual(['hello']);
    }
    expect(serverState(repo).served).toBe(servedBefore);
    // The same request with a client's environment is served.
    expect(frames(await talk(listWith(env)))).toEqual(expect.arrayContaining(['hello', 'taken', 'exit']));
    expect(serverState(repo).served).toBe(servedBefore + 1);
    const before = serverState(repo).served ?? 0;
    expect(repo.tb(['list']).code).toBe(0);
    expect(serverState(repo).served).toBe(before + 1);
  });

  it.runIf(process.platform === 'linux')('the server never carries a run mark, even when started from inside a run', async () => {
    const repo = await cliRepo({ 'a.txt': 'a\n' });
    started.push(repo);
    // The server is started by a turnback inside `turnback run`, whose environment has TURNBACK_RUN.
    const outer = repo.tb(['run', '--', process.execPath, '--no-warnings', CLI, 'server', 'start']);
    expect(outer.code, outer.stdout + outer.stderr).toBe(0);
    const { pid } = serverState(repo);
    const environ = await readFile(`/proc/${pid}/environ`, 'utf8');
    expect(environ.split('\0').some((entry) => entry.startsWith('HOME='))).toBe(true);
    expect(environ.split('\0').some((entry) => entry.startsWith('TURNBACK_RUN='))).toBe(false);
  });

  it.runIf(process.platform === 'linux')("the server's own command line carries its V8 flags (Node refuses them in NODE_OPTIONS), and it serves", async () => {
    const repo = await cliRepo({ 'a.txt': 'a\n' });
    started.push(repo);
    expect(repo.tb(['server', 'start']).code).toBe(0);
    const { pid } = serverState(repo);
    const argv = (await readFile(`/proc/${pid}/cmdline`, 'utf8')).split('\0');
    expect(argv).toContain('--max-semi-space-size=2');
    // The flags come before the script: after it they would be the script's arguments, not Node's.
    expect(argv.indexOf('--max-semi-space-size=2')).toBeLessThan(argv.findIndex((arg) => arg.endsWith('.cjs')));
    expect(argv.indexOf('--heap-growing-percent=25')).toBeGreaterThan(-1);
    expect(argv.indexOf('--heap-growing-percent=25')).toBeLessThan(argv.findIndex((arg) => arg.endsWith('.cjs')));
    expect(repo.tb(['list']).code).toBe(0);
    expect(serverState(repo)).toMatchObject({ pid });
  });

  it.runIf(process.platform === 'linux')("the server starts with its malloc settings in GLIBC_TUNABLES, a person's own setting of one winning, and it serves", async () => {
    const repo = await cliRepo({ 'a.txt': 'a\n' });
    started.push(repo);
    repo.env.GLIBC_TUNABLES = 'glibc.malloc.arena_max=4:glibc.malloc.tcache_count=0';
    expect(repo.tb(['server', 'start']).code).toBe(0);
    const { pid } = serverState(repo);
    // What the process was started with: glibc, parsing the variable at start, may cut it into
    // pieces in place (a NUL for each `:`), so the settings are looked for in the whole area.
    const environ = await readFile(`/proc/${pid}/environ`, 'utf8');
    expect(environ).toContain('\0GLIBC_TUNABLES=glibc.malloc.arena_max=4');
    for (const setting of ['glibc.malloc.tcache_count=0', 'glibc.malloc.mmap_threshold=131072', 'glibc.malloc.trim_threshold=131072']) expect(environ).toContain(setting);
    expect(environ).not.toContain('glibc.malloc.arena_max=2');
    expect(repo.tb(['list']).code).toBe(0);
    expect(serverState(repo)).toMatchObject({ pid });
  });

  it('two `server start` at the same moment both succeed, and one server serves them', async () => {
    const repo = await cliRepo({ 'a.txt': 'a\n' });
    started.push(repo);
    const start = () => {
      const child = spawn(process.execPath, ['--no-warnings', CLI, 'server', 'start'], { cwd: repo.proj, env: repo.env, stdio: ['ignore', 'pipe', 'pipe'] });
      let output = '';
      child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
      child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
      return once(child, 'close').then(([code]) => ({ code: code as number | null, output }));
    };
    // Both see no server and launch one; the second to bind finds the first one's socket.
    const results = await Promise.all([start(), start(), start()]);
    for (const result of results) expect(result.code, result.output).toBe(0);
    const pids = results.map((result) => /pid (\d+)/.exec(result.output)?.[1]);
    expect(new Set(pids).size).toBe(1);
    expect(serverState(repo).pid).toBe(Number(pids[0]));
  });

  it('stop ends the server and removes its socket; status then says so', async () => {
    const repo = await servedRepo({ 'a.txt': 'a\n' });
    const { socket } = serverState(repo);
    expect(repo.tb(['server', 'stop']).stdout).toMatch(/^server: stopped \(pid \d+\)/);
    expect(serverState(repo).running).toBe(false);
    expect(await readdir(path.dirname(socket as string))).not.toContain(path.basename(socket as string));
    expect(repo.tb(['server', 'bogus']).code).toBe(2);
  });

  it('with TURNBACK_SERVER=off nothing is started and every command runs in its own process', async () => {
    const repo = await cliRepo({ 'a.txt': 'a\n' });
    const env = { ...repo.env, TURNBACK_SERVER: 'off' };
    const run = spawnSync(process.execPath, ['--no-warnings', CLI, 'run', '--', 'sh', '-c', 'echo x > a.txt'], { cwd: repo.proj, env, encoding: 'utf8' });
    expect(run.status).toBe(0);
    const state = serverState(repo, env);
    expect(state).toMatchObject({ available: false, running: false });
    expect(serverState(repo).running).toBe(false);
  });
});

describe('the hook path', () => {
  it('a served hook sends its request without loading child_process (the launcher, run\'s child)', async () => {
    const repo = await servedRepo({ 'a.txt': 'a\n' });
    // Records, at the moment the request frame is written, which of Node's modules the client loaded.
    const probe = path.join(path.dirname(repo.proj), 'probe.cjs');
    const report = path.join(path.dirname(repo.proj), 'loaded.json');
    await writeFile(
      probe,
      `const net = require('node:net'); const write = net.Socket.prototype.write; let seen = false;
net.Socket.prototype.write = function (chunk, ...rest) {
  if (!seen && typeof chunk === 'string' && chunk.startsWith('{"t":"request"')) {
    seen = true;
    require('node:fs').writeFileSync(${JSON.stringify(report)}, JSON.stringify({ modules: process.moduleLoadList }));
  }
  return write.call(this, chunk, ...rest);
};`,
    );
    const payload = JSON.stringify({ session_id: 's-probe', cwd: repo.proj, hook_event_name: 'PreToolUse', tool_name: 'Read', tool_input: { file_path: 'a.txt' }, tool_use_id: 'toolu_probe' });
    const hook = spawnSync(process.execPath, ['--no-warnings', '-r', probe, CLI, 'hook', 'claude', 'PreToolUse'], { cwd: repo.proj, env: repo.env, input: payload, encoding: 'utf8' });
    expect(hook.status, hook.stderr).toBe(0);
    const { modules } = JSON.parse(await readFile(report, 'utf8')) as { modules: string[] };
    // The request went to the server (the probe saw it), and the path to it needed none of these.
    expect(modules.filter((name) => /^NativeModule (child_process|internal\/child_process|dgram)$/.test(name))).toEqual([]);
    const log = await readFile(`${path.join(repo.home, 'data', 'turnback')}/${(await readdir(path.join(repo.home, 'data', 'turnback'))).find((name) => name.endsWith('.hooks.log'))}`, 'utf8');
    expect(log).toContain('"session":"s-probe"');
  });
});

import { spawn, spawnSync } from 'node:child_process';
import { once } from 'node:events';
import { chmod, mkdir, readdir, readFile, writeFile } from 'node:fs/promises';
import * as net from 'node:net';
import * as path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { CLI, cliRepo, killGroup, startRun, type CliRepo } from './harness.js';
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

  it('a server serves only its own environment: another HOME gets another server', async () => {
    const repo = await servedRepo({ 'a.txt': 'a\n' });
    const other = { ...repo.env, HOME: path.join(repo.home, 'elsewhere') };
    const state = serverState(repo, other);
    expect(state.running).toBe(false);
    expect(state.socket).not.toBe(serverState(repo).socket);
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
    const undoRequest = `${JSON.stringify({ t: 'request', argv: ['node', 'x', 'undo', '--yes'], cwd: repo.proj, pid: process.pid, stdout: { tty: false }, stderr: { tty: false } })}\n`;
    const heard = await talk(undoRequest);
    expect(heard.split('\n').filter((l) => l.length > 0).map((l) => (JSON.parse(l) as { t: string }).t)).toEqual(['hello']);
    const before = serverState(repo).served ?? 0;
    expect(repo.tb(['list']).code).toBe(0);
    expect(serverState(repo).served).toBe(before + 1);
  });

  it.runIf(process.platform === 'linux')('the server never carries a run mark, even when started from inside a run', async () => {
    const repo = await cliRepo({ 'a.txt': 'a\n' });
    started.push(repo);
    // The server is started by a turnback inside `turnback run`, whose environment has TURNBACK_RUN.
    const outer = repo.tb(['run', '--', process.execPath, '--no-warnings', CLI, 'server', 'start']);
    expect(outer.code).toBe(0);
    const { pid } = serverState(repo);
    const environ = await readFile(`/proc/${pid}/environ`, 'utf8');
    expect(environ.split('\0').some((entry) => entry.startsWith('HOME='))).toBe(true);
    expect(environ.split('\0').some((entry) => entry.startsWith('TURNBACK_RUN='))).toBe(false);
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

import { execFileSync, spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import * as path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CLI, cliRepo, TEST_SERVER_IDLE_SECONDS, type CliRepo, type CliResult } from './harness.js';
import { ensureBucket, s3TestServer, type S3TestServer } from '../remote/s3-server.js';
import { S3_SKIPPED } from '../remote/s3-needs.js';
import { S3Backend } from '../../src/remote/s3-backend.js';
import { whenFolderSays } from '../helpers/watch.js';
import { remoteCheckpointIds } from '../../src/remote/sync.js';
import { workspaceIdentity } from '../../src/remote/workspace-identity.js';

// Two copies of one project at different paths, two HOMEs (two machines), one bucket on a real S3
// API server: one machine's turns, taken through `turnback run`, are pushed; the other pulls them,
// lists them and undoes them (issue #16).

let server: S3TestServer;
const BUCKET = 'turnback-cli';

beforeAll(async () => {
  if (S3_SKIPPED !== undefined) return;
  server = await s3TestServer();
  await ensureBucket(server, BUCKET);
}, 180_000);
afterAll(() => server?.stop());

/** The user config of a machine whose store is on the test bucket under `prefix`. */
async function useRemote(home: string, prefix: string, extra = ''): Promise<void> {
  const dir = path.join(home, 'config', 'turnback');
  await mkdir(dir, { recursive: true });
  await writeFile(path.join(dir, 'config.toml'), `[checkpoints]\ndir = "s3://${BUCKET}/${prefix}"\nendpoint = "${server.endpoint}"\nregion = "${server.region}"\nforce_path_style = true\n${extra}`);
}

function awsEnv(): NodeJS.ProcessEnv {
  return { AWS_ACCESS_KEY_ID: server.credentials.accessKeyId, AWS_SECRET_ACCESS_KEY: server.credentials.secretAccessKey, AWS_REGION: server.region };
}

/** A clone of `origin` at another path, as a second machine with its own HOME. */
async function secondMachine(origin: CliRepo): Promise<CliRepo> {
  const root = path.join(path.dirname(origin.proj), 'machine-b');
  const home = path.join(root, 'home');
  const proj = path.join(root, 'somewhere', 'else', 'checkout');
  // Another machine has its own command server: its own socket folder.
  const runtime = path.join(root, 'run');
  await mkdir(home, { recursive: true });
  await mkdir(runtime, { mode: 0o700 });
  await mkdir(path.dirname(proj), { recursive: true });
  execFileSync('git', ['clone', '-q', origin.proj, proj]);
  const env: NodeJS.ProcessEnv = { PATH: process.env.PATH, HOME: home, XDG_DATA_HOME: path.join(home, 'data'), XDG_CONFIG_HOME: path.join(home, 'config'), XDG_RUNTIME_DIR: runtime, NO_COLOR: '1', LANG: 'C', TURNBACK_SERVER_IDLE_SECONDS: TEST_SERVER_IDLE_SECONDS, ...awsEnv() };
  const tb = (args: string[], options: { input?: string; cwd?: string } = {}): CliResult => {
    const result = spawnSync(process.execPath, ['--no-warnings', CLI, ...args], { cwd: options.cwd ?? proj, env, input: options.input ?? '', encoding: 'utf8' });
    return { code: result.status, stdout: result.stdout, stderr: result.stderr };
  };
  const git = (...args: string[]): string => execFileSync('git', args, { cwd: proj, env, encoding: 'utf8' });
  const newestId = (): string => (JSON.parse(tb(['list', '--json']).stdout) as { checkpoints: { id: string }[] }).checkpoints[0]?.id ?? '';
  return { proj, home, runtime, env, tb, git, newestId };
}

describe.skipIf(S3_SKIPPED !== undefined)('turnback push and pull', () => {
  it("one machine's runs are pushed; a clone elsewhere pulls, lists and undoes them byte for byte", async () => {
    const files: Record<string, string> = { 'src/app.ts': 'export const app = 1;\n', 'src/util.ts': 'export const util = 2;\n', 'README.md': '# project\n' };
    const a = await cliRepo(files);
    Object.assign(a.env, awsEnv());
    const prefix = `e2e-${randomBytes(4).toString('hex')}`;
    await useRemote(a.home, prefix);
    const b = await secondMachine(a);
    await useRemote(b.home, prefix);

    expect(a.tb(['run', '--', 'sh', '-c', 'echo "export const app = 10;" > src/app.ts; rm src/util.ts; echo notes > notes.md']).code).toBe(0);
    expect(a.tb(['run', '--', 'sh', '-c', 'echo more >> notes.md; chmod +x README.md']).code).toBe(0);
    // And an agent's turn through its hooks (Claude Code's payloads), the tool's effect in between.
    const session = { session_id: 'sess-e2e', cwd: a.proj, transcript_path: '/dev/null' };
    a.tb(['hook', 'claude', 'UserPromptSubmit'], { input: JSON.stringify({ ...session, hook_event_name: 'UserPromptSubmit', prompt: 'tidy the readme' }) });
    a.tb(['hook', 'claude', 'PreToolUse'], { input: JSON.stringify({ ...session, hook_event_name: 'PreToolUse', tool_name: 'Write', tool_input: { file_path: path.join(a.proj, 'README.md'), content: '# tidied\n' }, tool_use_id: 'toolu_1' }) });
    await writeFile(path.join(a.proj, 'README.md'), '# tidied\n');
    a.tb(['hook', 'claude', 'PostToolUse'], { input: JSON.stringify({ ...session, hook_event_name: 'PostToolUse', tool_name: 'Write', tool_input: { file_path: path.join(a.proj, 'README.md'), content: '# tidied\n' }, tool_use_id: 'toolu_1', tool_response: { success: true } }) });
    a.tb(['hook', 'claude', 'Stop'], { input: JSON.stringify({ ...session, hook_event_name: 'Stop', stop_hook_active: false }) });
    // Each run's end pushed in the background already, or this push sends what is left.
    const push = a.tb(['push']);
    expect(push.code, push.stderr).toBe(0);
    expect(push.stdout).toMatch(/^(pushed \d+ checkpoints? to|nothing to push: s3:\/\/turnback-cli\/e2e-)/);
    expect(a.tb(['status']).stdout).toContain('every checkpoint pushed');
    expect(a.tb(['push']).stdout).toMatch(/^nothing to push/);

    const pull = b.tb(['pull']);
    expect(pull.code, pull.stderr).toBe(0);
    expect(pull.stdout).toMatch(/^pulled \d+ checkpoints? from s3:\/\/turnback-cli\/e2e-/);
    const listedA = JSON.parse(a.tb(['list', '--json', '--all']).stdout) as { checkpoints: { id: string }[] };
    const listedB = JSON.parse(b.tb(['list', '--json', '--all']).stdout) as { checkpoints: { id: string }[] };
    expect(listedB.checkpoints.map((c) => c.id)).toEqual(listedA.checkpoints.map((c) => c.id));
    expect(b.tb(['pull']).stdout).toMatch(/^nothing to pull/);

    // The agent's session is pulled as a session of its own, listed by agent and turn.
    expect(b.tb(['list']).stdout).toContain('tidy the readme');
    // Machine b gets to where machine a is (its own copy of the work), then undoes the agent's
    // turn and both runs, one step at a time.
    const last = (name: string): Promise<string> => readFile(path.join(a.proj, name), 'utf8');
    await writeFile(path.join(b.proj, 'src/app.ts'), await last('src/app.ts'));
    execFileSync('rm', [path.join(b.proj, 'src/util.ts')]);
    await writeFile(path.join(b.proj, 'notes.md'), await last('notes.md'));
    await writeFile(path.join(b.proj, 'README.md'), await last('README.md'));
    execFileSync('chmod', ['+x', path.join(b.proj, 'README.md')]);
    for (let step = 0; step < 3; step++) {
      const undo = b.tb(['undo', '--yes', '--delete-created']);
      expect(undo.code, undo.stdout + undo.stderr).toBe(0);
    }
    for (const [name, text] of Object.entries(files)) expect(await readFile(path.join(b.proj, name), 'utf8')).toBe(text);
    expect(b.git('status', '--porcelain')).toBe('');
  });

  it("a run's end and an agent's turn end push in the background, one push at a time, without anyone running push", async () => {
    const a = await cliRepo({ 'a.txt': 'a\n' });
    Object.assign(a.env, awsEnv());
    const prefix = `bg-${randomBytes(4).toString('hex')}`;
    await useRemote(a.home, prefix);
    const backend = await S3Backend.open({ location: `s3://${BUCKET}/${prefix}`, endpoint: server.endpoint, region: server.region, forcePathStyle: true, credentials: server.credentials });
    const workspace = await workspaceIdentity(a.proj);
    let stateFolder = '';
    /**
     * The remote's checkpoints once it holds `count`: the push runs in a process of its own, which
     * notes each push it ends in the store's state folder — asked again at every change there.
     */
    const remoteHolds = async (count: number): Promise<string[]> => {
      await whenFolderSays(stateFolder, async () => (await remoteCheckpointIds(backend, workspace)).length >= count, `the remote to hold ${count} checkpoints`);
      return remoteCheckpointIds(backend, workspace);
    };
    try {
      expect(a.tb(['run', '--', 'sh', '-c', 'echo b > b.txt']).code).toBe(0);
      stateFolder = path.join((JSON.parse(a.tb(['status', '--json']).stdout) as { store: { dir: string } }).store.dir, 'state');
      expect(await remoteHolds(1)).toEqual([a.newestId()]);
      // Three runs back to back: pushes overlap, one holds the slot and pushes again until none is new.
      for (const name of ['c', 'd', 'e']) expect(a.tb(['run', '--', 'sh', '-c', `echo ${name} > ${name}.txt`]).code).toBe(0);
      const all = (JSON.parse(a.tb(['list', '--json', '--all']).stdout) as { checkpoints: { id: string }[] }).checkpoints.map((c) => c.id);
      expect(await remoteHolds(all.length)).toEqual([...all].sort());
      // An agent's turn end (Claude Code's Stop hook) pushes too.
      const session = { session_id: 'sess-bg', cwd: a.proj, transcript_path: '/dev/null' };
      a.tb(['hook', 'claude', 'UserPromptSubmit'], { input: JSON.stringify({ ...session, hook_event_name: 'UserPromptSubmit', prompt: 'write f' }) });
      await writeFile(path.join(a.proj, 'f.txt'), 'f\n');
      a.tb(['hook', 'claude', 'Stop'], { input: JSON.stringify({ ...session, hook_event_name: 'Stop', stop_hook_active: false }) });
      const afterTurn = (JSON.parse(a.tb(['list', '--json', '--all']).stdout) as { checkpoints: { id: string }[] }).checkpoints.map((c) => c.id);
      expect(afterTurn.length).toBeGreaterThan(all.length);
      expect(await remoteHolds(afterTurn.length)).toEqual([...afterTurn].sort());
      expect(a.tb(['status']).stdout).toContain('every checkpoint pushed');
    } finally {
      backend.close();
    }
  });

  it('prune clears the remote copy by the same retain, keeping young unnamed bundles, and nothing comes back on the next push', async () => {
    const a = await cliRepo({ 'a.txt': 'a\n' });
    Object.assign(a.env, awsEnv());
    const prefix = `prune-${randomBytes(4).toString('hex')}`;
    await useRemote(a.home, prefix);
    for (const name of ['b', 'c', 'd']) expect(a.tb(['run', '--', 'sh', '-c', `echo ${name} > a.txt`]).code).toBe(0);
    expect(a.tb(['push']).code).toBe(0);
    await useRemote(a.home, prefix, 'retain = 1\n');
    const dry = a.tb(['prune', '--dry-run']);
    expect(dry.stdout).toMatch(new RegExp(`remote s3://${BUCKET}/${prefix}/: would clear 2 checkpoints`));
    const prune = JSON.parse(a.tb(['prune', '--json']).stdout) as { remote: { report: { kept: number; removed: string[]; bundlesRemoved: number; bundlesSpared: number } } };
    // The bundles only the cleared checkpoints named are minutes old, not an hour: kept for now.
    expect(prune.remote.report).toMatchObject({ kept: 1, bundlesRemoved: 0 });
    expect(prune.remote.report.removed).toHaveLength(2);
    const again = a.tb(['prune']);
    expect(again.code, again.stderr).toBe(0);
    expect(again.stdout).toMatch(new RegExp(`remote s3://${BUCKET}/${prefix}/: cleared 0 checkpoints and 0 bundles \\(0 B\\); 1 kept`));
    if (prune.remote.report.bundlesSpared > 0) expect(again.stdout).toContain('younger than an hour kept');
    expect(a.tb(['push']).stdout).toMatch(/^nothing to push/);
  });

  it('without a remote, a bad location, an unreachable server or wrong credentials: a clear message and its exit code, and the local store untouched', async () => {
    const a = await cliRepo({ 'a.txt': 'a\n' });
    expect(a.tb(['run', '--', 'true']).code).toBe(0);
    const none = a.tb(['push']);
    expect([none.code, none.stderr]).toEqual([2, expect.stringContaining('no remote store: set dir = "s3://bucket/prefix"')]);
    const config = path.join(a.home, 'config', 'turnback', 'config.toml');
    await mkdir(path.dirname(config), { recursive: true });
    await writeFile(config, '[checkpoints]\ndir = "s3://Bad_Bucket"\n');
    expect(a.tb(['push']).code).toBe(2);
    await writeFile(config, '[checkpoints]\nendpoint = "http://127.0.0.1:1"\n');
    expect(a.tb(['status']).stderr).toContain('endpoint applies only to a store on S3');
    await writeFile(config, `[checkpoints]\ndir = "s3://${BUCKET}/x"\nendpoint = "http://127.0.0.1:1"\nforce_path_style = true\n`);
    Object.assign(a.env, awsEnv());
    // A run's end tries in the background; it cannot, says why in the remote log, and the run
    // itself never noticed. status counts what is not pushed.
    expect(a.tb(['run', '--', 'sh', '-c', 'echo x > x.txt']).code).toBe(0);
    const statusJson = JSON.parse(a.tb(['status', '--json']).stdout) as { store: { dir: string } };
    const log = `${statusJson.store.dir}.remote.log`;
    await whenFolderSays(path.dirname(log), async () => (await readFile(log, 'utf8').catch(() => '')).includes('unreachable'), 'the background push to log why it failed');
    expect(await readFile(log, 'utf8')).toMatch(/turnback push after a turn: .*unreachable; try again later/);
    expect(a.tb(['status']).stdout).toMatch(/remote: s3:\/\/turnback-cli\/x\/ · [2-9] checkpoints not pushed yet \(turnback push\) · never pushed from here/);
    const unreachable = a.tb(['push']);
    expect(unreachable.code).toBe(1);
    expect(unreachable.stderr).toMatch(/unreachable; try again later/);
    await useRemote(a.home, 'x');
    Object.assign(a.env, { AWS_SECRET_ACCESS_KEY: 'wrong' });
    const denied = a.tb(['pull']);
    expect(denied.code).toBe(1);
    expect(denied.stderr).toContain('(denied)');
    expect(a.tb(['verify']).code).toBe(0);
    expect((JSON.parse(a.tb(['list', '--json', '--all']).stdout) as { checkpoints: unknown[] }).checkpoints.length).toBeGreaterThan(0);
  });
});

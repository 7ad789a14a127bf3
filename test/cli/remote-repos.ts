import { execFileSync, spawn, spawnSync } from 'node:child_process';
import { mkdir, writeFile } from 'node:fs/promises';
import * as path from 'node:path';
import { expect } from 'vitest';
import type { S3TestServer } from '../remote/s3-server.js';
import { CLI, cliRepo, TEST_SERVER_IDLE_SECONDS, type CliRepo, type CliResult } from './harness.js';

// Repositories whose turns are pushed to a bucket of the S3 test server, for the tests and the
// fault classes that cut, freeze or kill a push (test/cli/remote-faults.test.ts,
// test/faults/remote-hangs.test.ts).

/** The helpers, for the server `server()` names (known once the file's beforeAll ran) and `bucket`. */
export function remoteRepos(server: () => S3TestServer, bucket: string): {
  repoWithTurns(turns: number, prefix: string, endpoint?: string): Promise<CliRepo>;
  configure(repo: CliRepo, prefix: string, endpoint: string, extra?: string): Promise<void>;
  tbAsync(repo: CliRepo, args: string[]): Promise<{ code: number | null; stderr: string }>;
  sealedCount(repo: CliRepo): number;
} {
  /** A repository with `turns` runs, each rewriting 40 files of 16 KiB; its remote set only afterwards (no background pushes). */
  async function repoWithTurns(turns: number, prefix: string, endpoint = server().endpoint): Promise<CliRepo> {
    const files: Record<string, string> = {};
    for (let i = 0; i < 40; i++) files[`data/f${i}.txt`] = `original ${i}\n`;
    const repo = await cliRepo(files);
    for (let t = 0; t < turns; t++) {
      const script = `for i in $(seq 0 39); do head -c 16384 /dev/urandom | base64 > data/f$i.txt; done`;
      expect(repo.tb(['run', '--', 'sh', '-c', script]).code).toBe(0);
    }
    const { credentials, region } = server();
    Object.assign(repo.env, { AWS_ACCESS_KEY_ID: credentials.accessKeyId, AWS_SECRET_ACCESS_KEY: credentials.secretAccessKey, AWS_REGION: region });
    await configure(repo, prefix, endpoint);
    return repo;
  }

  async function configure(repo: CliRepo, prefix: string, endpoint: string, extra = ''): Promise<void> {
    const dir = path.join(repo.home, 'config', 'turnback');
    await mkdir(dir, { recursive: true });
    await writeFile(path.join(dir, 'config.toml'), `[checkpoints]\ndir = "s3://${bucket}/${prefix}"\nendpoint = "${endpoint}"\nforce_path_style = true\n${extra}`);
  }

  /** `turnback ARGS` without blocking this process (a relay may run in it). */
  function tbAsync(repo: CliRepo, args: string[]): Promise<{ code: number | null; stderr: string }> {
    const child = spawn(process.execPath, ['--no-warnings', CLI, ...args], { cwd: repo.proj, env: repo.env, stdio: ['ignore', 'ignore', 'pipe'] });
    let stderr = '';
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    return new Promise((resolve) => child.on('close', (code) => resolve({ code, stderr })));
  }

  function sealedCount(repo: CliRepo): number {
    return (JSON.parse(repo.tb(['list', '--json', '--all']).stdout) as { checkpoints: unknown[] }).checkpoints.length;
  }

  return { repoWithTurns, configure, tbAsync, sealedCount };
}

/** A clone of `origin` at another path, as a second machine with its own HOME and command server; `extraEnv` joins its environment (credentials). */
export async function secondMachine(origin: CliRepo, extraEnv: NodeJS.ProcessEnv = {}): Promise<CliRepo> {
  const root = path.join(path.dirname(origin.proj), 'machine-b');
  const home = path.join(root, 'home');
  const proj = path.join(root, 'somewhere', 'else', 'checkout');
  // Another machine has its own command server: its own socket folder.
  const runtime = path.join(root, 'run');
  await mkdir(home, { recursive: true });
  await mkdir(runtime, { mode: 0o700 });
  await mkdir(path.dirname(proj), { recursive: true });
  execFileSync('git', ['clone', '-q', origin.proj, proj]);
  const env: NodeJS.ProcessEnv = { PATH: process.env.PATH, HOME: home, XDG_DATA_HOME: path.join(home, 'data'), XDG_CONFIG_HOME: path.join(home, 'config'), XDG_RUNTIME_DIR: runtime, NO_COLOR: '1', LANG: 'C', TURNBACK_SERVER_IDLE_SECONDS: TEST_SERVER_IDLE_SECONDS, ...extraEnv };
  const tb = (args: string[], options: { input?: string; cwd?: string } = {}): CliResult => {
    const result = spawnSync(process.execPath, ['--no-warnings', CLI, ...args], { cwd: options.cwd ?? proj, env, input: options.input ?? '', encoding: 'utf8' });
    return { code: result.status, stdout: result.stdout, stderr: result.stderr };
  };
  const git = (...args: string[]): string => execFileSync('git', args, { cwd: proj, env, encoding: 'utf8' });
  const newestId = (): string => (JSON.parse(tb(['list', '--json']).stdout) as { checkpoints: { id: string }[] }).checkpoints[0]?.id ?? '';
  return { proj, home, runtime, env, tb, git, newestId };
}

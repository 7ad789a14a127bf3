import { execFile, execFileSync, spawn } from 'node:child_process';
import { chmod, mkdir, readFile, writeFile } from 'node:fs/promises';
import * as os from 'node:os';
import * as path from 'node:path';
import { promisify } from 'node:util';
import { beforeAll, describe, expect, it } from 'vitest';
import { homeFolder } from '../../src/core/home.js';
import { readGitBlob } from '../../src/store/git-blobs.js';
import { installRequestEnvironment, requestVariables, withEnvironment } from '../../src/server/request-env.js';
import { tempFolder } from '../helpers/temp.js';

// The server's `process.env` (src/server/request-env.ts): each served command reads its own
// client's environment in every way command code reads one, while another is served at once.

const run = promisify(execFile);

/** Two commands' turns interleaved: each waits for the other to have started before it goes on. */
function rendezvous(): { arrive(): Promise<void> } {
  let arrived = 0;
  let release: () => void = () => undefined;
  const both = new Promise<void>((resolve) => (release = resolve));
  return {
    arrive() {
      arrived++;
      if (arrived === 2) release();
      return both;
    },
  };
}

/** What a child started without an `env` option was given. */
function childEnvironment(names: string[]): Promise<Record<string, string | null>> {
  return new Promise((resolve, reject) => {
    const program = `process.stdout.write(JSON.stringify(Object.fromEntries(${JSON.stringify(names)}.map((n) => [n, process.env[n] ?? null]))))`;
    const child = spawn(process.execPath, ['-e', program], { stdio: ['ignore', 'pipe', 'inherit'] });
    let text = '';
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => (text += chunk));
    child.on('error', reject);
    child.on('close', () => resolve(JSON.parse(text) as Record<string, string | null>));
  });
}

interface Client {
  home: string;
  bin: string;
  env: Record<string, string>;
}

async function client(name: string): Promise<Client> {
  const root = await tempFolder(`turnback-env-${name}-`);
  const home = path.join(root, 'home');
  const bin = path.join(root, 'bin');
  await mkdir(home);
  await mkdir(bin);
  await writeFile(path.join(home, '.gitconfig'), `[user]\n\tname = ${name}\n`);
  // A command only this client's PATH has.
  const tool = path.join(bin, 'whose-path');
  await writeFile(tool, `#!/bin/sh\necho ${name}\n`);
  await chmod(tool, 0o755);
  const env = { HOME: home, PATH: `${bin}${path.delimiter}${process.env.PATH ?? ''}`, XDG_CONFIG_HOME: path.join(home, 'config'), TURNBACK_PROBE: name, GIT_CONFIG_NOSYSTEM: '1' };
  return { home, bin, env };
}

describe("a served command's process.env", () => {
  const serverHome = process.env.HOME;
  beforeAll(() => {
    process.env.TURNBACK_PROBE_SERVER_ONLY = 'server';
    process.env.SERVER_ONLY_SETTING = 'server';
    installRequestEnvironment();
    installRequestEnvironment();
  });

  it('is the client\'s in reads, copies, key lists, "in" and JSON, for two commands interleaved, and the server\'s outside them', async () => {
    const [a, b] = [await client('alice'), await client('bob')];
    const meet = rendezvous();
    const serve = (who: Client): Promise<unknown> =>
      withEnvironment(requestVariables(who.env), async () => {
        await meet.arrive();
        await new Promise((resolve) => setTimeout(resolve, 1));
        await new Promise((resolve) => setImmediate(resolve));
        await readFile(path.join(who.home, '.gitconfig'));
        const copy = { ...process.env };
        return {
          read: process.env.TURNBACK_PROBE,
          home: process.env.HOME,
          copy: [copy.TURNBACK_PROBE, copy.HOME],
          keys: Object.keys(process.env).includes('TURNBACK_PROBE'),
          has: 'TURNBACK_PROBE' in process.env,
          json: (JSON.parse(JSON.stringify(process.env)) as Record<string, string>).TURNBACK_PROBE,
          // A relayed name the client lacks is unset, whatever the server has; the rest is the server's.
          relayedButMissing: process.env.TURNBACK_PROBE_SERVER_ONLY,
          serverOnly: process.env.SERVER_ONLY_SETTING,
          inherited: typeof process.env.hasOwnProperty,
        };
      });
    const [seenA, seenB] = await Promise.all([serve(a), serve(b)]);
    const expected = (who: Client, name: string): unknown => ({ read: name, home: who.home, copy: [name, who.home], keys: true, has: true, json: name, relayedButMissing: undefined, serverOnly: 'server', inherited: 'function' });
    expect(seenA).toEqual(expected(a, 'alice'));
    expect(seenB).toEqual(expected(b, 'bob'));
    expect(process.env.TURNBACK_PROBE).toBeUndefined();
    expect(process.env.HOME).toBe(serverHome);
    expect(process.env.TURNBACK_PROBE_SERVER_ONLY).toBe('server');
  });

  it("keeps a command's writes and deletes to itself", async () => {
    const [a, b] = [await client('alice'), await client('bob')];
    const meet = rendezvous();
    const envA = requestVariables(a.env);
    const written = withEnvironment(envA, async () => {
      process.env.TURNBACK_WRITTEN = 'by alice';
      Object.defineProperty(process.env, 'TURNBACK_DEFINED', { value: 7, enumerable: true, configurable: true, writable: true });
      delete process.env.TURNBACK_PROBE;
      await meet.arrive();
      return [process.env.TURNBACK_WRITTEN, process.env.TURNBACK_DEFINED, 'TURNBACK_PROBE' in process.env];
    });
    const other = withEnvironment(requestVariables(b.env), async () => {
      await meet.arrive();
      return [process.env.TURNBACK_WRITTEN, process.env.TURNBACK_DEFINED, process.env.TURNBACK_PROBE];
    });
    expect(await written).toEqual(['by alice', '7', false]);
    expect(await other).toEqual([undefined, undefined, 'bob']);
    expect(envA.TURNBACK_WRITTEN).toBe('by alice');
    expect(process.env.TURNBACK_WRITTEN).toBeUndefined();
    // Outside a request a write is the real environment's, as before the Proxy.
    process.env.TURNBACK_OUTSIDE = 'server';
    expect((await childEnvironment(['TURNBACK_OUTSIDE'])).TURNBACK_OUTSIDE).toBe('server');
    delete process.env.TURNBACK_OUTSIDE;
  });

  it("is what a child started without an env option gets, its PATH finds the client's commands, and git reads the client's HOME", async () => {
    const [a, b] = [await client('alice'), await client('bob')];
    const meet = rendezvous();
    const serve = (who: Client): Promise<unknown> =>
      withEnvironment(requestVariables(who.env), async () => {
        await meet.arrive();
        const given = await childEnvironment(['TURNBACK_PROBE', 'HOME', 'SERVER_ONLY_SETTING']);
        // Found on the client's PATH only, started without an env (as src/remote/workspace-identity.ts starts git).
        const found = (await run('whose-path', [], { encoding: 'utf8' })).stdout.trim();
        const gitName = (await run('git', ['config', '--global', 'user.name'], { encoding: 'utf8' })).stdout.trim();
        // A copy with one change, as src/store/git-blobs.ts and src/cli/git.ts start git.
        const spread = (await run('git', ['config', '--global', 'user.name'], { encoding: 'utf8', env: { ...process.env, GIT_OPTIONAL_LOCKS: '0' } })).stdout.trim();
        return { given, found, gitName, spread };
      });
    const [seenA, seenB] = await Promise.all([serve(a), serve(b)]);
    expect(seenA).toEqual({ given: { TURNBACK_PROBE: 'alice', HOME: a.home, SERVER_ONLY_SETTING: 'server' }, found: 'alice', gitName: 'alice', spread: 'alice' });
    expect(seenB).toEqual({ given: { TURNBACK_PROBE: 'bob', HOME: b.home, SERVER_ONLY_SETTING: 'server' }, found: 'bob', gitName: 'bob', spread: 'bob' });
  });

  it("gives homeFolder() the client's HOME, where os.homedir() still answers the server's", async () => {
    const a = await client('alice');
    const seen = await withEnvironment(requestVariables(a.env), async () => [homeFolder(), os.homedir()]);
    // libuv reads HOME from the C environment, which the Proxy never changes: why src/ uses homeFolder().
    expect(seen).toEqual([a.home, os.homedir()]);
    expect(os.homedir()).not.toBe(a.home);
    const withoutHome = await withEnvironment(requestVariables({ PATH: a.env.PATH as string }), async () => homeFolder());
    expect(withoutHome).toBe(os.userInfo().homedir);
  });
  it("never hands one request's long-lived git reader to a request with another PATH", async () => {
    const repo = await tempFolder('turnback-env-repo-');
    execFileSync('git', ['init', '-q'], { cwd: repo });
    const id = execFileSync('git', ['hash-object', '-w', '--stdin'], { cwd: repo, input: 'blob text\n', encoding: 'utf8' }).trim();
    const realGit = (await run('sh', ['-c', 'command -v git'], { encoding: 'utf8' })).stdout.trim();
    const withLoggingGit = async (who: Client): Promise<string> => {
      const log = path.join(who.home, 'git.log');
      await writeFile(path.join(who.bin, 'git'), `#!/bin/sh\necho "$1" >> '${log}'\nexec '${realGit}' "$@"\n`);
      await chmod(path.join(who.bin, 'git'), 0o755);
      return log;
    };
    const [a, b] = [await client('alice'), await client('bob')];
    const [logA, logB] = [await withLoggingGit(a), await withLoggingGit(b)];
    for (const who of [a, b, a]) {
      const bytes = await withEnvironment(requestVariables(who.env), () => readGitBlob(repo, id));
      expect(bytes.toString()).toBe('blob text\n');
    }
    // One reader per environment: alice's started once and reused, bob's his own.
    expect(await readFile(logA, 'utf8')).toBe('cat-file\n');
    expect(await readFile(logB, 'utf8')).toBe('cat-file\n');
  });
});

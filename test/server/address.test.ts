import { chmod, copyFile, mkdir, stat, writeFile } from 'node:fs/promises';
import * as path from 'node:path';
import { describe, expect, it } from 'vitest';
import { serverAddress, socketFolder, socketKey, socketsIn } from '../../src/server/address.js';
import { tempFolder } from '../helpers/temp.js';

describe("the server socket's name", () => {
  it('is 20 hex digits, the same for the same text, and different for 50,000 near-identical texts', () => {
    const key = socketKey('3\0/x/dist/cli/main.cjs\0TZ unset');
    expect(key).toMatch(/^[0-9a-f]{20}$/);
    expect(socketKey('3\0/x/dist/cli/main.cjs\0TZ unset')).toBe(key);
    const seen = new Set<string>();
    for (let i = 0; i < 50_000; i++) seen.add(socketKey(`3\0/x${i}/dist/cli/main.cjs\0TZ unset`));
    // One character apart, or the same characters moved: every one a name of its own.
    for (const text of ['ab', 'ba', 'a\u0000b', 'b\u0000a', '']) seen.add(socketKey(text));
    expect(seen.size).toBe(50_005);
  });
});

describe('which server a client talks to', () => {
  async function build(): Promise<{ runtime: string; main: string; env: NodeJS.ProcessEnv }> {
    const root = await tempFolder('turnback-address-');
    const runtime = path.join(root, 'run');
    await mkdir(runtime);
    const main = path.join(root, 'dist', 'cli', 'main.cjs');
    await mkdir(path.dirname(main), { recursive: true });
    await writeFile(main, '// a build\n');
    return { runtime, main, env: { XDG_RUNTIME_DIR: runtime, HOME: '/home/a', PATH: '/usr/bin' } };
  }

  it('one per user and build: another HOME, PATH, XDG folder, locale or TURNBACK_* finds the same socket', async () => {
    const { main, env } = await build();
    const socket = serverAddress(main, env)?.socket;
    expect(socket).toMatch(/\/turnback\/[0-9a-f]{20}\.sock$/);
    for (const other of [{ HOME: '/home/b' }, { PATH: '/opt/bin:/usr/bin' }, { XDG_CONFIG_HOME: '/elsewhere' }, { LANG: 'de_DE.UTF-8' }, { TURNBACK_DIR: '/store' }, { GIT_DIR: '/g' }]) {
      expect(serverAddress(main, { ...env, ...other })?.socket).toBe(socket);
    }
  });

  it('another build (a copy, a rebuild) or another time zone is another server; TZ unset and TZ empty differ', async () => {
    const { main, env } = await build();
    const socket = serverAddress(main, env)?.socket;
    const copy = path.join(path.dirname(main), 'copy.cjs');
    await copyFile(main, copy);
    expect(serverAddress(copy, env)?.socket).not.toBe(socket);
    const zones = new Set([socket, serverAddress(main, { ...env, TZ: 'UTC' })?.socket, serverAddress(main, { ...env, TZ: 'Asia/Tokyo' })?.socket, serverAddress(main, { ...env, TZ: '' })?.socket]);
    expect(zones.size).toBe(4);
    await writeFile(main, '// rebuilt, one byte longer\n');
    expect(serverAddress(main, env)?.socket).not.toBe(socket);
    expect(serverAddress(main, { ...env, TURNBACK_SERVER: 'off' })).toBeUndefined();
  });

  it.runIf(process.getuid !== undefined)("without XDG_RUNTIME_DIR: systemd's private /run/user/<uid> when there is one, else the temp folder", async () => {
    const runUser = await tempFolder('turnback-run-user-');
    const mine = path.join(runUser, String(process.getuid?.()));
    const env = { TMPDIR: process.env.TMPDIR };
    expect(socketFolder(env, runUser)).not.toContain(runUser);
    await mkdir(mine, { mode: 0o700 });
    await chmod(mine, 0o700);
    expect(socketFolder(env, runUser)).toBe(path.join(mine, 'turnback'));
    expect((await stat(path.join(mine, 'turnback'))).mode & 0o777).toBe(0o700);
    // Open to others: never used.
    await chmod(mine, 0o755);
    expect(socketFolder(env, runUser)).not.toContain(runUser);
  });

  it('lists every socket of the folder, whatever build made it', async () => {
    const { runtime, main, env } = await build();
    const folder = socketFolder(env) as string;
    expect(folder).toBe(path.join(runtime, 'turnback'));
    await writeFile(path.join(folder, 'aaaa.sock'), '');
    await writeFile(path.join(folder, 'aaaa.sock.blocked'), '');
    expect(socketsIn(folder)).toEqual([path.join(folder, 'aaaa.sock')]);
    expect(serverAddress(main, env)?.socket.startsWith(folder)).toBe(true);
  });
});

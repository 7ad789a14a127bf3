import * as fs from 'node:fs';
import * as net from 'node:net';
import * as path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { hintWatchers, useWatchers, watcherFor, type WatcherFactory } from '../../src/capture/watchers.js';
import { PROTOCOL_VERSION } from '../../src/server/address.js';
import { readFrames, sendFrame } from '../../src/server/frames.js';
import { sendWatchHint } from '../../src/server/watch-hint.js';
import { watchHinted } from '../../src/server/watching.js';
import { tempFolder } from '../helpers/temp.js';

// A command that found no server and started one tells it which project it pictures, so the new
// server's watch (watchman's crawl of the tree) starts beside that command (issue #28: a server's
// exit cost the next three commands on a big tree a full sweep each). Real sockets in a temp folder;
// the server's side is its own frame code and its own check of what it is told.

afterEach(async () => {
  hintWatchers(undefined);
  await useWatchers(undefined);
});

/** A watcher factory that notes the roots it is asked for and watches nothing. */
function notingFactory(asked: string[]): WatcherFactory {
  return (root) => {
    asked.push(root);
    return Promise.resolve({ refused: true, reason: 'stopped', detail: 'a test factory watches nothing' });
  };
}

describe('the server takes a hinted project only as a canonical folder, and only while it watches', () => {
  it('starts the watcher of a real folder once, and refuses every other root without starting anything', async () => {
    const dir = await tempFolder('turnback-watch-hint-');
    const project = path.join(dir, 'project');
    fs.mkdirSync(project);
    fs.writeFileSync(path.join(dir, 'file'), 'x');
    fs.symlinkSync(project, path.join(dir, 'link'));
    const asked: string[] = [];
    // Not watching (a command in its own process): nothing is taken.
    expect(watchHinted(project)).toBe(false);
    await useWatchers(notingFactory(asked));
    const refused: unknown[] = ['project', path.join(dir, 'missing'), path.join(dir, 'file'), path.join(dir, 'link'), `${project}/../project`, `${project}\0`, `/${'a'.repeat(5000)}`, 42, null, undefined, { root: project }, [project]];
    for (const root of refused) expect(watchHinted(root), String(root)).toBe(false);
    expect(asked).toEqual([]);
    expect(watchHinted(project)).toBe(true);
    // Told twice (two commands), started once: the second finds the first's entry.
    expect(watchHinted(project)).toBe(true);
    expect(asked).toEqual([project]);
  });
});

describe('a process that does not watch tells of each project it pictures once', () => {
  it('calls the hint once per root and still answers that it has no watcher', () => {
    const told: string[] = [];
    hintWatchers((root) => told.push(root));
    expect(watcherFor('/a')).toBeUndefined();
    expect(watcherFor('/a')).toBeUndefined();
    expect(watcherFor('/b')).toBeUndefined();
    expect(told).toEqual(['/a', '/b']);
    hintWatchers(undefined);
    expect(watcherFor('/c')).toBeUndefined();
    expect(told).toEqual(['/a', '/b']);
  });
});

describe('sending the hint', () => {
  /** A server at `socketPath` that says hello with `protocol` and hands on the frames it is sent. */
  async function fakeServer(socketPath: string, protocol: number, frames: Record<string, unknown>[]): Promise<net.Server> {
    const server = net.createServer((socket) => {
      sendFrame(socket, { t: 'hello', protocol, pid: process.pid });
      readFrames(socket, (frame) => frames.push(frame));
    });
    await new Promise<void>((resolve) => server.listen(socketPath, resolve));
    return server;
  }

  it('reaches a server that starts listening after the hint was sent off, and sends the one frame', async () => {
    const dir = await tempFolder('turnback-watch-hint-');
    const socketPath = path.join(dir, 's.sock');
    const frames: Record<string, unknown>[] = [];
    // Sent before anything listens at the path, as a command sends it while the server it started boots.
    const sent = sendWatchHint(socketPath, '/the/project', 50, 20);
    const server = await fakeServer(socketPath, PROTOCOL_VERSION, frames);
    expect(await sent).toBe(true);
    // Closing waits for the connection to end, by which time its line has been read.
    await new Promise<void>((resolve) => server.close(() => resolve()));
    expect(frames).toEqual([{ t: 'watch', root: '/the/project' }]);
  });

  it('gives up quietly on a server of another protocol and where nothing ever listens', async () => {
    const dir = await tempFolder('turnback-watch-hint-');
    const frames: Record<string, unknown>[] = [];
    const other = await fakeServer(path.join(dir, 'old.sock'), PROTOCOL_VERSION - 1, frames);
    try {
      expect(await sendWatchHint(path.join(dir, 'old.sock'), '/p', 3, 10)).toBe(false);
    } finally {
      await new Promise<void>((resolve) => other.close(() => resolve()));
    }
    expect(frames).toEqual([]);
    expect(await sendWatchHint(path.join(dir, 'nobody.sock'), '/p', 3, 10)).toBe(false);
  });
});

import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs/promises';
import * as net from 'node:net';
import * as path from 'node:path';
import { describe, it } from 'vitest';
import { isCheckpointError } from '../../src/core/errors.js';
import type { StoreBackend } from '../../src/remote/backend.js';
import { DirectoryBackend } from '../../src/remote/directory-backend.js';
import { pullCheckpoints, pushCheckpoints } from '../../src/remote/sync.js';
import { workspaceIdentity } from '../../src/remote/workspace-identity.js';
import { CheckpointStore } from '../../src/store/store.js';
import { cliRepo } from '../cli/harness.js';
import { tempFolder } from '../helpers/temp.js';
import { project, turn } from '../remote/scenarios.js';
import { Tally, trials } from './campaign.js';

// Two classes of issue #31.
//
// Files of the wrong kind: a FIFO, a folder or a listening socket where turnback reads a file by
// its path (the project's turnback.toml, the user's config.toml, an agent's settings files, the
// project's .gitignore), then a seeded command. Held: the command ends by itself (a hang is the
// test's time-out), and when it refuses, it names the path.
//
// A pull from a damaged stream: the bytes of one bundle arrive with one seeded byte flipped, or
// cut at a seeded length. Held: the pull refuses it (INTEGRITY), nothing of that checkpoint is
// added, no scratch file is left in the store, and a clean pull then brings everything.

// Claude Code's two files: `hooks install claude` writes its HTTP hooks into this machine's own
// settings.local.json and takes turnback's out of the committed settings.json (and back).
const TARGETS = ['turnback.toml', 'config.toml', '.claude/settings.json', '.claude/settings.local.json', '.gitignore'] as const;
const KINDS = ['fifo', 'folder', 'socket'] as const;
/** One of `items`, drawn from `random`. */
function pick<T>(random: { int(lo: number, hi: number): number }, items: readonly T[]): T {
  return items[random.int(0, items.length - 1)] as T;
}

const COMMANDS = [['status'], ['list'], ['run', '--', 'true'], ['hooks', 'install', 'claude'], ['hooks', 'status']];

describe('fault campaign: files of the wrong kind where turnback reads a file', () => {
  it('a FIFO, a folder or a socket in place of a config, settings or ignore file: every command ends, and a refusal names the path', async () => {
    const tally = new Tally('files of the wrong kind', 3131);
    for (let t = 0; t < trials(40, 6); t++) {
      const target = pick(tally.random, TARGETS);
      const kind = pick(tally.random, KINDS);
      const args = pick(tally.random, COMMANDS);
      await tally.trial(`trial ${t}: a ${kind} at ${target}, then turnback ${args.join(' ')}`, async () => {
        const repo = await cliRepo({ 'a.txt': 'a\n' });
        const file = target === 'config.toml' ? path.join(repo.home, 'config', 'turnback', 'config.toml') : path.join(repo.proj, ...target.split('/'));
        await fs.mkdir(path.dirname(file), { recursive: true });
        let server: net.Server | undefined;
        if (kind === 'fifo') execFileSync('mkfifo', [file]);
        else if (kind === 'folder') await fs.mkdir(file);
        else {
          const listening = net.createServer();
          server = listening;
          await new Promise<void>((resolve) => listening.listen(file, resolve));
        }
        try {
          const result = repo.tb(args);
          if (result.code === null) throw new Error('the command was killed');
          if (result.code !== 0 && !result.stderr.includes(file) && !result.stdout.includes(file)) throw new Error(`exit ${result.code} without naming ${file}: ${result.stderr.slice(0, 300)}`);
          if (/\n\s+at .+\(.+:\d+:\d+\)/.test(result.stderr)) throw new Error(`a stack trace on stderr: ${result.stderr.slice(0, 300)}`);
        } finally {
          server?.close();
        }
      });
    }
    tally.finish();
  }, 600_000);
});

/** `backend` whose bundle streams arrive damaged: one byte flipped at `at`, or cut before it. */
function damagedStreams(backend: StoreBackend, at: number, how: 'flip' | 'cut'): StoreBackend {
  return {
    location: backend.location,
    capabilities: backend.capabilities,
    close: () => backend.close(),
    create: (key, bytes) => backend.create(key, bytes),
    put: (key, bytes) => backend.put(key, bytes),
    get: (key) => backend.get(key),
    head: (key) => backend.head(key),
    touch: (key) => backend.touch(key),
    delete: (key) => backend.delete(key),
    list: (prefix) => backend.list(prefix),
    getStream: async (key) => {
      const chunks = await backend.getStream(key);
      if (chunks === undefined || !key.includes('/bundles/')) return chunks;
      return (async function* damaged() {
        let offset = 0;
        for await (const chunk of chunks) {
          const piece = Buffer.from(chunk);
          if (at >= offset && at < offset + piece.length) {
            if (how === 'cut') {
              yield piece.subarray(0, at - offset);
              return;
            }
            piece[at - offset] = (piece[at - offset] ?? 0) ^ 0x40;
          }
          offset += piece.length;
          yield piece;
        }
      })();
    },
  };
}

describe('fault campaign: a pull from a damaged stream', () => {
  it('one bundle arrives with a byte flipped or cut short: the pull refuses it, adds nothing of it, leaves no scratch file; a clean pull then brings everything', async () => {
    const tally = new Tally('pull of a damaged stream', 3132);
    for (let t = 0; t < trials(40, 6); t++) {
      const how = pick(tally.random, ['flip', 'cut'] as const);
      await tally.trial(`trial ${t}: ${how}`, async () => {
        const base = await tempFolder('turnback-fault-pull-');
        const a = await project(base, 'a');
        const size = tally.random.int(1, 200_000);
        await turn(a.store, async () => {
          await fs.writeFile(path.join(a.project, 'a.txt'), Buffer.alloc(size, 7));
          await fs.writeFile(path.join(a.project, 'c.txt'), `new ${t}\n`);
        });
        await turn(a.store, async () => {
          await fs.rm(path.join(a.project, 'a.txt'));
        });
        const remote = await DirectoryBackend.open(path.join(base, 'remote'));
        await pushCheckpoints(a.store, remote, a.workspace);
        const clone = path.join(base, 'clone');
        execFileSync('git', ['clone', '-q', a.project, clone]);
        const storeDir = path.join(base, 'clone-store');
        const b = await CheckpointStore.open(storeDir, { projectRoot: clone });
        const workspace = await workspaceIdentity(clone);
        const at = tally.random.int(0, size);
        const failure = await pullCheckpoints(b, damagedStreams(remote, at, how), workspace).then(
          () => undefined,
          (error: unknown) => error,
        );
        if (!isCheckpointError(failure, 'INTEGRITY')) throw new Error(`the damaged pull was not refused as INTEGRITY: ${String(failure)}`);
        if ((await b.verify()).ok !== true) throw new Error('the store does not verify after the refused pull');
        const scratch = await fs.readdir(path.join(storeDir, 'tmp'));
        if (scratch.length > 0) throw new Error(`scratch files left: ${scratch.join(', ')}`);
        const clean = await pullCheckpoints(b, remote, workspace);
        if (clean.pulled.length + clean.alreadyHere !== 2) throw new Error(`a clean pull brought ${clean.pulled.length} (and found ${clean.alreadyHere})`);
        if ((await b.verify()).ok !== true) throw new Error('the store does not verify after the pulls');
      });
    }
    tally.finish();
  }, 600_000);
});

import { readFile } from 'node:fs/promises';
import { describe, expect, it } from 'vitest';
import { sourceFiles } from '../helpers/source-files.js';
import { checkedVariables, isRelayedName, MAX_RELAYED_CHARS, MAX_RELAYED_VARIABLES, relayedVariables, serverEnvironment, serverTunables } from '../../src/server/environment.js';

/**
 * Variables src/ reads that a served command does not take from its client, each with why: read
 * only by commands that never run in the server, or a fact of the process itself.
 */
const NOT_RELAYED: Readonly<Record<string, string>> = {
  TURNBACK_RUN: 'marks the processes of a run; a server never carries one',
  CODEX_HOME: 'hooks install/status only, which run in the person\'s own process',
  GEMINI_CLI_TRUSTED_FOLDERS_PATH: 'hooks install/status only',
  GEMINI_CLI_TRUST_WORKSPACE: 'hooks install/status only',
  GEMINI_RESTRICTED_MODE: 'hooks install/status only',
  COPILOT_ALLOW_ALL: 'hooks install/status only',
  GLIBC_TUNABLES: "read only to start the server with its malloc settings added (the person's own win); malloc's settings of a process, read by the C library at its start",
  WATCHMAN_SOCK: 'never read: deleted from the environment of turnback\'s own watchman service, so the user\'s service is never asked',
};

describe('every variable src/ reads', () => {
  it('is relayed to a served command, or named here with the reason it is not', async () => {
    const read = new Set<string>();
    for (const file of await sourceFiles()) {
      const text = await readFile(file, 'utf8');
      for (const match of text.matchAll(/env(?:\.|\[')([A-Z_][A-Z0-9_]*)/g)) read.add(match[1] as string);
    }
    expect(read.size).toBeGreaterThan(10);
    const unexplained = [...read].filter((name) => !isRelayedName(name) && NOT_RELAYED[name] === undefined).sort();
    expect(unexplained).toEqual([]);
  });
});

describe("the environment a request carries", () => {
  it('is the relayed names only, never TURNBACK_RUN, and the server takes exactly what a client sends', () => {
    const relayed = relayedVariables({ HOME: '/h', PATH: '/bin', SHELL: '/bin/sh', TURNBACK_RUN: 'x', TURNBACK_DIR: '/s', LC_ALL: 'C', NODE_OPTIONS: '--x', SSH_AUTH_SOCK: '/a', TZ: 'UTC' });
    expect(relayed).toEqual({ HOME: '/h', LC_ALL: 'C', NODE_OPTIONS: '--x', PATH: '/bin', TURNBACK_DIR: '/s', TZ: 'UTC' });
    expect({ ...checkedVariables(relayed) }).toEqual(relayed);
  });

  it('anything else is refused: not an object, a name outside the set, a non-string, a NUL, too many or too long', () => {
    for (const bad of [null, [], 'HOME=/h', 5, { SHELL: '/bin/sh' }, { TURNBACK_RUN: 'x' }, { LD_PRELOAD: '/x.so' }, { HOME: 5 }, { HOME: '/a\0b' }, JSON.parse('{"__proto__":"/x"}') as unknown]) {
      expect(checkedVariables(bad)).toBeUndefined();
    }
    const many = Object.fromEntries(Array.from({ length: MAX_RELAYED_VARIABLES + 1 }, (_, i) => [`TURNBACK_V${i}`, '']));
    expect(checkedVariables(many)).toBeUndefined();
    expect(checkedVariables({ PATH: 'x'.repeat(MAX_RELAYED_CHARS) })).toBeUndefined();
    expect(checkedVariables({ PATH: 'x'.repeat(MAX_RELAYED_CHARS - 4) })).toEqual({ PATH: 'x'.repeat(MAX_RELAYED_CHARS - 4) });
  });
});

describe('serverTunables and serverEnvironment', () => {
  it("adds the server's malloc settings to none, and to a person's own, whose settings win", () => {
    expect(serverTunables(undefined)).toBe('glibc.malloc.arena_max=2:glibc.malloc.mmap_threshold=131072:glibc.malloc.trim_threshold=131072');
    expect(serverTunables('')).toBe(serverTunables(undefined));
    expect(serverTunables('glibc.malloc.mmap_threshold=65536')).toBe('glibc.malloc.mmap_threshold=65536:glibc.malloc.arena_max=2:glibc.malloc.trim_threshold=131072');
    expect(serverTunables('glibc.malloc.arena_max=1:glibc.malloc.mmap_threshold=1:glibc.malloc.trim_threshold=1')).toBe('glibc.malloc.arena_max=1:glibc.malloc.mmap_threshold=1:glibc.malloc.trim_threshold=1');
  });

  it('starts a server with the environment given, without the run mark, with the malloc settings; the given object is not changed', () => {
    const given = { HOME: '/h', TURNBACK_RUN: '1', OTHER: 'x' };
    const env = serverEnvironment(given);
    expect(env).toEqual({ HOME: '/h', OTHER: 'x', GLIBC_TUNABLES: serverTunables(undefined) });
    expect(given).toEqual({ HOME: '/h', TURNBACK_RUN: '1', OTHER: 'x' });
  });
});

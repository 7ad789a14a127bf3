import { AsyncLocalStorage } from 'node:async_hooks';
import { isRelayedName } from './environment.js';

// Each served command sees its own client's environment through `process.env`, while other
// commands are served at the same time with theirs. The server installs, once, a `process.env`
// that is a Proxy: every read, write, `in`, `delete` and key listing goes to the environment of
// the request whose code is running — held by an AsyncLocalStorage that `withEnvironment` sets
// around the command, so it follows the command through every await, timer, stream and child
// it starts — and, outside any request, to the server's own. Code below the server reads
// `process.env` as it would in the person's own process: `{ ...process.env }` copies the
// request's, and Node's child_process, which iterates `process.env` when no `env` is given,
// starts children with it. What this cannot reach is the C environment, which only libuv and V8
// read: HOME in `os.homedir()` (src/core/home.ts reads `process.env` instead) and TZ, which keys
// the server itself (address.ts).

type Variables = Record<string, string | undefined>;

const current = new AsyncLocalStorage<Variables>();

/** The server's own environment, the one `process.env` was before the Proxy; `undefined` until installed. */
let own: NodeJS.ProcessEnv | undefined;

/** The environment the running code sees: its request's, else the server's own. */
function active(): Variables {
  return current.getStore() ?? (own as Variables);
}

/** Installs the Proxy as `process.env` (once; later calls do nothing). */
export function installRequestEnvironment(): void {
  if (own !== undefined) return;
  own = process.env;
  // Inherited members (`toString`, `hasOwnProperty`) come from the target, as they do from the real one.
  const target: NodeJS.ProcessEnv = {};
  process.env = new Proxy(target, {
    get: (object, name) => (typeof name === 'string' && Object.hasOwn(active(), name) ? active()[name] : Reflect.get(object, name)),
    set(object, name, value) {
      if (typeof name !== 'string') return Reflect.set(object, name, value);
      // As the real one does: every value is kept as a string.
      active()[name] = String(value);
      return true;
    },
    has: (object, name) => (typeof name === 'string' && Object.hasOwn(active(), name)) || Reflect.has(object, name),
    deleteProperty(object, name) {
      if (typeof name !== 'string') return Reflect.deleteProperty(object, name);
      delete active()[name];
      return true;
    },
    ownKeys: () => Object.keys(active()),
    getOwnPropertyDescriptor(object, name) {
      if (typeof name !== 'string') return Reflect.getOwnPropertyDescriptor(object, name);
      const env = active();
      return Object.hasOwn(env, name) ? { value: env[name], writable: true, enumerable: true, configurable: true } : undefined;
    },
    defineProperty(object, name, descriptor) {
      if (typeof name !== 'string') return Reflect.defineProperty(object, name, descriptor);
      if (descriptor.configurable === false || !('value' in descriptor)) return false;
      active()[name] = String(descriptor.value);
      return true;
    },
  });
}

/**
 * The environment of a command served for a client whose relayed variables are `relayed`
 * (checked by `checkedVariables`): the client's values of every relayed name — a name the client
 * does not have stays unset, whatever the server has — and the server's own for the rest.
 */
export function requestVariables(relayed: Readonly<Record<string, string>>): Record<string, string> {
  const env: Record<string, string> = Object.create(null) as Record<string, string>;
  const base = own ?? process.env;
  for (const name of Object.keys(base)) {
    const value = base[name];
    if (value !== undefined && !isRelayedName(name)) env[name] = value;
  }
  for (const name of Object.keys(relayed)) env[name] = relayed[name] as string;
  return env;
}

/**
 * Runs `work` (and everything it starts) with `env` as its `process.env`; a change it makes to
 * `process.env` stays in `env`. Needs {@link installRequestEnvironment} first.
 */
export function withEnvironment<T>(env: Record<string, string>, work: () => T): T {
  if (own === undefined) throw new Error('installRequestEnvironment() must run before a request is served');
  return current.run(env, work);
}

import type { FileHandle } from 'node:fs/promises';
import type { FileSystem } from '../../src/fs/file-system.js';

/** A file-system call or a file-handle call (`handle.<method>`) the wrapper can fail. */
export type FaultOp = Exclude<keyof FileSystem, 'sync'> | `handle.${'write' | 'writeFile' | 'sync' | 'truncate' | 'chmod' | 'close'}`;

/** Fail the `nth` (1-based) call of `op`, once, with an errno-style error. */
export interface FaultRule {
  op: FaultOp;
  nth: number;
  /** @default 'EIO' */
  code?: string;
}

/** A FileSystem that counts calls, runs a hook before each, and can fail one chosen call. */
export interface FaultFileSystem {
  fs: FileSystem;
  /** Calls seen so far, per op. */
  calls: Map<FaultOp, number>;
  /** True once any fault has been thrown. */
  readonly fired: boolean;
}

/** Options for {@link faultFs}. */
export interface FaultOptions {
  /** One call, or several, to fail; each rule fires at most once. */
  failOn?: FaultRule | FaultRule[];
  /** Runs before every call (after counting); may mutate the disk to simulate a racing writer. */
  before?: (op: FaultOp, args: unknown[], count: number) => void | Promise<void>;
}

function fault(op: FaultOp, code: string): Error {
  const error = new Error(`injected ${code} on ${op}`) as Error & { code: string };
  error.code = code;
  return error;
}

/** Wraps `base` so tests can prove rollback: any single call can be made to throw. */
export function faultFs(base: FileSystem, options: FaultOptions = {}): FaultFileSystem {
  const calls = new Map<FaultOp, number>();
  const rules = options.failOn === undefined ? [] : Array.isArray(options.failOn) ? options.failOn : [options.failOn];
  const firedRules = new Set<FaultRule>();

  async function enter(op: FaultOp, args: unknown[]): Promise<void> {
    const count = (calls.get(op) ?? 0) + 1;
    calls.set(op, count);
    await options.before?.(op, args, count);
    for (const rule of rules) {
      if (!firedRules.has(rule) && rule.op === op && rule.nth === count) {
        firedRules.add(rule);
        throw fault(op, rule.code ?? 'EIO');
      }
    }
  }

  function wrapHandle(handle: FileHandle): FileHandle {
    const wrapped = new Set(['write', 'writeFile', 'sync', 'truncate', 'chmod', 'close']);
    return new Proxy(handle, {
      get(target, property, receiver) {
        const value: unknown = Reflect.get(target, property, receiver);
        if (typeof value !== 'function') return value;
        const method = value as (...args: unknown[]) => unknown;
        if (typeof property !== 'string' || !wrapped.has(property)) return method.bind(target);
        return async (...args: unknown[]) => {
          if (property === 'close') {
            // A failed close still releases the descriptor (as close(2) does); fail after closing.
            const closed = await method.apply(target, args);
            await enter('handle.close', args);
            return closed;
          }
          await enter(`handle.${property}` as FaultOp, args);
          return method.apply(target, args);
        };
      },
    });
  }

  const fs = {} as Record<string, unknown>;
  for (const name of Object.keys(base) as (keyof FileSystem)[]) {
    // The synchronous fast path is left out, so every call goes through the wrapped promise API.
    if (name === 'sync') continue;
    const original = base[name] as (...args: unknown[]) => Promise<unknown>;
    fs[name] = async (...args: unknown[]) => {
      await enter(name, args);
      const value = await original(...args);
      return name === 'open' ? wrapHandle(value as FileHandle) : value;
    };
  }
  return {
    fs: fs as unknown as FileSystem,
    calls,
    get fired() {
      return firedRules.size > 0;
    },
  };
}

import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';

/**
 * Atomic swaps of two names (Linux `renameat2(RENAME_EXCHANGE)`), the attack no check-then-write
 * survives: Node has no call for it, so python3's ctypes makes the system call, as an attacker's
 * process would.
 */
const EXCHANGE = `
import ctypes, os, sys
libc = ctypes.CDLL(None, use_errno=True)
def swap(a, b):
    if libc.renameat2(-100, os.fsencode(a), -100, os.fsencode(b), 2) != 0:
        raise OSError(ctypes.get_errno(), os.strerror(ctypes.get_errno()), a)
`;

/** Swaps `a` and `b` in one step (both must exist). */
export function exchange(a: string, b: string): void {
  execFileSync('python3', ['-c', `${EXCHANGE}\nswap(sys.argv[1], sys.argv[2])`, a, b], { stdio: ['ignore', 'ignore', 'pipe'] });
}

/** True where this machine can swap two names atomically (Linux with python3). */
export const canExchange: boolean = (() => {
  if (process.platform !== 'linux') return false;
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'turnback-exchange-'));
  try {
    fs.writeFileSync(path.join(dir, 'a'), 'a');
    fs.symlinkSync('elsewhere', path.join(dir, 'b'));
    exchange(path.join(dir, 'a'), path.join(dir, 'b'));
    return fs.lstatSync(path.join(dir, 'a')).isSymbolicLink();
  } catch {
    return false;
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
})();

/** A process swapping two names over and over, at most `limit` times, until stopped. */
export interface Exchanger {
  /** Stops the loop; resolves with how many swaps it made. The names end as they began. */
  stop(): Promise<number>;
}

/**
 * Starts a loop that swaps `a` and `b` back and forth (at most `limit` swaps, an even number, so
 * the names end as they began), and resolves once it has made its first swap.
 */
export async function startExchanger(a: string, b: string, limit = 200_000): Promise<Exchanger> {
  const script = `${EXCHANGE}
import signal
stop = False
def on_term(*_):
    global stop
    stop = True
signal.signal(signal.SIGTERM, on_term)
count = 0
limit = int(sys.argv[3])
while count < limit:
    swap(sys.argv[1], sys.argv[2])
    count += 1
    if count == 1:
        sys.stdout.write("first\\n"); sys.stdout.flush()
    if stop and count % 2 == 0:
        break
if count % 2 == 1:
    swap(sys.argv[1], sys.argv[2]); count += 1
sys.stdout.write("swaps %d\\n" % count); sys.stdout.flush()
`;
  return startLoop(script, [a, b, String(limit - (limit % 2))]);
}

/** Runs a python loop that prints "first" after its first cycle and "swaps N" when it stops. */
async function startLoop(script: string, args: string[]): Promise<Exchanger> {
  const child: ChildProcess = spawn('python3', ['-c', script, ...args], { stdio: ['ignore', 'pipe', 'inherit'] });
  let output = '';
  const closed = once(child, 'close');
  child.stdout?.setEncoding('utf8');
  await new Promise<void>((resolve, reject) => {
    child.stdout?.on('data', (chunk: string) => {
      output += chunk;
      if (output.includes('first')) resolve();
    });
    child.once('exit', () => reject(new Error(`the loop ended before its first swap: ${output}`)));
  });
  return {
    async stop() {
      if (child.exitCode === null) child.kill('SIGTERM');
      await closed;
      const match = /swaps (\d+)/.exec(output);
      if (match === null) throw new Error(`the loop printed no count: ${output}`);
      return Number(match[1]);
    },
  };
}

/**
 * Starts a loop that moves `name` aside, puts a symlink to `target` in its place, then takes the
 * link away and moves `name` back (at most `limit` cycles, each ending as it began), and resolves
 * once the first cycle is done: the non-atomic way to swap a folder or a file for a link.
 */
export async function startRelinker(name: string, target: string, limit = 100_000): Promise<Exchanger> {
  const script = `
import os, signal, sys
stop = False
def on_term(*_):
    global stop
    stop = True
signal.signal(signal.SIGTERM, on_term)
name, target, limit = sys.argv[1], sys.argv[2], int(sys.argv[3])
away = name + ".away"
count = 0
def back():
    # What it races may have put an empty folder (or nothing yet) in the name's place meanwhile:
    # retry a bounded number of times, yielding the processor between tries, then give up loudly.
    for _ in range(500000):
        try:
            os.rename(away, name)
            return
        except OSError:
            os.sched_yield()
    raise SystemExit("could not move " + name + " back")
while count < limit and not stop:
    os.rename(name, away)
    try:
        os.symlink(target, name)
        os.unlink(name)
    except OSError:
        pass
    back()
    count += 1
    if count == 1:
        sys.stdout.write("first\\n"); sys.stdout.flush()
sys.stdout.write("swaps %d\\n" % count); sys.stdout.flush()
`;
  return startLoop(script, [name, target, String(limit)]);
}

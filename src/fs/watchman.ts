import * as net from 'node:net';
import { isLossyName } from '../core/raw-names.js';
import { projectConfigRefusal } from './watchman-service.js';
import { mountRefusal, type NotVouchedReason, type TreeWatcher, type WatchAnswer, type WatcherStatus } from './tree-watcher.js';

// The watcher turnback uses: watchman (the service jj, git's fsmonitor hook and Sapling rely on),
// when it is installed. Chosen by measurement (bench/watchers.mjs, CHECKPOINT-DESIGN.md "The
// watcher"): of the three measured it alone reports a kernel queue overflow (it re-crawls and
// says so in a `warning`), watches a folder renamed into the tree with everything under it, and
// syncs every query through a cookie file, so an answer covers every write that had returned
// before the question. This file speaks watchman's documented JSON protocol on its Unix socket,
// one JSON value per line each way; nothing here watches anything itself. The socket is always
// that of turnback's own service (watchman-service.ts): its config keeps the cookies out of `.git`.

/** How long one watchman command may take before the watcher stops vouching (a crawl of a big tree takes seconds). */
const COMMAND_TIMEOUT_MS = 60_000;
/** How long a query waits for watchman to see its own cookie: every write before it is then seen. */
const SYNC_TIMEOUT_MS = 10_000;

/** Where watchman listens and how long its commands may take. */
export interface WatchmanOptions {
  /**
   * The socket of turnback's own service ({@link import('./watchman-service.js').ownWatchman}),
   * never the user's: the user's service keeps its cookies in `.git`.
   */
  sockname: string;
  /** Longest one command may take. @default 60 s */
  timeoutMs?: number;
}

/** Why no watchman watcher could be started. */
export interface WatchmanRefusal {
  refused: true;
  reason: NotVouchedReason | 'not-installed';
  detail: string;
}

type Response = Record<string, unknown>;

/** One connection to watchman: commands answered in order, each within its deadline. */
class WatchmanConnection {
  readonly #socket: net.Socket;
  readonly #waiting: { resolve: (r: Response) => void; reject: (e: Error) => void; timer: NodeJS.Timeout }[] = [];
  readonly #timeoutMs: number;
  #buffer = '';
  #gone: Error | undefined;

  constructor(socket: net.Socket, timeoutMs: number) {
    this.#socket = socket;
    this.#timeoutMs = timeoutMs;
    socket.setEncoding('utf8');
    socket.on('data', (chunk: string) => this.#receive(chunk));
    socket.on('error', (error) => this.#fail(error));
    socket.on('close', () => this.#fail(new Error('the watchman service closed the connection')));
    socket.unref();
  }

  get gone(): Error | undefined {
    return this.#gone;
  }

  command(args: readonly unknown[]): Promise<Response> {
    if (this.#gone !== undefined) return Promise.reject(this.#gone);
    return new Promise<Response>((resolve, reject) => {
      const timer = setTimeout(() => this.#fail(new Error(`watchman did not answer ${String(args[0])} within ${this.#timeoutMs / 1000} s`)), this.#timeoutMs);
      timer.unref();
      this.#waiting.push({ resolve, reject, timer });
      this.#socket.ref();
      this.#socket.write(`${JSON.stringify(args)}\n`);
    });
  }

  close(): void {
    this.#fail(new Error('the watcher is closed'));
  }

  #receive(chunk: string): void {
    this.#buffer += chunk;
    for (let end = this.#buffer.indexOf('\n'); end >= 0; end = this.#buffer.indexOf('\n')) {
      const line = this.#buffer.slice(0, end);
      this.#buffer = this.#buffer.slice(end + 1);
      let value: unknown;
      try {
        value = JSON.parse(line);
      } catch {
        this.#fail(new Error('watchman sent a line that is not JSON'));
        return;
      }
      if (typeof value !== 'object' || value === null || (value as Response).unilateral === true) continue;
      const waiter = this.#waiting.shift();
      if (waiter === undefined) continue;
      clearTimeout(waiter.timer);
      if (this.#waiting.length === 0) this.#socket.unref();
      const response = value as Response;
      if (typeof response.error === 'string') waiter.reject(new Error(response.error));
      else waiter.resolve(response);
    }
  }

  #fail(error: Error): void {
    if (this.#gone !== undefined) return;
    this.#gone = error;
    for (const waiter of this.#waiting.splice(0)) {
      clearTimeout(waiter.timer);
      waiter.reject(error);
    }
    this.#socket.destroy();
  }
}

/** What watchman's error text says about why it cannot watch. */
function reasonOfError(message: string): NotVouchedReason {
  if (/max_user_watches|max_user_instances|inotify_(add_watch|init).*(ENOSPC|EMFILE|No space|Too many)|watch limit/i.test(message)) return 'watch-limit';
  if (/EACCES|Permission denied|unable to (watch|open)/i.test(message)) return 'unwatchable';
  return 'stopped';
}

/**
 * Starts watching `root` (canonical) through watchman. Resolves to a {@link WatchmanRefusal}, never
 * rejects, when watchman is not installed, does not answer, cannot watch the tree, or the tree
 * lives where no watcher can vouch for it (see {@link mountRefusal}).
 */
export async function startWatchman(root: string, options: WatchmanOptions): Promise<TreeWatcher | WatchmanRefusal> {
  const mounted = mountRefusal(root);
  if (mounted !== undefined) return { refused: true, reason: 'mount', detail: mounted };
  const configured = projectConfigRefusal(root);
  if (configured !== undefined) return { refused: true, reason: 'unwatchable', detail: configured };
  const sockname = options.sockname;
  const socket = net.connect(sockname);
  try {
    await new Promise<void>((resolve, reject) => {
      socket.once('connect', resolve);
      socket.once('error', reject);
    });
  } catch (error) {
    socket.destroy();
    return { refused: true, reason: 'stopped', detail: `watchman does not answer on ${sockname} (${(error as Error).message})` };
  }
  const connection = new WatchmanConnection(socket, options.timeoutMs ?? COMMAND_TIMEOUT_MS);
  try {
    const version = await connection.command(['version', { required: ['cmd-watch', 'cmd-clock'] }]);
    const before = await connection.command(['watch-list']);
    // `watch`, not `watch-project`: the watch is the project root itself, never a folder above
    // it, so the cookie folder (the watch's root, with turnback's service config) is inside it.
    const watched = await connection.command(['watch', root]);
    if (watched.watch !== root) throw new Error(`watch named ${String(watched.watch)}, not the project root`);
    // A watch this watcher made is removed when it closes (each costs the service an inotify
    // instance); one that was there before (jj's, git's hook's) stays.
    const ours = !(Array.isArray(before.roots) && before.roots.includes(root));
    return new WatchmanWatcher(root, connection, `watchman ${String(version.version)}`, ours);
  } catch (error) {
    connection.close();
    const message = (error as Error).message;
    return { refused: true, reason: reasonOfError(message), detail: `watchman cannot watch ${root}: ${message.split('\n')[0] ?? message}` };
  }
}

class WatchmanWatcher implements TreeWatcher {
  readonly root: string;
  readonly #connection: WatchmanConnection;
  readonly #backend: string;
  #status: WatcherStatus;
  /** The last warning an answer carried (see {@link WatchmanWatcher.changesSince}). */
  #lastWarning: string | undefined;

  readonly #ours: boolean;

  constructor(root: string, connection: WatchmanConnection, backend: string, ours: boolean) {
    this.#ours = ours;
    this.root = root;
    this.#connection = connection;
    this.#backend = backend;
    // Unknown: the first answer that carries a warning is not vouched for.
    this.#lastWarning = '';
    this.#status = { state: 'not-vouching', reason: 'unknown-token', detail: 'no picture taken with the watcher yet', backend };
  }

  status(): WatcherStatus {
    return this.#status;
  }

  async settle(): Promise<{ token: string } | { token: undefined; reason: NotVouchedReason; detail: string }> {
    try {
      const answer = await this.#connection.command(['clock', this.root, { sync_timeout: SYNC_TIMEOUT_MS }]);
      if (typeof answer.clock !== 'string') throw new Error('clock named no clock');
      return { token: answer.clock };
    } catch (error) {
      return { token: undefined, ...this.#refuse(reasonOfError((error as Error).message), (error as Error).message) };
    }
  }

  async changesSince(token: string): Promise<WatchAnswer> {
    let answer: Response;
    try {
      answer = await this.#connection.command([
        'query',
        this.root,
        {
          since: token,
          fields: ['name', 'exists', 'new'],
          empty_on_fresh_instance: true,
          sync_timeout: SYNC_TIMEOUT_MS,
        },
      ]);
    } catch (error) {
      const message = (error as Error).message;
      return { vouched: false, token: undefined, ...this.#refuse(reasonOfError(message), message) };
    }
    const clock = typeof answer.clock === 'string' ? answer.clock : undefined;
    if (answer.is_fresh_instance === true || clock === undefined) {
      return { vouched: false, token: clock, ...this.#refuse('unknown-token', 'the watcher did not see that moment (just started or restarted)') };
    }
    // A re-crawl (a queue overflow, among others) is said in a warning that repeats on every answer
    // with its count ("Recrawled this watch N times"): a new one means what the crawl found is not
    // attributed to moments. (The watch is not deleted to clear it: other tools may share it.)
    const warning = typeof answer.warning === 'string' ? answer.warning : undefined;
    if (warning !== this.#lastWarning) {
      this.#lastWarning = warning;
      if (warning !== undefined) return { vouched: false, token: clock, ...this.#refuse('overflow', warning.split('\n')[0] ?? warning) };
    }
    const paths: string[] = [];
    const replaced = new Set<string>();
    for (const file of Array.isArray(answer.files) ? (answer.files as unknown[]) : []) {
      const { name, exists, new: created } = file as { name?: unknown; exists?: unknown; new?: unknown };
      if (typeof name !== 'string' || isLossyName(name)) return { vouched: false, token: clock, ...this.#refuse('unreadable-name', 'a changed name is not valid UTF-8') };
      paths.push(name);
      if (exists !== true || created === true) replaced.add(name);
    }
    this.#status = { state: 'watching', backend: this.#backend };
    return { vouched: true, token: clock, paths, replaced };
  }

  async close(): Promise<void> {
    if (this.#ours && this.#connection.gone === undefined) await this.#connection.command(['watch-del', this.root]).catch(() => undefined);
    this.#refuse('stopped', 'the watcher is closed');
    this.#connection.close();
  }

  #refuse(reason: NotVouchedReason, detail: string): { reason: NotVouchedReason; detail: string } {
    const gone = this.#connection.gone;
    const final = gone !== undefined ? { reason: 'stopped' as const, detail: gone.message } : { reason, detail };
    this.#status = { state: 'not-vouching', ...final, backend: this.#backend };
    return final;
  }
}

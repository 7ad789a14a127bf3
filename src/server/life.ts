import { PROTOCOL_VERSION } from './address.js';
import type { ServerReport } from './frames.js';

/** The parts of the server's report its services say (each its own state), by key. */
export type ServiceReports = Required<Pick<ServerReport, 'idleCopies'>>;

// How long the server lives, and what it says about itself. It leaves after an idle time with
// nothing to do — no command being served — so no process lingers for days; its next client
// starts a new one. Asking the server about itself (`turnback server status`) is not work: it
// neither keeps an idle server alive nor delays its leaving.

const DEFAULT_IDLE_SECONDS = 600;

/**
 * Longest a command waits for idle work to let go of what it holds ({@link ServerLife.idleWorkStopped}).
 * The idle copier stops within one slice (a few dozen blob reads and its batch's last write: a few
 * milliseconds); past this the command goes ahead beside it, as correct and only slower.
 */
export const IDLE_YIELD_MAX_MS = 250;

/** Seconds with nothing to do after which the server leaves: TURNBACK_SERVER_IDLE_SECONDS (1–86400), else 600. */
export function idleSeconds(env: NodeJS.ProcessEnv = process.env): number {
  const text = env.TURNBACK_SERVER_IDLE_SECONDS;
  if (text === undefined || !/^[1-9][0-9]{0,4}$/.test(text) || Number(text) > 86_400) return DEFAULT_IDLE_SECONDS;
  return Number(text);
}

/** Who this server is, fixed at its start. */
export interface ServerIdentity {
  mainFile: string;
  version: string | null;
  /** TZ as the server was started (`null`: unset). */
  tz: string | null;
}

/** The server's counters, its idle clock and its end: one per server, shared by every listener and service. */
export class ServerLife {
  readonly startedAt: Date = new Date();
  #served = 0;
  #active = 0;
  #idleSince: number = Date.now();
  #timer: NodeJS.Timeout | undefined;
  #leaving = false;
  #leave: () => void = () => undefined;
  readonly #activity = new Set<(idle: boolean) => void>();
  readonly #idleWork = new Set<Promise<unknown>>();
  readonly #reporters = new Map<keyof ServiceReports, () => ServiceReports[keyof ServiceReports]>();
  /** Resolves once the server is told to leave (idle, `server stop`, a signal). */
  readonly leaving: Promise<void> = new Promise((resolve) => (this.#leave = resolve));

  constructor(
    readonly idleMs: number,
    readonly identity: ServerIdentity,
  ) {}

  /** Starts the idle clock (once the server listens). */
  start(): void {
    this.#arm();
    this.#tell(true);
  }

  /** Calls `listener` whenever the server turns idle (`true`) or busy (`false`): idle-time work (the watcher's verification sweep). */
  onActivity(listener: (idle: boolean) => void): () => void {
    this.#activity.add(listener);
    return () => this.#activity.delete(listener);
  }

  #tell(idle: boolean): void {
    for (const listener of this.#activity) listener(idle);
  }

  /** A command begins: the server is busy until the returned function is called (once). */
  busy(): () => void {
    this.#served++;
    this.#active++;
    this.#disarm();
    if (this.#active === 1) this.#tell(false);
    let ended = false;
    return () => {
      if (ended) return;
      ended = true;
      this.#active--;
      if (this.#active === 0) {
        this.#idleSince = Date.now();
        this.#arm();
        this.#tell(true);
      }
    };
  }

  /**
   * Notes idle work that holds something a command opens too (the idle copier's open store) until
   * `work` settles: a command then waits for it to stop ({@link idleWorkStopped}). Two opens of one
   * store at once each load their own index of its packs, so the command's picture would find its
   * last picture's copies unvouched and check every record again (200 ms at 250,000 files).
   */
  holdIdleWork(work: Promise<unknown>): void {
    this.#idleWork.add(work);
    const drop = (): void => void this.#idleWork.delete(work);
    work.then(drop, drop);
  }

  /**
   * Resolves once the idle work noted by {@link holdIdleWork} has stopped (it stops at its next
   * slice once a command is being served), or after `maxMs`, whichever comes first: never a wait
   * the agent would feel. `true` when it stopped in time.
   */
  async idleWorkStopped(maxMs: number = IDLE_YIELD_MAX_MS): Promise<boolean> {
    if (this.#idleWork.size === 0) return true;
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<false>((resolve) => (timer = setTimeout(() => resolve(false), maxMs)));
    const stopped = Promise.allSettled([...this.#idleWork]).then(() => true as const);
    try {
      return await Promise.race([stopped, late]);
    } finally {
      clearTimeout(timer);
    }
  }

  /** Commands being served now. */
  get active(): number {
    return this.#active;
  }

  /** Calls `listener` each time the server turns idle (once it listens, and when the last command being served ends): idle work starts there. Returns the function that stops it. */
  onIdle(listener: () => void): () => void {
    return this.onActivity((idle) => {
      if (idle) listener();
    });
  }

  /** True once the server was told to leave. */
  get left(): boolean {
    return this.#leaving;
  }

  /** Tells the server to leave: listeners stop taking new work, what is being served finishes. */
  stop(): void {
    if (this.#leaving) return;
    this.#leaving = true;
    this.#disarm();
    this.#tell(false);
    this.#leave();
  }

  /** Has the server's report say `describe()` as its `key` (a service's state) until the returned function is called. */
  reportFrom<K extends keyof ServiceReports>(key: K, describe: () => ServiceReports[K]): () => void {
    this.#reporters.set(key, describe);
    return () => {
      if (this.#reporters.get(key) === describe) this.#reporters.delete(key);
    };
  }

  /** What the server says about itself. */
  report(): ServerReport {
    const services: Partial<ServiceReports> = {};
    for (const [key, describe] of this.#reporters) services[key] = describe();
    return {
      pid: process.pid,
      startedAt: this.startedAt.toISOString(),
      served: this.#served,
      active: this.#active,
      protocol: PROTOCOL_VERSION,
      version: this.identity.version,
      mainFile: this.identity.mainFile,
      idleSince: this.#active === 0 ? new Date(this.#idleSince).toISOString() : null,
      idleSeconds: this.idleMs / 1000,
      rss: process.memoryUsage.rss(),
      tz: this.identity.tz,
      ...services,
    };
  }

  #arm(): void {
    this.#disarm();
    if (this.#leaving || this.#active > 0) return;
    this.#timer = setTimeout(() => this.stop(), Math.max(0, this.#idleSince + this.idleMs - Date.now()));
  }

  #disarm(): void {
    if (this.#timer !== undefined) clearTimeout(this.#timer);
    this.#timer = undefined;
  }
}

import { PROTOCOL_VERSION } from './address.js';
import type { ServerReport } from './frames.js';

// How long the server lives, and what it says about itself. It leaves after an idle time with
// nothing to do — no command being served — so no process lingers for days; its next client
// starts a new one. Asking the server about itself (`turnback server status`) is not work: it
// neither keeps an idle server alive nor delays its leaving.

const DEFAULT_IDLE_SECONDS = 600;

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
  /** Resolves once the server is told to leave (idle, `server stop`, a signal). */
  readonly leaving: Promise<void> = new Promise((resolve) => (this.#leave = resolve));

  constructor(
    readonly idleMs: number,
    readonly identity: ServerIdentity,
  ) {}

  /** Starts the idle clock (once the server listens). */
  start(): void {
    this.#arm();
  }

  /** A command begins: the server is busy until the returned function is called (once). */
  busy(): () => void {
    this.#served++;
    this.#active++;
    this.#disarm();
    let ended = false;
    return () => {
      if (ended) return;
      ended = true;
      this.#active--;
      if (this.#active === 0) {
        this.#idleSince = Date.now();
        this.#arm();
      }
    };
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
    this.#leave();
  }

  /** What the server says about itself. */
  report(): ServerReport {
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

import { spawn } from 'node:child_process';
import { appendFileSync, mkdirSync } from 'node:fs';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';
import { expect } from 'vitest';
import { openObserver, openStore } from '../../src/admin.js';
import type { CheckpointObserver } from '../../src/session/observer.js';
import { seededRandom, testSeed, type Seeded } from '../helpers/seed.js';

/**
 * The fault campaign: each class of attack is tried many times at seeded points and tallied as
 * tried / held / broke. `npm run faults` runs the full campaign (TURNBACK_FAULTS=full); `npm test`
 * runs the same classes at quick counts, so every class is exercised on every change.
 */
export const FULL: boolean = process.env.TURNBACK_FAULTS === 'full';

/** Trials per class: the full campaign's count, or the quick subset's. */
export function trials(full: number, quick: number): number {
  return FULL ? full : quick;
}

const here = path.dirname(fileURLToPath(import.meta.url));
/** The built package the campaign's processes load (TURNBACK_FAULTS_DIST: a private build, see bench/build.mjs). */
export const DIST: string = process.env.TURNBACK_FAULTS_DIST ?? path.resolve(here, '../../dist');
/** The campaign's child process program. */
export const CHILD: string = path.join(here, 'child.mjs');

/** One class's tally. A trial that throws broke the promise; its message (with the seed) is kept. */
export class Tally {
  tried = 0;
  held = 0;
  broke = 0;
  readonly failures: string[] = [];
  skipped: string | undefined;
  /** What the class saw along the way (how many swaps, gaps, …), printed after the counts. */
  note = '';
  readonly random: Seeded;

  constructor(
    readonly name: string,
    seedFallback: number,
  ) {
    this.random = seededRandom(testSeed(seedFallback));
  }

  /** Unless `possible`, marks the class skipped with the reason and prints its line; true when skipped. */
  skipUnless(possible: boolean, reason: string): boolean {
    if (possible) return false;
    this.skipped = reason;
    this.finish();
    return true;
  }

  /** Runs one trial; `label` names its point (printed with the seed when it broke). */
  async trial(label: string, body: () => Promise<void>): Promise<void> {
    this.tried += 1;
    try {
      await body();
      this.held += 1;
    } catch (error) {
      this.broke += 1;
      if (this.failures.length < 5) this.failures.push(`${label}: ${error instanceof Error ? error.message : String(error)}`);
    }
  }

  /** The class's line: printed, recorded for the campaign's summary, and asserted (nothing broke). */
  finish(): void {
    const line = this.skipped !== undefined ? `${this.name.padEnd(34)} skipped: ${this.skipped}` : `${this.name.padEnd(34)} tried ${String(this.tried).padStart(5)}  held ${String(this.held).padStart(5)}  broke ${this.broke}${this.note === '' ? '' : `  (${this.note})`}`;
    console.log(line);
    const results = process.env.TURNBACK_FAULTS_RESULTS;
    if (results !== undefined) {
      mkdirSync(path.dirname(results), { recursive: true });
      appendFileSync(results, `${line}\n`);
    }
    expect(this.failures, `seed ${this.random.seed}: replay with TURNBACK_TEST_SEED=${this.random.seed}`).toEqual([]);
    if (this.skipped === undefined) expect(this.tried).toBeGreaterThan(0);
  }
}

/** What a campaign child said (one JSON value per line) and how it ended. */
export interface ChildRun {
  lines: Record<string, unknown>[];
  signal: NodeJS.Signals | null;
  code: number | null;
  stderr: string;
}

/** Runs the campaign's child with `job` (a kill point in `killAt`, or none). */
export async function runChild(job: Record<string, unknown>): Promise<ChildRun> {
  const child = spawn(process.execPath, [CHILD, JSON.stringify({ dist: DIST, ...job })], { stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  const [code, signal] = await new Promise<[number | null, NodeJS.Signals | null]>((resolve) => child.once('close', (c, s) => resolve([c, s])));
  const lines = stdout
    .split('\n')
    .filter((line) => line.trim() !== '')
    .map((line) => JSON.parse(line) as Record<string, unknown>);
  return { lines, signal, code, stderr };
}

/** The calls an unkilled run of `job` made after arming: the range kill points are drawn from. */
export async function countCalls(job: Record<string, unknown>): Promise<number> {
  const run = await runChild(job);
  const last = run.lines.at(-1);
  if (run.code !== 0 || last === undefined || typeof last.calls !== 'number') throw new Error(`calibration run failed (${String(run.code)}): ${run.stderr}`);
  return last.calls;
}

/** Runs `job` killed at its `killAt`-th call; a run that ends on its own first is fine too (the point lay past its end). */
export async function runKilled(job: Record<string, unknown>): Promise<ChildRun> {
  const run = await runChild(job);
  if (run.signal !== 'SIGKILL' && run.code !== 0) throw new Error(`child failed (${String(run.code)}) instead of being killed: ${run.stderr}`);
  return run;
}

/**
 * Runs each call of the returned function in an observer of its own (session `agent`), opened on
 * `storeDir` and closed after it, as every agent hook event runs in a process of its own: what
 * one event leaves for the next passes through the store's documents, never through memory.
 */
export function observerPerEvent(storeDir: string, projectRoot: string): <T>(fn: (observer: CheckpointObserver) => Promise<T>) => Promise<T> {
  return async (fn) => {
    const observer = openObserver(await openStore(storeDir, { projectRoot }), { sessionId: 'agent' });
    try {
      return await fn(observer);
    } finally {
      await observer.close();
    }
  };
}

import { changesSinceInterrupted, dismissInterrupted, interruptedRuns, type InterruptedCall } from '../admin.js';
import { isCheckpointError, type Gap, type StoreView } from '../index.js';
import { renderInterruptedNotice } from '../report/interrupted.js';
import type { ReportChange } from '../report/turn-end-list.js';
import { observerFor, type CliContext } from './context.js';
import type { Io } from './io.js';
import { Progress } from './progress.js';
import { processesOfRun } from './command-process.js';
import { EXIT } from './exit-codes.js';
import { CliExit } from './io.js';
import { shownText } from '../report/escape.js';

/** An interrupted run as reported (and as `--json` prints it). */
export interface InterruptedReport {
  command: string | undefined;
  startedAt: string;
  pid: number;
  checkpointId: string;
  changes: ReportChange[];
  gaps: Gap[];
  partial: boolean;
  /** True when its changes were recorded as a checkpoint now (so `turnback undo` reaches them). */
  recorded: boolean;
  /**
   * Processes of the run still alive though its turnback is gone (the command ignored the
   * parent-death signal, or left a child): its changes are not final, so nothing is recorded and
   * no restore starts until they end.
   */
  running?: number[];
}

/**
 * Finds runs whose turnback process died while their command ran. With `record`, each one's
 * changes are attributed now (a `call` checkpoint labelled with its command, which `undo` lists),
 * and it is not reported again; without, it is only described (what `status` does).
 */
export async function handleInterrupted(context: CliContext, store: StoreView, record: boolean): Promise<InterruptedReport[]> {
  const reports: InterruptedReport[] = [];
  for (const run of await interruptedRuns(store)) {
    const progress = new Progress(context.invocation.stderr, `turnback: checking what an interrupted run changed (${run.command ?? run.callId})…`, 'checked');
    try {
      reports.push(await handleOne(context, store, run, record));
    } finally {
      progress.done();
    }
  }
  return reports;
}

async function handleOne(context: CliContext, store: StoreView, run: InterruptedCall, record: boolean): Promise<InterruptedReport> {
  const base = { command: run.command, startedAt: run.startedAt, pid: run.pid, checkpointId: run.checkpointId };
  const running = processesOfRun(run.sessionId);
  if (running !== undefined && running.length > 0) {
    // Still writing: a picture now would cut its changes in two. Recorded once it ends.
    return { ...base, changes: [], gaps: [], partial: true, recorded: false, running };
  }
  if (record) {
    try {
      // Ending the call under its own session id reads its persisted picture back and records the changes.
      const adopter = observerFor(context, store, run.sessionId);
      const attribution = await adopter.callEnd(run.callId, { sideEffect: 'filesystem' });
      await adopter.close();
      return { ...base, changes: attribution.changes, gaps: attribution.gaps, partial: attribution.partial, recorded: true };
    } catch (error) {
      // A busy store is passing: leave the run to be recorded next time. Anything else: describe
      // it below, then forget it so it is not reported forever.
      if (isCheckpointError(error, 'STORE_BUSY')) record = false;
    }
  }
  const since = await changesSinceInterrupted(store, run, { config: context.config.resolved });
  if (record) await dismissInterrupted(store, run);
  return { ...base, changes: since.changes, gaps: since.gaps, partial: since.partial, recorded: false };
}

/** Prints the notice for each interrupted run on stderr. */
export function printInterrupted(io: Io, context: CliContext, reports: readonly InterruptedReport[]): void {
  for (const report of reports) {
    if (report.running !== undefined) {
      io.err(`turnback: ${runningText(report)}; its changes are recorded once it ends`);
      continue;
    }
    io.err(...renderInterruptedNotice({ ...report, maxFileMib: context.config.resolved.maxFileMib, maxRows: context.maxRows }, io.errStyle));
  }
}

/** `the command of a run whose turnback was killed is still running (pid 123: make)`. */
export function runningText(report: InterruptedReport): string {
  const pids = report.running ?? [];
  return `the command of a run whose turnback was killed is still running (${pids.length === 1 ? 'pid' : 'pids'} ${pids.join(', ')}: ${shownText(report.command ?? 'unknown command')})`;
}

/**
 * Refuses a restore while the command of an interrupted run still runs: it would write into the
 * tree under the restore. Exit 4 (busy), with the way out.
 *
 * @throws CliExit
 */
export function refuseWhileRunning(reports: readonly InterruptedReport[]): void {
  const running = reports.find((report) => report.running !== undefined);
  if (running === undefined) return;
  throw new CliExit(EXIT.busy, 'STORE_BUSY', `${runningText(running)}: nothing is restored until it ends (kill ${(running.running ?? []).join(' ')}, or let it finish)`);
}

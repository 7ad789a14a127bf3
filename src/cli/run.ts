import { writeFile } from 'node:fs/promises';
import { constants as osConstants } from 'node:os';
import * as path from 'node:path';
import { CheckpointError, type CheckpointId, type CheckpointObserver, type Gap } from '../index.js';
import { shownText } from '../report/escape.js';
import { renderTurnEndList, shellQuote, type ReportChange, type TurnEndList } from '../report/turn-end-list.js';
import { gitRepoFor, loadContext, observerFor, openStore, type GlobalOptions } from './context.js';
import { EXIT } from './exit-codes.js';
import { handleInterrupted, printInterrupted, type InterruptedReport } from './interrupted.js';
import { CliExit, describeFailure, type Io } from './io.js';
import type { ChildEnd } from '../server/seam.js';
import { gitStateNotes, readGitState, type GitStateReading } from './git-state.js';
import { stagedAgainstHead } from './git.js';
import { Progress } from './progress.js';
import { shortLabel } from './pictures.js';
import { turnEndListFor } from './turn-list.js';
import { startBackgroundPush } from './background-push.js';

/** Options of `turnback run`. */
export interface RunOptions extends GlobalOptions {
  label?: string;
  /** Where the JSON report goes: stdout and stderr belong to the command. */
  report?: string;
  /** Run the command even when no picture can be taken. */
  unprotected?: boolean;
}

/** The `--json` document of `turnback run`. */
export interface RunJson {
  checkpoint: string | null;
  label: string;
  command: string[];
  exitCode: number;
  signal: string | null;
  list: TurnEndList | null;
  changes: { path: string; kind: ReportChange['kind'] }[];
  notes: string[];
  interrupted: InterruptedReport[];
}

/**
 * `turnback run [--label L] -- CMD ARGS…`: picture, run, list. Never blocks the command: a failed
 * picture becomes a note and the command still runs.
 */
export async function runCommand(argv: string[], options: RunOptions, io: Io): Promise<number> {
  if (argv.length === 0) throw new CliExit(EXIT.usage, 'USAGE', 'run needs a command: turnback run -- CMD ARGS…');
  // The command's stdout is the command's: a JSON report there would be mixed with its output.
  if (io.json) throw new CliExit(EXIT.usage, 'USAGE', "run keeps stdout for the command's own output: write the JSON report with --report FILE");
  const { invocation } = io;
  const reportFile = options.report === undefined ? undefined : path.resolve(invocation.cwd, options.report);
  const commandLine = argv.map(shellQuote).join(' ');
  const label = options.label ?? shortLabel(`before ${commandLine}`);
  const context = await loadContext(options, io.invocation);
  // One interrupt listener from here until the list is printed, so no Ctrl-C ever finds turnback
  // with none (Node's default would kill it, and the list with it): before the command starts it
  // aborts the picture, or keeps the command from starting; while the command runs the seam
  // forwards it to the command; after, it is ignored until the list is printed.
  const abort = new AbortController();
  let interruptedBy: NodeJS.Signals | undefined;
  let commandStarted = false;
  const stopGuard = invocation.onInterrupt((signal) => {
    if (commandStarted) return;
    interruptedBy ??= signal;
    abort.abort();
  });
  try {
    const notes: string[] = [];
    let interrupted: InterruptedReport[] = [];
    let observer: CheckpointObserver | undefined;
    let checkpoint: CheckpointId | undefined;
    let baselineGaps: Gap[] = [];
    // Git's HEAD and index before the command, read while the picture is taken.
    let gitBefore: Promise<GitStateReading | undefined> | undefined;

    if (context.refusal !== undefined) {
      notes.push(`no checkpoint: checkpoints are off: ${context.refusal}`);
    } else if (!context.config.enabled) {
      notes.push(`no checkpoint: checkpoints are off (enabled = false in ${context.config.enabledBy ?? 'the config'})`);
    } else {
      // Started after the interrupted-run notice, so the notice never lands inside a rewritten line.
      let progress: Progress | undefined;
      try {
        const store = await openStore(context);
        try {
          interrupted = await handleInterrupted(context, store, true);
          if (!io.json) printInterrupted(io, context, interrupted);
        } catch (error) {
          // Never block the command over an earlier run's leftovers.
          notes.push(`interrupted runs not checked: ${describeFailure(error).message}`);
        }
        gitBefore = gitRepoFor(context).then(readGitState);
        progress = new Progress(invocation.stderr, `turnback: taking a picture before ${commandLine}…`);
        observer = observerFor(context, store);
        checkpoint = await observer.beginTurn({ label });
        const begin = await observer.callBegin('run', { command: commandLine, signal: abort.signal, onProgress: (p) => progress?.update(p) });
        baselineGaps = begin.gaps;
        // A file git does not hold is copied whatever the budget, or the command does not run:
        // one line says which (this one, or "cannot take a picture" below).
        const unwritable = begin.gaps.find((gap) => gap.reason === 'store-full' || gap.reason === 'journal-write-failed');
        if (unwritable !== undefined) throw new CheckpointError('STORE_UNAVAILABLE', `the store cannot be written: ${unwritable.detail}`);
        if (begin.pastBudget !== undefined) io.err(`turnback: ${shownText(begin.pastBudget)}`);
      } catch (error) {
        // No "picture taken" line before the failure is said.
        progress?.abandon();
        if (abort.signal.aborted) {
          await observer?.close().catch(() => undefined);
          io.err('turnback: interrupted while taking a checkpoint; the command did not run');
          return 130;
        }
        const failure = describeFailure(error);
        await observer?.close().catch(() => undefined);
        // No picture, no protection: the command waits for the person's word (--unprotected).
        if (options.unprotected !== true) {
          io.err(`turnback: cannot take a picture: ${failure.message}`, 'turnback: the command did not run; `turnback run --unprotected -- CMD` runs it without a picture');
          return EXIT.unprotected;
        }
        notes.push(`no checkpoint: ${failure.message}`);
        observer = undefined;
        checkpoint = undefined;
      }
      progress?.done();
    }

    const headBefore = observer === undefined ? undefined : await gitBefore;
    // Marked with the run's session, so a later turnback sees the command still running if this one dies.
    let end: ChildEnd;
    try {
      if (interruptedBy !== undefined) {
        // Ctrl-C after the picture and before the command: it does not start, and its call ends
        // as one the signal ended, with the list of (no) changes.
        notes.push('interrupted before the command started; the command did not run');
        end = { code: 128 + (osConstants.signals[interruptedBy] ?? 0), signal: interruptedBy };
      } else {
        commandStarted = true;
        end = await invocation.runChild(argv, observer?.sessionId ?? `cli-${invocation.pid}-unrecorded`);
      }
    } catch (error) {
      // The person's turnback is gone (a served run whose client was killed): the call stays open
      // in the store, as a killed in-process run leaves it, for the next command to find.
      await observer?.close().catch(() => undefined);
      throw error;
    }
    if (end.spawnError !== undefined) io.err(`turnback: ${end.spawnError}`);

    let list: TurnEndList | undefined;
    let changes: ReportChange[] = [];
    if (observer !== undefined) {
      const progress = new Progress(invocation.stderr, `turnback: taking a picture after ${commandLine}…`);
      try {
        // What the command did to git's own state, which a file restore does not undo: said now, and kept with the call for undo's preview.
        const repo = await gitRepoFor(context);
        const headAfter = headBefore === undefined ? undefined : await readGitState(repo, headBefore);
        const moved = headBefore !== undefined && headAfter !== undefined && headBefore.commit !== headAfter.commit;
        // After a checkout the index matches its new HEAD: what is staged is measured against HEAD, not the old index.
        const gitNotes = gitStateNotes(headBefore, headAfter, moved && repo !== undefined ? await stagedAgainstHead(repo.toplevel) : undefined);
        notes.push(...gitNotes);
        const attribution = await observer.callEnd('run', { sideEffect: 'filesystem', exitCode: end.code, ...(gitNotes.length > 0 ? { notes: gitNotes } : {}) });
        progress.done();
        await observer.close();
        changes = attribution.changes;
        list = await turnEndListFor(context, {
          changes,
          gaps: [...baselineGaps.filter((g) => !attribution.gaps.includes(g)), ...attribution.gaps],
          partial: attribution.partial,
          // A file the turn's checkout took away is still in the commit HEAD named before it.
          ...(moved && headBefore?.commit !== undefined ? { commits: [headBefore.commit] } : {}),
          ...(attribution.ignoredDeleted !== undefined ? { ignoredDeleted: attribution.ignoredDeleted } : {}),
          ...(attribution.summary !== undefined ? { summary: attribution.summary } : {}),
        });
      } catch (error) {
        notes.push(`no checkpoint: the picture after the command failed: ${describeFailure(error).message}`);
      } finally {
        progress.done();
      }
    }

    if (list !== undefined) {
      list.notes.unshift(...notes);
      io.err(...renderTurnEndList(list, io.errStyle));
    } else {
      io.err(...notes.map((note) => io.errStyle.dim(`turnback: ${note}`)));
    }
    // The turn is sealed: on its way to the remote store, if there is one, without waiting for it.
    if (checkpoint !== undefined) startBackgroundPush(context);
    const report = {
      checkpoint: checkpoint ?? null,
      label,
      command: argv,
      exitCode: end.code,
      signal: end.signal ?? null,
      list: list ?? null,
      changes: changes.map((c) => ({ path: c.path, kind: c.kind })),
      notes: list?.notes ?? notes,
      interrupted,
    } satisfies RunJson;
    if (reportFile !== undefined) {
      try {
        await writeFile(reportFile, `${JSON.stringify(report, null, 2)}\n`);
      } catch (error) {
        // The command ran: its exit code stands, and the lost report is said, not thrown.
        io.err(`turnback: could not write the report to ${shownText(reportFile)}: ${describeFailure(error).message}`);
      }
    }
    return end.code;
  } finally {
    stopGuard();
  }
}

import { type CheckpointId, type CheckpointMeta, type CoverageCounts, type StoreView } from '../index.js';
import { rowsShown } from '../report/folding.js';
import { shownText } from '../report/escape.js';
import { pathMatcher } from './path-patterns.js';
import { sizeText } from '../report/size-text.js';
import { renderTurnEndList } from '../report/turn-end-list.js';
import { loadContext, observerFor, openStore, storeExists, type CliContext, type GlobalOptions } from './context.js';
import { EXIT } from './exit-codes.js';
import { handleInterrupted, printInterrupted, runningText, type InterruptedReport } from './interrupted.js';
import { CliExit, type Io } from './io.js';
import { callNotesSince, displayLabel, displayTime, resolveId, shortId, stateText, undoablePictures, type Picture } from './pictures.js';
import { turnEndListFor } from './turn-list.js';
import { agentTurns, changesHolder, turnChanged, turnTitle, type AgentTurn } from './agent-turns.js';
import { parseAgentSessionId } from '../hooks.js';
import { MISSED_NOTE_PREFIX } from '../hooks/transcript.js';
import { renderInterruptedNotice } from '../report/interrupted.js';
import { projectPathOf } from './undo.js';
import { withThousands } from '../core/numbers.js';
import { leftText, unpushedCheckpoints, watchReport, type UnpushedReport, type WatchReport } from '../admin.js';

function refusalNotice(context: CliContext, io: Io): void {
  if (context.refusal !== undefined) io.err(`turnback: checkpoints are off: ${context.refusal}`);
}

/** A picture as `--json` prints it. */
export function metaJson(meta: CheckpointMeta | Picture): Record<string, unknown> {
  return {
    id: meta.id,
    shortId: shortId(meta.id),
    kind: meta.kind,
    label: displayLabel(meta),
    createdAt: meta.createdAt,
    files: meta.entryCount,
    complete: meta.complete,
    ...('state' in meta ? { state: meta.state, shownAt: meta.shownAt } : {}),
    ...(meta.restoreOf !== undefined ? { restoreOf: meta.restoreOf } : {}),
  };
}

/**
 * `turnback list`: pictures newest first, with their label, time and how many files changed.
 * Like `run` and `undo`, it first records runs whose turnback was killed, so the list shows
 * what they changed and its ids are the ones `undo` offers.
 */
export async function listCommand(options: GlobalOptions, io: Io): Promise<number> {
  const context = await loadContext(options, io.invocation);
  refusalNotice(context, io);
  let pictures: Picture[] = [];
  let interrupted: InterruptedReport[] = [];
  let store: StoreView | undefined;
  if (await storeExists(context)) {
    store = await openStore(context);
    interrupted = await handleInterrupted(context, store, true);
    if (!io.json) printInterrupted(io, context, interrupted);
    pictures = await undoablePictures(store);
  }
  // Finished pictures in which nothing changed are noise in a person's list; --all (and --json)
  // show them. A running or cut-short one always shows: its count is not final. An agent's
  // prompt boundary is never noise: it is the turn's header.
  const everything = options.all === true;
  const quiet = (meta: Picture): boolean => meta.entryCount === 0 && meta.state === 'complete';
  const agents = store === undefined ? { turns: [], byPicture: new Map() } : await agentTurns(store, pictures);
  const unchanged = pictures.filter((meta) => quiet(meta) && !agents.turns.some((t) => t.boundary.id === meta.id)).length;
  const listed = everything ? pictures : pictures.filter((meta) => !quiet(meta) || agents.turns.some((t) => t.boundary.id === meta.id));
  io.emit({ checkpoints: pictures.map((meta) => ({ ...metaJson(meta), ...agentJson(agents.byPicture.get(meta.id), meta) })), interrupted });
  if (pictures.length === 0) {
    io.out('no checkpoints in this project');
    return EXIT.ok;
  }
  const row = async (meta: Picture, indent: string): Promise<string> => {
    // A cancelled restore's save lists what it saved, none of which it changed.
    const count = meta.state === 'cancelled' ? 0 : meta.entryCount;
    const files = `${count} ${count === 1 ? 'file' : 'files'} changed`;
    const state = stateText(meta.state);
    const ran = store === undefined ? '' : await runText(store, meta);
    return `${indent}${io.style.dim(shortId(meta.id))}  ${displayLabel(meta)} · ${displayTime(meta.shownAt)}   ${files}${ran}${state === '' ? '' : io.style.dim(`   (${state})`)}`;
  };
  // One entry per picture, or per agent turn (its header and its tool calls' rows). An undo's or
  // a redo's save is bookkeeping: it goes under the row whose undo made it (a redo's, under the
  // row its undo went under), not in a row of its own.
  const saves = foldedSaves(listed, agents);
  const entries: (Picture | AgentTurn)[] = [];
  const grouped = new Set<AgentTurn>();
  const folded = new Set([...saves.values()].flat().map((p) => p.id));
  for (const meta of listed) {
    if (folded.has(meta.id)) continue;
    const turn = agents.byPicture.get(meta.id);
    if (turn === undefined) entries.push(meta);
    else if (!grouped.has(turn)) {
      grouped.add(turn);
      entries.push(turn);
    }
  }
  const shown = rowsShown(entries.length, context.maxRows);
  for (const entry of entries.slice(0, shown)) {
    const savesUnder = async (key: Picture | AgentTurn): Promise<void> => {
      for (const save of saves.get(key) ?? []) io.out(await row(save, '  ↳ '));
    };
    if (!('boundary' in entry)) {
      io.out(await row(entry, ''));
      await savesUnder(entry);
      continue;
    }
    const changed = turnChanged(entry);
    const whole = changed === undefined ? 'in progress' : `${changed} ${changed === 1 ? 'file' : 'files'} changed`;
    io.out(`${io.style.bold(turnTitle(entry, shownText))} · ${displayTime(entry.boundary.shownAt)}   ${whole}   ${io.style.dim(`(turnback undo ${shortId(entry.boundary.id)} undoes it)`)}`);
    // The calls whose hooks did not reach turnback (its end named them), one by one.
    if (store !== undefined && entry.whole !== undefined) for (const note of (await callNotesSince(store, entry.whole, true)).filter((n) => n.startsWith(MISSED_NOTE_PREFIX))) io.out(io.style.warn(`  ⚠ ${shownText(note)}`));
    // A tool call that changed nothing (the empty turn its before event opened) is noise here.
    for (const call of entry.calls) if (everything || call.entryCount > 0) io.out(await row(call, '  '));
    await savesUnder(entry);
  }
  if (entries.length > shown) io.out(io.style.dim(`… and ${entries.length - shown} older ${entries.length - shown === 1 ? 'entry' : 'entries'} (--all lists every one)`));
  if (!everything && unchanged > 0) io.out(io.style.dim(`${unchanged} ${unchanged === 1 ? 'picture' : 'pictures'} in which nothing changed not shown (--all shows them)`));
  return EXIT.ok;
}

/**
 * The restores' saves of `listed` (newest first) by the entry they go under: the picture, or the
 * agent turn, the undo restored to; a redo's save goes where the save it restored went. A save
 * whose picture is not listed (pruned, or quiet) keeps a row of its own.
 */
function foldedSaves(listed: readonly Picture[], agents: { byPicture: Map<string, AgentTurn> }): Map<Picture | AgentTurn, Picture[]> {
  const byId = new Map(listed.map((p) => [p.id as string, p]));
  const ownerOf = (id: string | undefined, depth: number): Picture | AgentTurn | undefined => {
    if (id === undefined || depth > 64) return undefined;
    const turn = agents.byPicture.get(id);
    if (turn !== undefined) return turn;
    const picture = byId.get(id);
    if (picture === undefined) return undefined;
    return picture.kind === 'pre-restore' ? ownerOf(picture.restoreOf, depth + 1) : picture;
  };
  const saves = new Map<Picture | AgentTurn, Picture[]>();
  for (const picture of listed) {
    if (picture.kind !== 'pre-restore') continue;
    const owner = ownerOf(picture.restoreOf, 0);
    if (owner === undefined) continue;
    saves.set(owner, [...(saves.get(owner) ?? []), picture]);
  }
  return saves;
}

/** The `agent` part of a picture's `--json` row: its agent, session, turn and role. */
function agentJson(turn: AgentTurn | undefined, meta: Picture): Record<string, unknown> {
  if (turn === undefined) return {};
  const role = turn.boundary.id === meta.id ? 'boundary' : turn.whole?.id === meta.id ? 'turn' : 'call';
  return { agent: { name: turn.agent, session: turn.session, turn: turn.turn, prompt: turn.boundary.label ?? '', role, boundary: turn.boundary.id } };
}

/** `   exit 3 · 1.2 s` for a picture a `turnback run` took: its command's exit code and how long it ran. */
async function runText(store: StoreView, meta: Picture): Promise<string> {
  if (meta.kind !== 'turn' || (meta.state !== 'complete' && meta.state !== 'partial')) return '';
  const call = (await store.manifest(meta.id as CheckpointId).catch(() => undefined))?.calls.find((c) => c.callId === 'run');
  if (call?.exitCode === undefined || call.endedAt === undefined) return '';
  const ms = Date.parse(call.endedAt) - Date.parse(call.startedAt);
  const took = ms < 60_000 ? `${(ms / 1000).toFixed(1)} s` : `${Math.round(ms / 60_000)} min`;
  return `   exit ${call.exitCode} · ${took}`;
}

/** The context and store of a command that reads an existing store (exit 3 when there is none). */
export async function openExisting(options: GlobalOptions, io: Io): Promise<{ context: CliContext; store: Awaited<ReturnType<typeof openStore>> }> {
  const context = await loadContext(options, io.invocation);
  refusalNotice(context, io);
  if (!(await storeExists(context))) throw new CliExit(EXIT.nothing, 'NOTHING', 'no checkpoints in this project');
  return { context, store: await openStore(context) };
}

/** `turnback show ID`: the checkpoint's turn-end list. */
export async function showCommand(id: string, paths: string[], options: GlobalOptions, io: Io): Promise<number> {
  const { context, store } = await openExisting(options, io);
  const meta = await resolveId(store, id);
  // An agent turn's boundary stands for the turn: its whole-turn picture holds what it changed.
  const holder = await changesHolder(store, meta);
  const observer = observerFor(context, store);
  const whole = await observer.turnChanges(holder.id as CheckpointId);
  const calls = (await store.manifest(holder.id as CheckpointId)).calls.map((c) => c.callId);
  await observer.close();
  const matches = paths.length > 0 ? pathMatcher(paths.map((p) => projectPathOf(context.projectRoot, p, context.invocation.cwd, 'show'))) : () => true;
  // Unnamed deleted ignored entries (past what a record names) match no path a person gives.
  const { ignoredDeleted, ignoredDeletedMore, ...rest } = whole;
  const ignoredShown = ignoredDeleted?.filter((entry) => matches(entry.endsWith('/') ? entry.slice(0, -1) : entry)) ?? [];
  const turn = {
    ...rest,
    changes: whole.changes.filter((change) => matches(change.path)),
    ...(ignoredShown.length > 0 ? { ignoredDeleted: ignoredShown } : {}),
    ...(ignoredDeletedMore !== undefined && paths.length === 0 ? { ignoredDeletedMore } : {}),
  };
  const list = await turnEndListFor(context, turn);
  // A turn's notes (its missed calls) are on its whole-turn picture's record.
  list.notes.push(...(await callNotesSince(store, holder, true)));
  io.emit({ checkpoint: metaJson(meta), ...(holder.id !== meta.id ? { turnPicture: metaJson(holder) } : {}), calls, list, changes: turn.changes.map((c) => ({ path: c.path, kind: c.kind })), gaps: turn.gaps, partial: turn.partial });
  io.out(io.style.bold(`${displayLabel(meta)} · ${displayTime(meta.createdAt)}`), io.style.dim(`id ${meta.id} · ${meta.kind}${meta.complete ? '' : ' · open or cut short'}`));
  // An agent's tool call by the id the agent gave it: `turnback undo --call ID` takes it.
  const toolCalls = parseAgentSessionId(holder.sessionId) !== undefined ? calls.filter((c) => !c.startsWith('turn:')) : [];
  if (toolCalls.length > 0) io.out(io.style.dim(`tool ${toolCalls.length === 1 ? 'call' : 'calls'} ${toolCalls.map((c) => shownText(c)).join(', ')}`));
  io.out(...renderTurnEndList(list, io.style));
  return EXIT.ok;
}

/** `turnback status`: on or off and why, the store, the last picture, interrupted runs. */
export async function statusCommand(options: GlobalOptions, io: Io): Promise<number> {
  const context = await loadContext(options, io.invocation);
  const why = context.refusal ?? (!context.config.enabled ? `enabled = false in ${context.config.enabledBy ?? 'the config'}` : undefined);
  const on = why === undefined;
  const exists = await storeExists(context);
  let size: number | undefined;
  let last: Picture | undefined;
  let interrupted: InterruptedReport[] = [];
  let store: StoreView | undefined;
  if (exists) {
    store = await openStore(context);
    size = await store.storeSizeBytes();
    last = (await undoablePictures(store))[0];
    interrupted = await handleInterrupted(context, store, false);
  }
  const pictured = store === undefined ? undefined : await lastCoverage(store);
  // What still rests only on git is the store's own answer now, not the newest picture's count: the server's idle copies (and prune) take files off it.
  const coverage = pictured === undefined || store === undefined ? pictured : { ...pictured, onGit: (await store.restingOnGit()).length };
  const remote = context.config.resolved.remote;
  const unpushed: UnpushedReport | undefined = remote === undefined ? undefined : store === undefined ? { location: remote.location, unpushed: 0, lastPushAt: undefined } : await unpushedCheckpoints(store, remote.location);
  const cutShort = last === undefined || store === undefined ? [] : ((await store.manifest(last.id as CheckpointId).catch(() => undefined))?.gaps ?? []).filter((gap) => CUT_SHORT.has(gap.reason)).slice(0, 1);
  io.emit({
    enabled: on,
    ...(why !== undefined ? { why } : {}),
    project: context.projectRoot,
    store: { dir: context.storeDir, from: context.storeFrom, exists, ...(size !== undefined ? { bytes: size } : {}) },
    config: { user: context.config.user.found ? context.config.user.file : null, project: context.config.project.found ? context.config.project.file : null },
    last: last !== undefined ? { ...metaJson(last), cutShort: cutShort.map((gap) => gap.detail) } : null,
    coverage: coverage ?? null,
    remote: unpushed ?? null,
    watcher: watchReport(context.projectRoot),
    interrupted,
  });
  io.out(`checkpoints: ${on ? 'on' : `off (${why})`}`);
  io.out(`project: ${context.projectRoot}`);
  io.out(`store: ${context.storeDir}${exists ? ` (${sizeText(size ?? 0)} on disk)` : ' (not created yet)'}${context.storeFrom !== 'default' ? io.style.dim(`   from ${context.storeFrom}`) : ''}`);
  io.out(`last picture: ${last !== undefined ? `${displayLabel(last)} · ${displayTime(last.shownAt)} (${last.entryCount} ${last.entryCount === 1 ? 'file' : 'files'} changed${last.state === 'complete' ? '' : `; ${stateText(last.state)}`})` : 'none'}`);
  if (coverage !== undefined) io.out(coverageLine(coverage, context.config.resolved.maxFileMib, context.config.resolved.copyCredentials));
  if (unpushed !== undefined) {
    const when = unpushed.lastPushAt === undefined ? 'never pushed from here' : `last push ${displayTime(unpushed.lastPushAt)}`;
    io.out(`remote: ${shownText(unpushed.location)} · ${unpushed.unpushed === 0 ? 'every checkpoint pushed' : `${withThousands(unpushed.unpushed)} ${unpushed.unpushed === 1 ? 'checkpoint' : 'checkpoints'} not pushed yet (turnback push)`} · ${when}`);
  }
  io.out(watcherLine(watchReport(context.projectRoot), displayTime));
  for (const gap of cutShort) io.out(`⚠ last picture cut short: ${shownText(gap.detail)} (${CUT_SHORT.get(gap.reason) ?? ''})`);
  for (const report of interrupted) {
    if (report.running !== undefined) io.out(`${runningText(report)}; undo waits until it ends`);
    else io.out(...renderInterruptedNotice({ ...report, maxFileMib: context.config.resolved.maxFileMib, maxRows: context.maxRows }, io.style));
  }
  return EXIT.ok;
}

/**
 * `watcher: watching (watchman 4.9.0); verified 3 times, no disagreement`, or why it does not
 * vouch and what pictures do meanwhile (issue #28).
 */
export function watcherLine(report: WatchReport, when: (iso: string) => string): string {
  switch (report.state) {
    case 'off':
      return `watcher: off (${shownText(report.detail)}): every picture sweeps the whole tree`;
    case 'starting':
      return `watcher: starting (${shownText(report.detail)})`;
    default: {
      const checked =
        report.verified === 0
          ? 'not verified yet'
          : `verified ${withThousands(report.verified)} ${report.verified === 1 ? 'time' : 'times'}, ${report.disagreements === 0 ? 'no disagreement' : `${withThousands(report.disagreements)} ${report.disagreements === 1 ? 'disagreement' : 'disagreements'}, the last ${shownText(report.lastDisagreement?.path ?? '')} at ${when(new Date(report.lastDisagreement?.at ?? 0).toISOString())}`}`;
      if (report.state === 'watching') return `watcher: watching (${shownText(report.backend)}); ${checked}`;
      return `watcher: not vouching (${report.reason ?? 'unknown'}: ${shownText(report.detail ?? '')}): the next picture sweeps the whole tree; ${checked}`;
    }
  }
}

/** Gaps that say a picture was cut short by a limit, and the setting that raises it. */
const CUT_SHORT: ReadonlyMap<string, string> = new Map([
  ['picture-budget', 'max_picture_files and max_picture_mib in turnback.toml raise the budget'],
  ['walk-entries', 'max_walk_entries in turnback.toml raises the limit'],
  ['time-limit', 'max_picture_seconds in turnback.toml raises the limit'],
]);

/** What the newest run's picture covered (the call records keep it), looking back over a few pictures. */
async function lastCoverage(store: StoreView): Promise<CoverageCounts | undefined> {
  const runs = (await store.list()).filter((m) => m.kind === 'turn' || m.kind === 'call').sort((a, b) => (a.id < b.id ? 1 : -1));
  for (const meta of runs.slice(0, 20)) {
    const calls = (await store.manifest(meta.id as CheckpointId).catch(() => undefined))?.calls ?? [];
    const found = calls.find((call) => call.coverage !== undefined)?.coverage;
    if (found !== undefined) return found;
  }
  return undefined;
}

/**
 * `coverage: 10,102 files pictured; left out on purpose: 3 ignored …, 1 credential file …`: the
 * categories a picture does not copy, said up front with their counts.
 */
export function coverageLine(counts: CoverageCounts, maxFileMib: number, copyCredentials: boolean): string {
  const n = withThousands;
  const parts: string[] = [];
  if (counts.ignored > 0) parts.push(`${n(counts.ignored)} ignored (.gitignore, skip; files git tracks are covered all the same)`);
  if (counts.credential > 0) parts.push(`${n(counts.credential)} credential ${counts.credential === 1 ? 'file' : 'files'} recorded without a copy${copyCredentials ? '' : ' (copy_credentials = true copies them)'}`);
  if (counts.tooLarge > 0) parts.push(`${n(counts.tooLarge)} over ${maxFileMib} MiB recorded without a copy (max_file_mib)`);
  // A walk stopped by a limit: never "nothing left out".
  if (counts.left !== undefined) parts.push(`${leftText(counts.left)} (${counts.left.reason === 'walk-entries' ? 'max_walk_entries' : 'max_picture_seconds'})`);
  const onGit = counts.onGit ?? 0;
  const resting = onGit > 0 ? ` (${n(onGit)} ${onGit === 1 ? 'pre-image rests' : 'pre-images rest'} only on git's objects: clean tracked files past the copy budget, copied into the store while the server is idle or by turnback prune)` : '';
  return `coverage: ${n(counts.files)} ${counts.files === 1 ? 'file' : 'files'} pictured${resting}${parts.length > 0 ? `; left out: ${parts.join(', ')}` : '; nothing left out'}`;
}

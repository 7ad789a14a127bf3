import * as path from 'node:path';
import { AGENTS, installedEvents } from '../hooks.js';
import { ourCommands } from '../hooks/settings.js';
import { shownPath, shownText } from '../report/escape.js';
import { blockedLine, serverAddress, socketBlocker } from '../server/address.js';
import { loadContext, storeFolderProblem, type GlobalOptions } from './context.js';
import { EXIT } from './exit-codes.js';
import { commandProblem } from './hook-command.js';
import { trustGapOf } from './hook-trust.js';
import { hookFile, hookLogPath, readLog, readSettings } from './hooks.js';
import type { Io } from './io.js';
import { displayTime } from './pictures.js';

// `turnback hooks status`: for each agent, the files its hooks are installed in (the project's,
// this machine's own, the user's), when they last fired or failed, and what keeps them from running.

/** `turnback hooks status`: per agent found, whether its hooks are installed and when they last fired. */
export async function hooksStatusCommand(options: GlobalOptions, io: Io): Promise<number> {
  const context = await loadContext(options, io.invocation);
  const log = await readLog(context);
  const rows: Record<string, unknown>[] = [];
  for (const spec of Object.values(AGENTS)) {
    const scopes: { scope: string; file: string; installed: number; commands: string[] }[] = [];
    const files: [string, string][] = [['project', hookFile(spec, context, false)], ...(spec.http !== undefined ? [['local', path.join(context.projectRoot, spec.http.localFile)] as [string, string]] : []), ['user', hookFile(spec, context, true)]];
    for (const [scope, file] of files) {
      try {
        const { settings, text } = await readSettings(file);
        if (text !== undefined) scopes.push({ scope, file, installed: installedEvents(spec, settings).length, commands: ourCommands(spec, settings) });
      } catch {
        scopes.push({ scope, file, installed: -1, commands: [] });
      }
    }
    const mine = log.filter((l) => l.agent === spec.name);
    const last = mine.at(-1);
    const lastFailure = mine.filter((l) => !l.ok).at(-1);
    // A file there that cannot be read (not JSON, a FIFO) is worth a line even before any event.
    if (scopes.every((s) => s.installed === 0) && mine.length === 0) continue;
    const total = Object.keys(spec.events).length;
    const row: Record<string, unknown> = { agent: spec.name, scopes: scopes.map(({ commands: _c, ...rest }) => rest), events: total, lastEvent: last ?? null, lastFailure: lastFailure ?? null };
    rows.push(row);
    const where = scopes
      .filter((s) => s.installed !== 0)
      .map((s) => (s.installed < 0 ? `${s.scope}: ${shownPath(s.file)} cannot be read` : `${s.scope}: ${s.installed === total ? 'installed' : `${s.installed} of ${total} events`} (${shownPath(s.file)})`));
    io.out(`${spec.title}: ${where.length === 0 ? 'not installed' : where.join('; ')}`);
    // What keeps installed hooks from running here: a command not found, an agent's trust.
    const problems: string[] = [];
    for (const s of scopes.filter((x) => x.installed > 0)) {
      const broken = [...new Set(s.commands.map((c) => commandProblem(c, process.env.PATH)).filter((p): p is string => p !== undefined))];
      for (const p of broken) problems.push(`${s.scope}: its command would not run here: ${p}`);
      const gap = await trustGapOf(spec, { projectRoot: context.projectRoot, user: s.scope === 'user', hookFile: path.resolve(s.file), changed: false });
      if (gap !== undefined) problems.push(`${s.scope}: not running: ${gap.why}; to trust them: ${gap.step}`);
    }
    row.problems = problems;
    io.out(last === undefined ? `  no event yet${problems.length > 0 ? ', because:' : ''}` : `  last event: ${shownText(last.event)} ${displayTime(last.at)} (${last.ok ? shownText(last.action ?? 'ok') : `failed: ${shownText(last.error ?? '')}`})`);
    for (const p of problems) io.out(`  ${shownText(p)}`);
    if (lastFailure !== undefined && lastFailure !== last) io.out(`  last failure: ${shownText(lastFailure.event)} ${displayTime(lastFailure.at)}: ${shownText(lastFailure.error ?? '')}`);
    const failed = mine.filter((l) => !l.ok).length;
    if (failed > 0) io.out(`  ${failed} of the ${mine.length} events in the log were not recorded (gaps: ${shownPath(hookLogPath(context))})`);
  }
  const address = serverAddress(path.join(__dirname, 'main.cjs'), process.env);
  const blockedBy = address === undefined ? undefined : socketBlocker(address.socket);
  const server = address !== undefined && blockedBy !== undefined ? blockedLine(address.socket, blockedBy) : null;
  if (server !== null) io.out(`server: ${shownText(server)}`);
  const storeProblem = await storeFolderProblem(context);
  if (storeProblem !== undefined) io.out(io.style.warn(`⚠ ${storeProblem}: every hook event fails until it names a turnback store or an empty folder`));
  io.emit({ agents: rows, log: hookLogPath(context), server, ...(storeProblem !== undefined ? { storeProblem } : {}) });
  if (rows.length === 0) io.out('no agent hooks installed here (turnback hooks install AGENT)');
  return EXIT.ok;
}

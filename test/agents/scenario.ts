import { readFile } from 'node:fs/promises';
import * as path from 'node:path';
import { expect } from 'vitest';
import { hookLogLines, listed, shellStepOf, startSession, treePicture, type AgentDriver, type AgentSession, type Listed } from './harness.js';

// The session every agent plays, and what must hold after it (one test per agent, so each agent
// runs twice in all: the machine is small and shared). Turn 1: a write of a new file, an edit of
// an existing one, a shell call `rm -rf docs && sed -i … other.txt` (Codex refuses `rm -f`:
// `rm -r` there); turn 2: one more write.

/** What the first turn must have done to the project, by the agent's own tools. */
function expectFirstTurnDone(start: Record<string, string>, after: Record<string, string>, said: string): void {
  expect(Object.keys(after).filter((p) => p.startsWith('docs')), said).toEqual([]);
  expect(after['new.txt'], said).toMatch(/^file \d+ /);
  expect(after['existing.txt'], said).not.toBe(start['existing.txt']);
  expect(after['other.txt'], said).toBe(`file 755 ${Buffer.from('alpha\nBETA\n').toString('base64')}`);
  expect(after['src/keep.ts'], said).toBe(start['src/keep.ts']);
}

/** The rows of one agent session, and the two turns' boundaries. */
function turnsOf(rows: Listed[], agent: string): { boundaries: Listed[]; calls: Listed[] } {
  const mine = rows.filter((r) => r.agent?.name === agent);
  return { boundaries: mine.filter((r) => r.agent?.role === 'boundary'), calls: mine.filter((r) => r.agent?.role === 'call') };
}

/** The changes `turnback show ID --json` lists, as `kind path`. */
function changesOf(session: AgentSession, id: string): string[] {
  const shown = session.project.tb(['show', id, '--json']);
  expect(shown.code, shown.stderr).toBe(0);
  return (JSON.parse(shown.stdout) as { changes: { path: string; kind: string }[] }).changes.map((c) => `${c.kind} ${c.path}`).sort();
}

/** The id the model gave the shell call. */
function modelCallId(session: AgentSession): string {
  const step = shellStepOf(session.script);
  const id = session.server.calls.filter((c) => c.turn === step.turn && c.index === step.index).at(-1)?.id;
  expect(id, JSON.stringify(session.server.calls)).toBeDefined();
  return id as string;
}

/**
 * The agent's own id of the shell call, as the hook log has it (the only whole-tree call of the
 * session). No output of turnback shows it yet (issue 26, point 5): the log is where it is.
 */
function agentCallId(log: { action?: string }[]): string {
  const began = log.map((l) => /^call (\S+) began: whole tree$/.exec(l.action ?? '')?.[1]).filter((id) => id !== undefined);
  expect(began, JSON.stringify(log, null, 1)).toHaveLength(1);
  return began[0] as string;
}

/** Runs the two-turn session in `driver`'s agent and checks every promise of the hooks. */
export async function provesTheSession(driver: AgentDriver): Promise<void> {
  const session = await startSession(driver);
  const { project } = session;
  try {
    const skip = [driver.settingsFolder];
    const start = await treePicture(project.proj, skip);
    await session.prompt(1, 'write new.txt, edit existing.txt, then clean up with the shell');
    const afterFirst = await treePicture(project.proj, skip);
    // What the agent sent the model last: its tools' results, when a tool did not do its work.
    expectFirstTurnDone(start, afterFirst, JSON.stringify({ ...(session.server.requests.at(-1)?.body as object), tools: undefined, system: undefined }).slice(-4000));
    await session.prompt(2, 'one more file');
    const afterSecond = await treePicture(project.proj, skip);
    expect(afterSecond['second.txt']).toMatch(/^file \d+ /);

    // Hooks fired, every one ran clean, and the list shows the two turns.
    const log = await hookLogLines(project);
    expect(log.length).toBeGreaterThan(0);
    expect(log.filter((l) => !l.ok)).toEqual([]);
    const { boundaries, calls } = turnsOf(listed(project), driver.agent);
    expect(boundaries.map((b) => b.agent?.turn).sort(), JSON.stringify(log, null, 1)).toEqual([1, 2]);

    // The shell call's changes are that call's: the deleted folder's files and the sed's file.
    const shell = calls.find((c) => / rm -rf? docs/.test(c.label ?? ''));
    expect(shell, JSON.stringify(calls, null, 1)).toBeDefined();
    expect(changesOf(session, (shell as Listed).id)).toEqual(['changed other.txt', 'deleted docs/a.md', 'deleted docs/sub/b.md']);

    // Undo of the shell call alone brings back only its changes; redo takes them again.
    const shellCallId = driver.callIds === 'model' ? modelCallId(session) : agentCallId(log);
    const undoCall = project.tb(['undo', '--call', shellCallId, '--yes']);
    expect(undoCall.code, `${undoCall.stdout}${undoCall.stderr}`).toBe(0);
    const docs = Object.fromEntries(Object.entries(start).filter(([p]) => p.startsWith('docs')));
    expect(await treePicture(project.proj, skip)).toEqual({ ...afterSecond, ...docs, 'other.txt': start['other.txt'] });
    const redoCall = project.tb(['redo', '--yes']);
    expect(redoCall.code, `${redoCall.stdout}${redoCall.stderr}`).toBe(0);
    expect(await treePicture(project.proj, skip)).toEqual(afterSecond);

    // The second turn undoes alone.
    const undoSecond = project.tb(['undo', '--yes', '--delete-created']);
    expect(undoSecond.code, `${undoSecond.stdout}${undoSecond.stderr}`).toBe(0);
    expect(await treePicture(project.proj, skip)).toEqual(afterFirst);

    // The first turn: every file, mode and folder as before the prompt; redo, and undo again.
    const first = boundaries.find((b) => b.agent?.turn === 1) as Listed;
    const undoFirst = project.tb(['undo', first.id, '--yes', '--delete-created']);
    expect(undoFirst.code, `${undoFirst.stdout}${undoFirst.stderr}`).toBe(0);
    expect(await treePicture(project.proj, skip)).toEqual(start);
    const redoFirst = project.tb(['redo', '--yes']);
    expect(redoFirst.code, `${redoFirst.stdout}${redoFirst.stderr}`).toBe(0);
    expect(await treePicture(project.proj, skip)).toEqual(afterFirst);

    // Uninstall takes away what install added, and nothing else.
    const uninstalled = project.tb(['hooks', 'uninstall', driver.agent]);
    expect(uninstalled.code, uninstalled.stderr).toBe(0);
    const settings = Object.fromEntries(Object.entries(await treePicture(project.proj)).filter(([p]) => p === `${driver.settingsFolder}/` || p.startsWith(`${driver.settingsFolder}/`)));
    const settingsBefore = Object.fromEntries(Object.entries(session.beforeInstall).filter(([p]) => p === `${driver.settingsFolder}/` || p.startsWith(`${driver.settingsFolder}/`)));
    expect(settings).toEqual(settingsBefore);
  } finally {
    await session.close();
  }
}

/** The text of a file in the project, or `undefined`. */
export async function projectText(session: AgentSession, relative: string): Promise<string | undefined> {
  return readFile(path.join(session.project.proj, relative), 'utf8').catch(() => undefined);
}

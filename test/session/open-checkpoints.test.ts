import * as fs from 'node:fs/promises';
import * as path from 'node:path';
import { describe, expect, expectTypeOf, it } from 'vitest';
import { isCheckpointError } from '../../src/core/errors.js';
import type { CheckpointId } from '../../src/core/id.js';
import { CheckpointObserver } from '../../src/session/observer.js';
import { observerForConfig, openCheckpoints } from '../../src/session/open.js';
import { isUnavailable, UnavailableCheckpoints, type Unavailable, type UnavailableReason } from '../../src/session/unavailable.js';
import { editFile, writeFile } from '../../src/tools/reference-tools.js';
import { sandbox, writeTree } from './helpers.js';

const ID = '1796045420070-0000-e24ed1b3' as CheckpointId;
const SCOPE = { sessionId: 's1', scopeId: 'tc_1' };

/** Every public method of CheckpointObserver, called with plausible arguments. */
const CALLS: Record<string, (c: CheckpointObserver | UnavailableCheckpoints) => Promise<unknown>> = {
  beginTurn: (c) => c.beginTurn({ label: 'a turn' }),
  beforeWrite: (c) => c.beforeWrite('src/a.ts', { kind: 'write' }),
  afterWrite: (c) => c.afterWrite('src/a.ts', { kind: 'write' }),
  plan: (c) => c.plan(ID),
  restore: (c) => c.restore(ID, { created: 'keep' }),
  callBegin: (c) => c.callBegin('tc_2', { command: 'sed -i s/a/b/ x' }),
  callEnd: (c) => c.callEnd('tc_2', { sideEffect: 'filesystem' }),
  treeMark: (c) => c.treeMark('events'),
  openCalls: (c) => c.openCalls(),
  turnChanges: (c) => c.turnChanges(ID),
  snapshot: (c) => c.snapshot({ ...SCOPE, paths: ['src/a.ts'] }),
  listSnapshots: (c) => c.listSnapshots('s1'),
  restoreSnapshot: (c) => c.restoreSnapshot(SCOPE),
  dropSnapshot: (c) => c.dropSnapshot(SCOPE),
  drop: (c) => c.drop('s1'),
  savepoint: (c) => c.savepoint({ reason: 'before the refactor' }),
  listSavepoints: (c) => c.listSavepoints(),
  diffSavepoint: (c) => c.diffSavepoint(ID),
  restoreSavepoint: (c) => c.restoreSavepoint(ID),
  restoreCall: (c) => c.restoreCall(ID, { changes: [] }),
  close: (c) => c.close(),
};

function observerMethods(): string[] {
  const names: string[] = [];
  for (const [name, descriptor] of Object.entries(Object.getOwnPropertyDescriptors(CheckpointObserver.prototype))) {
    if (name !== 'constructor' && typeof descriptor.value === 'function') names.push(name);
  }
  return names.sort();
}

/** Calls every method and checks each answers `{ available: false, reason, detail }`. */
async function expectEveryMethodUnavailable(checkpoints: CheckpointObserver | UnavailableCheckpoints, reason: UnavailableReason): Promise<void> {
  expect(isUnavailable(checkpoints)).toBe(true);
  if (!isUnavailable(checkpoints)) return;
  expect(checkpoints.reason).toBe(reason);
  expect(checkpoints.detail.length).toBeGreaterThan(10);
  for (const [name, call] of Object.entries(CALLS)) {
    const answer = await call(checkpoints);
    expect(answer, name).toEqual({ available: false, reason, detail: checkpoints.detail });
    expect(isUnavailable(answer), name).toBe(true);
  }
  expect(await checkpoints.withToolCall(SCOPE, async () => 'the tool result')).toBe('the tool result');
  await expect(checkpoints.withToolCall(SCOPE, async () => Promise.reject(new Error('tool failed')))).rejects.toThrow('tool failed');
}

describe('openCheckpoints: the facade for a workspace that cannot take checkpoints', () => {
  it('answers for every public method of CheckpointObserver', () => {
    const methods = observerMethods();
    expect(methods.length).toBeGreaterThanOrEqual(15);
    for (const name of methods) {
      expect(typeof (UnavailableCheckpoints.prototype as unknown as Record<string, unknown>)[name], `UnavailableCheckpoints.${name}`).toBe('function');
      if (name !== 'withToolCall') expect(Object.keys(CALLS), `the test calls ${name}`).toContain(name);
    }
  });

  it('disabled (the default): every method says so, and nothing at all is created', async () => {
    const { base, project } = await sandbox();
    const dir = path.join(base, 'store');
    const env = { XDG_DATA_HOME: path.join(base, 'xdg'), HOME: path.join(base, 'home') };
    for (const config of [{}, `[capabilities.checkpoint]\nenabled = false\ndir = "${dir}"`, { capabilities: { checkpoint: { dir } } }]) {
      const checkpoints = await openCheckpoints(config, { projectRoot: project, sessionId: 's1', env });
      await expectEveryMethodUnavailable(checkpoints, 'disabled');
      // A write tool given the stand-in writes the file and nothing else.
      await writeFile({ projectRoot: project, observer: checkpoints }, 'src/a.ts', 'one\n');
      await editFile({ projectRoot: project, observer: checkpoints }, 'src/a.ts', 'one', 'two');
    }
    // Even a project root that does not exist is not looked at.
    await expectEveryMethodUnavailable(await openCheckpoints({}, { projectRoot: path.join(base, 'missing'), env }), 'disabled');
    expect((await fs.readdir(base)).sort()).toEqual(['project']);
    expect(await fs.readdir(project)).toEqual(['src']);
    expect(await fs.readdir(path.join(project, 'src'))).toEqual(['a.ts']);
    expect(await fs.readFile(path.join(project, 'src', 'a.ts'), 'utf8')).toBe('two\n');
  });

  it('no project root, a missing one, or a file', async () => {
    const { base } = await sandbox();
    const dir = path.join(base, 'store');
    const config = { capabilities: { checkpoint: { enabled: true, dir } } };
    await expectEveryMethodUnavailable(await openCheckpoints(config, { projectRoot: '' }), 'no-project-root');
    await expectEveryMethodUnavailable(await openCheckpoints(config, { projectRoot: path.join(base, 'missing') }), 'not-a-directory');
    await fs.writeFile(path.join(base, 'afile'), 'x');
    const file = await openCheckpoints(config, { projectRoot: path.join(base, 'afile') });
    await expectEveryMethodUnavailable(file, 'not-a-directory');
    expect(isUnavailable(file) && file.detail).toContain('not a folder');
    await expect(fs.access(dir)).rejects.toThrow();
  });

  it('the home folder and the file-system root take no checkpoints, and no store is created', async () => {
    const { base, project } = await sandbox();
    const dir = path.join(base, 'store');
    const config = { capabilities: { checkpoint: { enabled: true, dir } } };
    const home = await openCheckpoints(config, { projectRoot: project, env: { HOME: project } });
    await expectEveryMethodUnavailable(home, 'home-folder');
    expect(isUnavailable(home) && home.detail).toContain('home folder');
    const root = await openCheckpoints(config, { projectRoot: '/' });
    await expectEveryMethodUnavailable(root, 'filesystem-root');
    expect(isUnavailable(root) && root.detail).toContain('root folder');
    await expect(fs.access(dir)).rejects.toThrow();
    expect(await fs.readdir(project)).toEqual([]);
  });

  it('a store that cannot be opened: a symlink, a path under a file', async () => {
    const { base, project } = await sandbox();
    await fs.mkdir(path.join(base, 'real'));
    await fs.symlink(path.join(base, 'real'), path.join(base, 'linked'));
    await fs.writeFile(path.join(base, 'afile'), 'x');
    for (const dir of [path.join(base, 'linked'), path.join(base, 'afile', 's')]) {
      const checkpoints = await openCheckpoints({ capabilities: { checkpoint: { enabled: true, dir } } }, { projectRoot: project });
      await expectEveryMethodUnavailable(checkpoints, 'store-unavailable');
      expect(isUnavailable(checkpoints) && checkpoints.detail).toContain(dir);
    }
    expect(await fs.readdir(path.join(base, 'real'))).toEqual([]);
    expect(await fs.readdir(project)).toEqual([]);
  });

  it('a malformed config is still a typed error, before anything is touched', async () => {
    const { project } = await sandbox();
    const error = await openCheckpoints('[capabilities.checkpoint\nenabled = true', { projectRoot: project }).catch((e: unknown) => e);
    expect(isCheckpointError(error, 'INVALID_CONFIG')).toBe(true);
    const typo = await openCheckpoints({ capabilities: { checkpoint: { enabeld: true } as never } }, { projectRoot: project }).catch((e: unknown) => e);
    expect(isCheckpointError(typo, 'INVALID_CONFIG')).toBe(true);
  });

  it('a usable workspace gets the real observer, and none of its results reads as unavailable', async () => {
    const { base, project } = await sandbox();
    await writeTree(project, { 'src/a.ts': 'one\n' });
    const checkpoints = await openCheckpoints({ capabilities: { checkpoint: { enabled: true, dir: path.join(base, 'store') } } }, { projectRoot: project, sessionId: 's1' });
    expect(checkpoints).toBeInstanceOf(CheckpointObserver);
    expect(isUnavailable(checkpoints)).toBe(false);
    if (isUnavailable(checkpoints)) return;
    expectTypeOf(checkpoints).toEqualTypeOf<CheckpointObserver>();
    const turn = await checkpoints.beginTurn({ label: 'edit' });
    expect(isUnavailable(turn)).toBe(false);
    const ctx = { projectRoot: project, observer: checkpoints };
    await editFile(ctx, 'src/a.ts', 'one', 'two');
    const plan = await checkpoints.plan(turn);
    expect(isUnavailable(plan)).toBe(false);
    const report = await checkpoints.restore(turn, { expect: plan });
    expect(isUnavailable(report)).toBe(false);
    expect(report.available).toBe(true);
    expect(await fs.readFile(path.join(project, 'src', 'a.ts'), 'utf8')).toBe('one\n');
    await checkpoints.close();
  });

  it('applies the config\'s picture limits and skip list (both entry points)', async () => {
    const { base, project } = await sandbox();
    await writeTree(project, { 'src/a.ts': 'one\n', 'gen/out.js': 'x\n' });
    const config = { capabilities: { checkpoint: { enabled: true, dir: path.join(base, 'store'), skip: ['gen/'] } } };
    for (const observer of [await openCheckpoints(config, { projectRoot: project }), await observerForConfig(config, { projectRoot: project })]) {
      if (observer === undefined || isUnavailable(observer)) throw new Error('expected a working observer');
      await observer.callBegin('c1');
      await writeTree(project, { 'src/a.ts': 'two\n', 'gen/out.js': 'y\n' });
      const { changes } = await observer.callEnd('c1');
      expect(changes.map((c) => c.path)).toEqual(['src/a.ts']);
      await observer.close();
      await writeTree(project, { 'src/a.ts': 'one\n' });
    }
  });

  it('observerForConfig keeps its contract: undefined plus one warning, none when disabled', async () => {
    const { base, project } = await sandbox();
    const warnings: string[] = [];
    const onWarning = (m: string): void => void warnings.push(m);
    const config = { capabilities: { checkpoint: { enabled: true, dir: path.join(base, 'store') } } };
    expect(await observerForConfig(config, { projectRoot: project, env: { HOME: project }, onWarning })).toBeUndefined();
    expect(warnings).toEqual(['turnback: checkpoints are off: the project is your home folder']);
    expect(await observerForConfig({}, { projectRoot: project, onWarning })).toBeUndefined();
    expect(warnings).toHaveLength(1);
  });

  it('the README example works for both kinds (and typechecks)', async () => {
    const { base, project } = await sandbox();
    const notes: string[] = [];
    const ui = { note: (text: string): void => void notes.push(text) };
    for (const configToml of ['', `[capabilities.checkpoint]\nenabled = true\ndir = "${path.join(base, 'store')}"`]) {
      await writeTree(project, { 'src/parser.ts': 'old text\n' });
      const projectRoot = project;
      const checkpoints = await openCheckpoints(configToml, { projectRoot, sessionId: 'session-42' });
      const turn = await checkpoints.beginTurn({ label: 'fix the parser' });
      await editFile({ projectRoot, observer: checkpoints }, 'src/parser.ts', 'old', 'new');
      if (isUnavailable(turn)) {
        ui.note(`no checkpoints here: ${turn.detail}`);
        expect(turn.reason).toBe('disabled');
      } else {
        const report = await checkpoints.restore(turn);
        expect(isUnavailable(report)).toBe(false);
      }
      await checkpoints.close();
    }
    expect(notes).toHaveLength(1);
    // The enabled pass (last) edited the file and restored it.
    expect(await fs.readFile(path.join(project, 'src', 'parser.ts'), 'utf8')).toBe('old text\n');
  });

  it('types: one variable serves both, and isUnavailable narrows results', async () => {
    // Through a function, so the declared union is not narrowed by the assignment.
    const pick = (): CheckpointObserver | UnavailableCheckpoints => new UnavailableCheckpoints('disabled', 'checkpoints are off');
    const checkpoints = pick();
    const value = await checkpoints.withToolCall(SCOPE, async () => 42);
    expectTypeOf(value).toEqualTypeOf<number>();
    const report = await checkpoints.restore(ID);
    if (isUnavailable(report)) expectTypeOf(report).toEqualTypeOf<Unavailable>();
    else expectTypeOf(report.restored).toBeArray();
    if (!isUnavailable(checkpoints)) expectTypeOf(checkpoints).toEqualTypeOf<CheckpointObserver>();
    expect(value).toBe(42);
  });
});

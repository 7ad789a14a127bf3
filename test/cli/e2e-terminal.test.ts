import { spawnSync } from 'node:child_process';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import * as path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { whenFolderSays } from '../helpers/watch.js';
import { CLI, env, git, proj, root, tb, useE2eProject } from './e2e-harness.js';

// The built command on a real terminal (tmux): colours, the progress line rewritten in place, the
// picker's keys. Skipped where tmux is not installed.

useE2eProject();

const hasTmux = spawnSync('tmux', ['-V']).status === 0;

describe.runIf(hasTmux)('the terminal picker (tmux)', () => {
  const session = `turnback-e2e-${process.pid}`;
  const capture = (): string => spawnSync('tmux', ['capture-pane', '-p', '-t', session], { encoding: 'utf8' }).stdout;
  /** Starts the session and copies everything its pane prints into a file of a folder of its own, so a wait has an event. */
  const open = (width: number, command: string): void => {
    spawnSync('tmux', ['new-session', '-d', '-s', session, '-x', String(width), '-y', '30', '-c', proj, command]);
    spawnSync('tmux', ['pipe-pane', '-t', session, '-o', `cat >> '${path.join(root, 'pane', 'output')}'`]);
  };
  /**
   * Resolves once the screen shows what `check` looks for, asked at once and again after each
   * thing the pane prints (tmux has drawn it by the time `cat` has written it): what came before
   * the pipe is on the screen already.
   */
  let waitingFor: string | undefined;
  const until = async (check: () => boolean, what: string): Promise<void> => {
    waitingFor = what;
    await whenFolderSays(path.join(root, 'pane'), check, what);
    waitingFor = undefined;
  };

  beforeEach(async () => {
    await mkdir(path.join(root, 'pane'));
  });
  const keys = (...k: string[]): void => void spawnSync('tmux', ['send-keys', '-t', session, ...k]);

  afterEach(async (context) => {
    // A wait that never ends is vitest's time-out, which names only the test: say which wait it
    // was, what the screen showed and what ran in the pane, before the session goes.
    if (context.task.result?.state === 'fail') {
      const panePid = spawnSync('tmux', ['list-panes', '-t', session, '-F', '#{pane_pid}'], { encoding: 'utf8' }).stdout.trim();
      const tree = spawnSync('ps', ['-o', 'pid,ppid,stat,etime,args', '--forest', '-g', panePid === '' ? '0' : panePid], { encoding: 'utf8' }).stdout;
      const printed = await readFile(path.join(root, 'pane', 'output'), 'utf8').catch((error: unknown) => `(no pane output: ${String(error)})`);
      console.error(`waiting for: ${waitingFor ?? '(nothing)'}\n--- screen ---\n${capture()}\n--- the pane's processes ---\n${tree}\n--- everything the pane printed ---\n${JSON.stringify(printed)}`);
    }
    waitingFor = undefined;
    spawnSync('tmux', ['kill-session', '-t', session]);
  });

  it('colours the turn-end list on a terminal unless NO_COLOR is set', async () => {
    const show = async (extra: NodeJS.ProcessEnv, omitNoColor: boolean): Promise<string> => {
      const vars = Object.entries({ ...env, ...extra }).filter(([k]) => !(omitNoColor && k === 'NO_COLOR'));
      const envArgs = vars.flatMap(([k, v]) => (v === undefined ? [] : [`${k}=${v}`]));
      const command = `env ${omitNoColor ? '-u NO_COLOR ' : ''}${envArgs.map((a) => `'${a}'`).join(' ')} ${process.execPath} --no-warnings ${CLI} run -- sh -c 'rm -rf docs'; echo EXIT=$?; sleep 30`;
      open(150, command);
      await until(() => capture().includes('EXIT='), 'the run to finish');
      const screen = spawnSync('tmux', ['capture-pane', '-e', '-p', '-t', session], { encoding: 'utf8' }).stdout;
      spawnSync('tmux', ['kill-session', '-t', session]);
      return screen;
    };
    const plain = await show({ NO_COLOR: '1' }, false);
    expect(plain).toContain('⚠ deleted  docs/ (4 files)   not in git');
    expect(plain).not.toContain('\u001b[');
    git('checkout', '--', 'docs');
    await writeFile(path.join(proj, 'docs', 'notes', 'draft.md'), 'not committed\n');
    const coloured = await show({ TERM: 'xterm-256color' }, true);
    expect(coloured).toContain('docs/ (4 files)');
    expect(coloured).toContain('\u001b[');
  });

  it('rewrites the progress line in place on a terminal', async () => {
    const envArgs = Object.entries({ ...env, TURNBACK_PROGRESS_AFTER_MS: '0' }).flatMap(([k, v]) => (v === undefined ? [] : [`${k}=${v}`]));
    const command = `env ${envArgs.map((a) => `'${a}'`).join(' ')} ${process.execPath} --no-warnings ${CLI} run -- sh -c 'echo hi > a.txt'; echo EXIT=$?; sleep 30`;
    open(150, command);
    await until(() => capture().includes('EXIT='), 'the run to finish');
    const screen = capture();
    expect(screen).toContain('EXIT=0');
    expect(screen.match(/^turnback: picture taken in \d+\.\d s$/gm)).toHaveLength(2);
    // The "taking a picture" line was erased and replaced, not left behind.
    expect(screen).not.toContain('taking a picture');
    expect(screen).toContain('files: 1 new');
  });

  it('moves with arrows, previews on Enter, restores on Enter; Esc cancels', async () => {
    tb(['run', '--label', 'first', '--', 'sh', '-c', 'echo one > a.txt']);
    tb(['run', '--label', 'second', '--', 'sh', '-c', 'echo two > a.txt']);
    tb(['run', '--label', 'third', '--', 'sh', '-c', 'echo three > a.txt']);
    const envArgs = Object.entries(env).flatMap(([k, v]) => (v === undefined ? [] : [`${k}=${v}`]));
    const command = `env ${envArgs.map((a) => `'${a}'`).join(' ')} ${process.execPath} --no-warnings ${CLI} undo; echo EXIT=$?; sleep 30`;
    open(120, command);
    await until(() => capture().includes('undo to which picture?'), 'the picker');
    // The picker shows each picture's short id before its label.
    expect(capture()).toMatch(/› [0-9a-f]{8} {2}third/);
    keys('Down');
    await until(() => /› [0-9a-f]{8} {2}second/.test(capture()), 'the highlight to move');
    keys('Enter');
    await until(() => capture().includes('Enter restores'), 'the preview');
    expect(capture()).toContain('undo to second: 1 to write back');
    keys('Escape');
    await until(() => capture().includes('EXIT=3'), 'the cancel');
    expect(capture()).toContain('undo cancelled');
    spawnSync('tmux', ['kill-session', '-t', session]);

    open(120, command);
    await until(() => capture().includes('undo to which picture?'), 'the picker');
    keys('Enter');
    await until(() => capture().includes('Enter restores'), 'the preview');
    keys('Enter');
    await until(() => capture().includes('EXIT=0'), 'the restore');
    expect(capture()).toContain('restored 1 file to third');
    expect(await readFile(path.join(proj, 'a.txt'), 'utf8')).toBe('two\n');
  });
});

import { execFileSync, spawn, spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, readFile, realpath, rm, writeFile } from 'node:fs/promises';
import * as os from 'node:os';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';

const CLI = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..', 'dist', 'cli', 'main.js');

let root: string;
let home: string;
let proj: string;
let env: NodeJS.ProcessEnv;

interface Result {
  code: number | null;
  stdout: string;
  stderr: string;
}

function tb(args: string[], options: { input?: string; cwd?: string } = {}): Result {
  const result = spawnSync(process.execPath, ['--no-warnings', CLI, ...args], { cwd: options.cwd ?? proj, env, input: options.input ?? '', encoding: 'utf8' });
  return { code: result.status, stdout: result.stdout, stderr: result.stderr };
}

function json<T = Record<string, unknown>>(result: Result): T {
  return JSON.parse(result.stdout) as T;
}

function git(...args: string[]): void {
  execFileSync('git', ['-c', 'user.email=t@example.com', '-c', 'user.name=t', ...args], { cwd: proj, env, stdio: 'ignore' });
}

async function until(check: () => boolean | Promise<boolean>, what: string): Promise<void> {
  for (let i = 0; i < 400; i++) {
    if (await check()) return;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`gave up waiting for ${what}`);
}

beforeEach(async () => {
  root = await realpath(await mkdtemp(path.join(os.tmpdir(), 'turnback-e2e-')));
  home = path.join(root, 'home');
  proj = path.join(root, 'proj');
  await mkdir(home);
  await mkdir(path.join(proj, 'src'), { recursive: true });
  await mkdir(path.join(proj, 'docs', 'notes'), { recursive: true });
  env = { PATH: process.env.PATH, HOME: home, XDG_DATA_HOME: path.join(home, 'data'), XDG_CONFIG_HOME: path.join(home, 'config'), NO_COLOR: '1', LANG: 'C' };
  await writeFile(path.join(proj, 'src', 'parser.rs'), 'fn parse() {\n    one();\n    two();\n}\n');
  await writeFile(path.join(proj, 'Cargo.toml'), '[package]\nname = "p"\n');
  for (let i = 0; i < 3; i++) await writeFile(path.join(proj, 'docs', 'notes', `n${i}.md`), `note ${i}\n`);
  execFileSync('git', ['init', '-q'], { cwd: proj, env });
  git('add', '-A');
  git('commit', '-qm', 'init');
  await writeFile(path.join(proj, 'docs', 'notes', 'draft.md'), 'not committed\n');
});

afterEach(async () => {
  await rm(root, { recursive: true, force: true });
});

const EDIT = ['sh', '-c', "printf 'fn parse() {\\n    one();\\n    TWO();\\n}\\n' > src/parser.rs; rm -rf docs; echo new > tidy.sh"];

describe('turnback run, list, show, diff, status', () => {
  it('prints the turn-end list, keeps CMD stdout clean, and exits with its code', async () => {
    const run = tb(['run', '--', ...EDIT]);
    expect(run.code).toBe(0);
    expect(run.stdout).toBe('');
    expect(run.stderr).toContain('files: 1 changed, 1 new, 4 deleted');
    expect(run.stderr).toContain('  changed  src/parser.rs');
    expect(run.stderr).toContain('  new      tidy.sh');
    expect(run.stderr).toContain('⚠ deleted  docs/ (4 files)   not in git (1 of 4)   turnback undo');

    expect(tb(['run', '--', 'sh', '-c', 'echo out; exit 7']).code).toBe(7);
    const killed = tb(['run', '--', 'sh', '-c', 'echo x > k.txt; kill -TERM $$']);
    expect(killed.code).toBe(128 + 15);
    expect(killed.stderr).toContain('files: 1 new');
    const missing = tb(['run', '--', 'no-such-command-xyz']);
    expect(missing.code).toBe(127);
    expect(missing.stderr).toContain('command not found');

    const list = tb(['list']);
    expect(list.code).toBe(0);
    const lines = list.stdout.trim().split('\n');
    expect(lines).toHaveLength(4);
    expect(lines[3]).toMatch(/^[0-9a-f]{8} {2}before sh -c .* · \d\d:\d\d {3}6 files changed$/);

    const listed = json<{ checkpoints: { id: string; shortId: string; kind: string; label: string; files: number }[] }>(tb(['list', '--json']));
    expect(listed.checkpoints).toHaveLength(4);
    const first = listed.checkpoints[3] as { id: string; shortId: string; kind: string; files: number };
    expect(first).toMatchObject({ kind: 'turn', files: 6 });

    const show = tb(['show', first.shortId]);
    expect(show.code).toBe(0);
    expect(show.stdout).toContain('files: 1 changed, 1 new, 4 deleted');
    const shown = json<{ changes: { path: string; kind: string }[] }>(tb(['show', first.id, '--json']));
    expect(shown.changes).toContainEqual({ path: 'tidy.sh', kind: 'created' });

    const diff = tb(['diff', first.id, 'src/parser.rs']);
    expect(diff.code).toBe(0);
    expect(diff.stdout).toContain('--- a/src/parser.rs');
    expect(diff.stdout).toContain('-    two();');
    expect(diff.stdout).toContain('+    TWO();');
    const all = tb(['diff', first.id]);
    expect(all.stdout).toContain('+++ /dev/null');

    const status = tb(['status']);
    expect(status.stdout).toContain('checkpoints: on');
    expect(status.stdout).toContain(`project: ${proj}`);
    expect(status.stdout).toMatch(/last picture: before no-such-command-xyz · \d\d:\d\d \(0 files changed\)/);
    const statusJson = json<{ enabled: boolean; store: { exists: boolean; bytes: number } }>(tb(['status', '--json']));
    expect(statusJson.enabled).toBe(true);
    expect(statusJson.store.exists).toBe(true);
    expect(statusJson.store.bytes).toBeGreaterThan(0);
  });

  it('prints JSON for scripts after the command output', () => {
    const run = tb(['run', '--json', '--label', 'tidy', '--', 'sh', '-c', 'echo hi > a.txt']);
    expect(run.code).toBe(0);
    const doc = json<{ checkpoint: string; label: string; exitCode: number; changes: unknown[]; list: { counts: Record<string, number> } }>(run);
    expect(doc.label).toBe('tidy');
    expect(doc.exitCode).toBe(0);
    expect(doc.changes).toEqual([{ path: 'a.txt', kind: 'created' }]);
    expect(doc.list.counts).toEqual({ changed: 0, created: 1, deleted: 0 });
  });

  it('documents exit codes in --help and exits 2 on bad usage', () => {
    const help = tb(['undo', '--help']);
    expect(help.code).toBe(0);
    expect(help.stdout).toContain('Exit codes:');
    expect(help.stdout).toContain('4  the checkpoint store is busy');
    expect(tb(['list', '--bogus']).code).toBe(2);
    expect(tb(['run']).code).toBe(2);
  });
});

describe('turnback undo and redo', () => {
  it('walks the pipe dialogue: garbage and "n" cancel, "y" restores, redo returns', async () => {
    tb(['run', '--', ...EDIT]);
    const garbage = tb(['undo'], { input: 'garbage\n' });
    expect(garbage.code).toBe(3);
    expect(garbage.stdout).toContain('  1  before sh -c');
    expect(garbage.stdout).toContain('undo cancelled');

    const no = tb(['undo'], { input: '1\nn\n' });
    expect(no.code).toBe(3);
    expect(no.stdout).toContain('1 to write back, 4 to recreate, 1 kept');
    expect(no.stdout).toContain('restore? type y to confirm');
    expect(no.stdout).toContain('undo cancelled');
    expect(existsSync(path.join(proj, 'docs'))).toBe(false);

    const yes = tb(['undo'], { input: '1\nYes\n' });
    expect(yes.code).toBe(0);
    expect(yes.stdout).toContain('restored 5 files to before sh -c');
    expect(yes.stdout).toContain('  kept        tidy.sh');
    expect(yes.stdout).toContain('  saved first: turnback undo can undo this');
    expect(await readFile(path.join(proj, 'docs', 'notes', 'draft.md'), 'utf8')).toBe('not committed\n');
    expect(await readFile(path.join(proj, 'src', 'parser.rs'), 'utf8')).toContain('two();');
    expect(existsSync(path.join(proj, 'tidy.sh'))).toBe(true);

    const list = tb(['list']);
    expect(list.stdout.split('\n')[0]).toContain('before undo');

    const redo = tb(['redo', '--yes']);
    expect(redo.code).toBe(0);
    expect(existsSync(path.join(proj, 'docs', 'notes', 'draft.md'))).toBe(false);
    expect(await readFile(path.join(proj, 'src', 'parser.rs'), 'utf8')).toContain('TWO();');
    const again = tb(['redo', '--yes']);
    expect(again.code).toBe(3);
    expect(again.stderr).toContain('nothing to redo');
  });

  it('undo --path restores one file; --dry-run and --delete-created', async () => {
    tb(['run', '--', ...EDIT]);
    const dry = tb(['undo', '--dry-run', '--delete-created']);
    expect(dry.code).toBe(0);
    expect(dry.stdout).toContain('1 to delete');
    expect(existsSync(path.join(proj, 'tidy.sh'))).toBe(true);

    const one = tb(['undo', '--path', 'src/parser.rs', '--yes']);
    expect(one.code).toBe(0);
    expect(one.stdout).toContain('restored 1 file to');
    expect(await readFile(path.join(proj, 'src', 'parser.rs'), 'utf8')).toContain('two();');
    expect(existsSync(path.join(proj, 'docs'))).toBe(false);

    const turn = json<{ checkpoints: { id: string; kind: string }[] }>(tb(['list', '--json'])).checkpoints.find((c) => c.kind === 'turn');
    const all = tb(['undo', turn?.id ?? '', '--yes', '--delete-created', '--json']);
    expect(all.code, all.stderr).toBe(0);
    expect(json<{ restored: boolean }>(all).restored).toBe(true);
    expect(existsSync(path.join(proj, 'tidy.sh'))).toBe(false);
    expect(existsSync(path.join(proj, 'docs', 'notes', 'n1.md'))).toBe(true);
  });

  it('skips a file changed since the picture instead of overwriting it', async () => {
    tb(['run', '--', ...EDIT]);
    await writeFile(path.join(proj, 'src', 'parser.rs'), 'my own edit\n');
    const undo = tb(['undo', '--yes']);
    expect(undo.code).toBe(0);
    expect(undo.stdout).toMatch(/skipped +src\/parser\.rs +changed since/);
    expect(await readFile(path.join(proj, 'src', 'parser.rs'), 'utf8')).toBe('my own edit\n');
  });

  it('gives clear messages: nothing to undo, outside path, cleared id', async () => {
    const none = tb(['undo']);
    expect(none.code).toBe(3);
    expect(none.stderr).toContain('no checkpoints in this project');
    tb(['run', '--', 'sh', '-c', 'echo a > a.txt']);
    const outside = tb(['undo', '--path', '../elsewhere.txt', '--yes']);
    expect(outside.code).toBe(2);
    expect(outside.stderr).toContain('undo takes a path inside the project');
    const cleared = tb(['undo', '1700000000000-0000-abcdef01', '--yes']);
    expect(cleared.code).toBe(1);
    expect(cleared.stderr).toContain('the checkpoint 1700000000000-0000-abcdef01 was cleared (older than keep_days, or the store was full)');
    const bad = tb(['show', 'nonsense', '--json']);
    expect(bad.code).toBe(2);
    expect(json<{ error: { reason: string } }>(bad).error.reason).toBe('INVALID_ID');
  });
});

describe('config, prune, verify', () => {
  it('off and on write turnback.toml; off runs take no picture', async () => {
    const off = tb(['off']);
    expect(off.code).toBe(0);
    expect(await readFile(path.join(proj, 'turnback.toml'), 'utf8')).toBe('[checkpoints]\nenabled = false\n');
    const run = tb(['run', '--', 'sh', '-c', 'echo a > a.txt']);
    expect(run.code).toBe(0);
    expect(run.stderr).toContain('no checkpoint: checkpoints are off (enabled = false in');
    expect(tb(['status']).stdout).toContain('checkpoints: off (enabled = false in');
    expect(tb(['on']).code).toBe(0);
    expect(tb(['status']).stdout).toContain('checkpoints: on');
  });

  it('refuses a project at the home folder at every command', () => {
    const run = tb(['run', '--project', home, '--', 'true']);
    expect(run.code).toBe(0);
    expect(run.stderr).toContain('checkpoints are off: the project is your home folder');
    expect(tb(['status', '--project', home]).stdout).toContain('checkpoints: off (the project is your home folder)');
    expect(tb(['list', '--project', home]).stderr).toContain('the project is your home folder');
    expect(tb(['on', '--project', home]).code).toBe(1);
  });

  it('prune and verify report in text and JSON', () => {
    for (let i = 0; i < 3; i++) tb(['run', '--', 'sh', '-c', `echo ${i} > f${i}.txt`]);
    const verify = tb(['verify']);
    expect(verify.code).toBe(0);
    expect(verify.stdout).toMatch(/^store ok: \d+ checkpoints/);
    expect(json<{ ok: boolean }>(tb(['verify', '--json'])).ok).toBe(true);
    const prune = json<{ removedCheckpoints: string[] }>(tb(['prune', '--json']));
    expect(prune.removedCheckpoints).toEqual([]);
    const pruneText = tb(['prune']);
    expect(pruneText.code).toBe(0);
    expect(pruneText.stdout).toContain('cleared 0 checkpoints');
  });
});

describe('signals, crashes and concurrency', () => {
  it('forwards SIGINT to the command and still prints the list', async () => {
    const child = spawn(process.execPath, ['--no-warnings', CLI, 'run', '--', 'sh', '-c', 'echo s > started; exec sleep 30'], { cwd: proj, env, stdio: ['ignore', 'pipe', 'pipe'] });
    let stderr = '';
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    await until(() => existsSync(path.join(proj, 'started')), 'the command to start');
    child.kill('SIGINT');
    const code = await new Promise<number | null>((resolve) => child.once('exit', (c) => resolve(c)));
    expect(code).toBe(130);
    expect(stderr).toContain('files: 1 new');
    expect(stderr).toContain('  new      started');
  });

  it('status names a run whose turnback was killed, and the next run records it for undo', async () => {
    const child = spawn(process.execPath, ['--no-warnings', CLI, 'run', '--', 'sh', '-c', 'printf x >> Cargo.toml && printf ok > started && sleep 30'], {
      cwd: proj,
      env,
      stdio: 'ignore',
      detached: true,
    });
    await until(() => existsSync(path.join(proj, 'started')), 'the command to start');
    process.kill(child.pid as number, 'SIGKILL');
    await new Promise((resolve) => child.once('exit', resolve));
    try {
      process.kill(-(child.pid as number), 'SIGKILL');
    } catch {
      // The group may already be gone.
    }
    const status = tb(['status']);
    expect(status.stdout).toContain('turnback was killed while a command ran: `sh -c');
    expect(status.stdout).toMatch(/changed +Cargo\.toml +turnback undo restores/);
    expect(status.stdout).toMatch(/new +started/);
    expect(status.stdout).toContain('Not covered: gitignored files, anything outside the project.');
    expect(json<{ interrupted: unknown[] }>(tb(['status', '--json'])).interrupted).toHaveLength(1);

    const next = tb(['run', '--', 'true']);
    expect(next.stderr).toContain('turnback was killed while a command ran');
    expect(tb(['status']).stdout).not.toContain('was killed');
    const undo = tb(['undo', '--path', 'Cargo.toml', '--yes']);
    expect(undo.code).toBe(0);
    expect(await readFile(path.join(proj, 'Cargo.toml'), 'utf8')).toBe('[package]\nname = "p"\n');
  });

  it('two concurrent runs on one store both finish and both are listed', async () => {
    const start = (name: string): Promise<number | null> =>
      new Promise((resolve) => {
        const child = spawn(process.execPath, ['--no-warnings', CLI, 'run', '--', 'sh', '-c', `echo ${name} > ${name}.txt; sleep 1`], { cwd: proj, env, stdio: 'ignore' });
        child.once('exit', (code) => resolve(code));
      });
    const codes = await Promise.all([start('one'), start('two')]);
    expect(codes).toEqual([0, 0]);
    const listed = json<{ checkpoints: { kind: string }[] }>(tb(['list', '--json']));
    expect(listed.checkpoints.filter((c) => c.kind === 'turn')).toHaveLength(2);
    expect(tb(['verify']).code).toBe(0);
  });
});

const hasTmux = spawnSync('tmux', ['-V']).status === 0;

describe.runIf(hasTmux)('the terminal picker (tmux)', () => {
  const session = `turnback-e2e-${process.pid}`;
  const capture = (): string => spawnSync('tmux', ['capture-pane', '-p', '-t', session], { encoding: 'utf8' }).stdout;
  const keys = (...k: string[]): void => void spawnSync('tmux', ['send-keys', '-t', session, ...k]);

  afterEach(() => {
    spawnSync('tmux', ['kill-session', '-t', session]);
  });

  it('moves with arrows, previews on Enter, restores on Enter; Esc cancels', async () => {
    tb(['run', '--label', 'first', '--', 'sh', '-c', 'echo one > a.txt']);
    tb(['run', '--label', 'second', '--', 'sh', '-c', 'echo two > a.txt']);
    tb(['run', '--label', 'third', '--', 'sh', '-c', 'echo three > a.txt']);
    const envArgs = Object.entries(env).flatMap(([k, v]) => (v === undefined ? [] : [`${k}=${v}`]));
    const command = `env ${envArgs.map((a) => `'${a}'`).join(' ')} ${process.execPath} --no-warnings ${CLI} undo; echo EXIT=$?; sleep 30`;
    spawnSync('tmux', ['new-session', '-d', '-s', session, '-x', '120', '-y', '30', '-c', proj, command]);
    await until(() => capture().includes('undo to which picture?'), 'the picker');
    expect(capture()).toContain('› third');
    keys('Down');
    await until(() => capture().includes('› second'), 'the highlight to move');
    keys('Enter');
    await until(() => capture().includes('Enter restores'), 'the preview');
    expect(capture()).toContain('undo to second: 1 to write back');
    keys('Escape');
    await until(() => capture().includes('EXIT=3'), 'the cancel');
    expect(capture()).toContain('undo cancelled');
    spawnSync('tmux', ['kill-session', '-t', session]);

    spawnSync('tmux', ['new-session', '-d', '-s', session, '-x', '120', '-y', '30', '-c', proj, command]);
    await until(() => capture().includes('undo to which picture?'), 'the picker');
    keys('Enter');
    await until(() => capture().includes('Enter restores'), 'the preview');
    keys('Enter');
    await until(() => capture().includes('EXIT=0'), 'the restore');
    expect(capture()).toContain('restored 1 file to third');
    expect(await readFile(path.join(proj, 'a.txt'), 'utf8')).toBe('two\n');
  });
});

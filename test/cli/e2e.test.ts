import { execFileSync, spawn, spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, readFile, realpath, stat, writeFile } from 'node:fs/promises';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { tempFolder } from '../helpers/temp.js';
import { whenFolderSays } from '../helpers/watch.js';
import { CheckpointStore } from '../../src/store/store.js';

// TURNBACK_CLI runs these tests against another bundle of src/cli/main.ts (a private build) without touching dist/.
const CLI = process.env.TURNBACK_CLI !== undefined && process.env.TURNBACK_CLI !== '' ? path.resolve(process.env.TURNBACK_CLI) : path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..', 'dist', 'cli', 'main.cjs');

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

/** `turnback run --report FILE ARGS…`: the command's result, and the JSON report read from FILE. */
async function runReport<T = Record<string, unknown>>(args: string[]): Promise<{ result: Result; report: T }> {
  const file = path.join(root, `report-${Math.random().toString(16).slice(2)}.json`);
  const result = tb(['run', '--report', file, ...args]);
  return { result, report: JSON.parse(await readFile(file, 'utf8')) as T };
}

function git(...args: string[]): void {
  execFileSync('git', ['-c', 'user.email=t@example.com', '-c', 'user.name=t', ...args], { cwd: proj, env, stdio: 'ignore' });
}

/** Resolves once `text` has come on `stream` (a run's command says it has started). */
function lineOn(stream: NodeJS.ReadableStream | null, text: string): Promise<void> {
  return new Promise((resolve) => {
    let seen = '';
    stream?.on('data', (chunk: Buffer) => {
      seen += chunk.toString();
      if (seen.includes(text)) resolve();
    });
  });
}

beforeEach(async () => {
  root = await tempFolder('turnback-e2e-');
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

    const list = tb(['list', '--all']);
    expect(list.code).toBe(0);
    const lines = list.stdout.trim().split('\n');
    expect(lines).toHaveLength(4);
    expect(lines[3]).toMatch(/^[0-9a-f]{8} {2}before sh -c .* · \d\d:\d\d {3}6 files changed {3}exit 0 · \d+\.\d s$/);
    // Without --all, the two runs that changed nothing are left out, and the list says so.
    const quiet = tb(['list']).stdout.trim().split('\n');
    expect(quiet).toHaveLength(3);
    expect(quiet[2]).toBe('2 pictures in which nothing changed not shown (--all shows them)');

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

  it('writes the JSON report to --report FILE, leaving stdout to the command; run --json is refused', async () => {
    const { result: run, report: doc } = await runReport<{ checkpoint: string; label: string; exitCode: number; changes: unknown[]; list: { counts: Record<string, number> } }>(['--label', 'tidy', '--', 'sh', '-c', 'echo hi > a.txt; echo the command says hi']);
    expect(run.code).toBe(0);
    expect(run.stdout).toBe('the command says hi\n');
    const mixed = tb(['run', '--json', '--', 'sh', '-c', 'echo never runs > never.txt']);
    expect(mixed.code).toBe(2);
    expect(mixed.stderr).toContain('--report FILE');
    expect(existsSync(path.join(proj, 'never.txt'))).toBe(false);
    expect(doc.label).toBe('tidy');
    expect(doc.exitCode).toBe(0);
    expect(doc.changes).toEqual([{ path: 'a.txt', kind: 'created' }]);
    expect(doc.list.counts).toEqual({ changed: 0, created: 1, deleted: 0 });
  });

  it('--json shapes of diff, undo --dry-run, redo, on and off', async () => {
    const { report: run } = await runReport<{ checkpoint: string }>(['--', ...EDIT]);
    const diff = json<{ checkpoint: { id: string }; diffs: { path: string; diff: string }[] }>(tb(['diff', run.checkpoint, '--json']));
    expect(diff.checkpoint.id).toBe(run.checkpoint);
    expect(diff.diffs.map((d) => d.path)).toContain('src/parser.rs');
    expect(diff.diffs.find((d) => d.path === 'src/parser.rs')?.diff).toContain('+    TWO();');
    const dry = json<{ dryRun: boolean; previews: { checkpoint: string; entries: { path: string; action: string }[] }[] }>(tb(['undo', '--dry-run', '--json']));
    expect(dry.dryRun).toBe(true);
    expect(dry.previews[0]?.entries).toContainEqual(expect.objectContaining({ path: 'src/parser.rs', action: 'restore' }));
    expect(json<{ restored: boolean }>(tb(['undo', '--yes', '--json'])).restored).toBe(true);
    const redo = tb(['redo', '--yes', '--json']);
    expect(redo.code).toBe(0);
    expect(json<{ restored: boolean; restores: unknown[] }>(redo)).toMatchObject({ restored: true, restores: [expect.anything()] });
    const nothing = tb(['redo', '--yes', '--json']);
    expect(nothing.code).toBe(3);
    expect(json<{ error: { reason: string } }>(nothing).error.reason).toBe('NOTHING');
    // The switch lives in the user's config, keyed by project: nothing is left in the repository.
    const userConfig = path.join(home, 'config', 'turnback', 'config.toml');
    expect(json(tb(['off', '--json']))).toEqual({ enabled: false, file: userConfig });
    expect(json(tb(['on', '--json']))).toEqual({ enabled: true, file: userConfig });
    expect(existsSync(path.join(proj, 'turnback.toml'))).toBe(false);
  });

  it('colours only on a terminal, and never with NO_COLOR', async () => {
    const { NO_COLOR: _, ...coloured } = env;
    void _;
    const piped = spawnSync(process.execPath, ['--no-warnings', CLI, 'run', '--', ...EDIT], { cwd: proj, env: coloured, encoding: 'utf8' });
    expect(piped.stderr).toContain('⚠ deleted  docs/');
    expect(piped.stderr).not.toContain('\u001b[');
  });

  it('diff gives one line for binary files and files it has no copy of', async () => {
    await writeFile(path.join(proj, 'logo.bin'), Buffer.from([0, 1, 2, 3, 0, 255]));
    await writeFile(path.join(proj, '.env'), 'SECRET=1\n');
    const { report: run } = await runReport<{ checkpoint: string }>(['--', 'sh', '-c', "printf 'a\\000b' > logo.bin; echo SECRET=22 > .env"]);
    const diff = tb(['diff', run.checkpoint]);
    expect(diff.code).toBe(0);
    expect(diff.stdout).toMatch(/^logo\.bin: binary, 6 B → binary, 3 B$/m);
    expect(diff.stdout).toMatch(/^\.env: 9 B, no copy \(credential file\) → text, 10 B$/m);
  });

  it('puts the store where --store, TURNBACK_DIR or the config say, owner-only', async () => {
    const flag = path.join(root, 'flag-store');
    expect(tb(['run', '--store', flag, '--', 'sh', '-c', 'echo a > a.txt']).code).toBe(0);
    expect((await stat(flag)).mode & 0o777).toBe(0o700);
    expect((await stat(path.join(flag, 'STORE.json'))).mode & 0o777).toBe(0o600);
    expect(json<{ checkpoints: unknown[] }>(tb(['list', '--store', flag, '--json'])).checkpoints).toHaveLength(1);

    env.TURNBACK_DIR = path.join(root, 'env-store');
    tb(['run', '--', 'sh', '-c', 'echo b > b.txt']);
    expect(json<{ store: { dir: string; from: string } }>(tb(['status', '--json'])).store).toMatchObject({ dir: env.TURNBACK_DIR, from: 'TURNBACK_DIR' });
    expect((await stat(env.TURNBACK_DIR)).mode & 0o777).toBe(0o700);
    expect(json<{ store: { dir: string; from: string } }>(tb(['status', '--store', flag, '--json'])).store).toMatchObject({ dir: flag, from: '--store' });
    delete env.TURNBACK_DIR;

    const configured = path.join(root, 'config-store');
    await writeFile(path.join(proj, 'turnback.toml'), `[checkpoints]\ndir = "${configured}"\n`);
    tb(['run', '--', 'sh', '-c', 'echo c > c.txt']);
    expect(json<{ store: { dir: string; from: string } }>(tb(['status', '--json'])).store).toMatchObject({ dir: configured, from: 'config' });
    expect((await stat(configured)).mode & 0o777).toBe(0o700);
    expect(existsSync(path.join(home, 'data', 'turnback'))).toBe(false);
  });

  it('documents exit codes in --help and exits 2 on bad usage', () => {
    const help = tb(['undo', '--help']);
    expect(help.code).toBe(0);
    expect(help.stdout).toContain('Exit codes:');
    expect(help.stdout).toContain('4  the checkpoint store is busy');
    expect(tb(['list', '--bogus']).code).toBe(2);
    expect(tb(['run']).code).toBe(2);
  });

  it('stops quietly when its output pipe closes early (turnback … | head)', async () => {
    for (let i = 0; i < 3; i++) tb(['run', '--', 'sh', '-c', `echo ${i} > f${i}.txt`]);
    const errFile = path.join(root, 'err.txt');
    for (const args of ['--help', 'list', 'list --json']) {
      const line = `"${process.execPath}" --no-warnings "${CLI}" ${args} 2>"${errFile}" | true`;
      spawnSync('sh', ['-c', line], { cwd: proj, env, encoding: 'utf8' });
      expect(await readFile(errFile, 'utf8'), line).not.toContain('EPIPE');
    }
    const help = tb(['help', 'run']);
    expect(help.code).toBe(0);
    expect(help.stdout).toContain('Usage: turnback run [--label L] [--report FILE] [--unprotected] -- CMD ARGS…');
    expect(tb(['--help']).stdout).toContain('TURNBACK_PROGRESS_AFTER_MS');
  });
});

describe('turnback undo and redo', () => {
  it('marks pictures a full undo went back past as undone, does not offer them, and redo brings them back', async () => {
    tb(['run', '--label', 'first', '--', 'sh', '-c', 'echo first >> Cargo.toml']);
    tb(['run', '--label', 'second', '--', 'sh', '-c', 'echo second >> src/parser.rs']);
    const listed = json<{ checkpoints: { id: string; label?: string }[] }>(tb(['list', '--json'])).checkpoints;
    const first = listed.find((p) => p.label?.includes('first') === true);
    expect(first).toBeDefined();
    const undo = tb(['undo', (first as { id: string }).id, '--yes']);
    expect(undo.code).toBe(0);
    expect(await readFile(path.join(proj, 'Cargo.toml'), 'utf8')).toBe('[package]\nname = "p"\n');
    expect(await readFile(path.join(proj, 'src', 'parser.rs'), 'utf8')).not.toContain('second');

    const list = tb(['list']);
    const secondRow = list.stdout.split('\n').find((line) => line.includes('second'));
    expect(secondRow).toContain('undone: `turnback redo` brings it back');
    const picker = tb(['undo'], { input: 'garbage\n' });
    expect(picker.stdout).not.toContain('second');
    expect(picker.stdout).toContain('before undo');

    expect(tb(['redo', '--yes']).code).toBe(0);
    expect(await readFile(path.join(proj, 'src', 'parser.rs'), 'utf8')).toContain('second');
    expect(await readFile(path.join(proj, 'Cargo.toml'), 'utf8')).toContain('first');
    expect(tb(['list']).stdout).not.toContain('undone');
  });

  it('walks the pipe dialogue: garbage and "n" cancel, "y" restores, redo returns', async () => {
    tb(['run', '--', ...EDIT]);
    const garbage = tb(['undo'], { input: 'garbage\n' });
    expect(garbage.code).toBe(3);
    // Each line starts with the picture's short id.
    expect(garbage.stdout).toMatch(/ {2}1 {2}[0-9a-f]{8} {2}before sh -c/);
    expect(garbage.stdout).toContain('undo cancelled');

    const no = tb(['undo'], { input: '1\nn\n' });
    expect(no.code).toBe(3);
    // Issue #26 point 7: the file the turn itself created goes with its undo (saved first).
    expect(no.stdout).toContain('1 to write back, 4 to recreate, 1 to delete');
    expect(no.stdout).toContain('restore? type y to confirm');
    expect(no.stdout).toContain('undo cancelled');
    expect(existsSync(path.join(proj, 'docs'))).toBe(false);

    const yes = tb(['undo'], { input: '1\nYes\n' });
    expect(yes.code).toBe(0);
    expect(yes.stdout).toContain('restored 6 files to before sh -c');
    expect(yes.stdout).toContain('  deleted     tidy.sh');
    expect(yes.stdout).toContain('  saved first: turnback undo can undo this');
    expect(await readFile(path.join(proj, 'docs', 'notes', 'draft.md'), 'utf8')).toBe('not committed\n');
    expect(await readFile(path.join(proj, 'src', 'parser.rs'), 'utf8')).toContain('two();');
    expect(existsSync(path.join(proj, 'tidy.sh'))).toBe(false);

    const list = tb(['list']);
    // The undo's save goes under the row it undid (issue #26 point 8), not in a row of its own.
    expect(list.stdout.split('\n')[0]).toContain('before sh -c');
    expect(list.stdout.split('\n')[1]).toMatch(/^  ↳ [0-9a-f]{8}  before undo/);

    const redo = tb(['redo', '--yes']);
    expect(redo.code).toBe(0);
    expect(existsSync(path.join(proj, 'docs', 'notes', 'draft.md'))).toBe(false);
    expect(await readFile(path.join(proj, 'src', 'parser.rs'), 'utf8')).toContain('TWO();');
    expect(existsSync(path.join(proj, 'tidy.sh'))).toBe(true);
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
    // Issue #27: an undo that left a file behind says so last, and in its exit code.
    expect(undo.code).toBe(6);
    expect(undo.stdout).toMatch(/skipped +src\/parser\.rs +changed since/);
    expect(undo.stdout.trimEnd().split('\n').at(-1)).toBe('not brought back: 1 file (1 changed since (your version is kept))');
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
    expect(cleared.code).toBe(2);
    expect(cleared.stderr).toContain('no picture 1700000000000-0000-abcdef01 in this project');
    const bad = tb(['show', 'nonsense', '--json']);
    expect(bad.code).toBe(2);
    expect(json<{ error: { reason: string } }>(bad).error.reason).toBe('INVALID_ID');
  });
});

describe('config, prune, verify', () => {
  it('off and on keep the switch in the user config for this project (turnback.toml with --project-file); off runs take no picture', async () => {
    const off = tb(['off']);
    expect(off.code).toBe(0);
    expect(existsSync(path.join(proj, 'turnback.toml'))).toBe(false);
    expect(execFileSync('git', ['status', '--porcelain'], { cwd: proj, env, encoding: 'utf8' })).not.toContain('turnback.toml');
    const userConfig = path.join(home, 'config', 'turnback', 'config.toml');
    expect(await readFile(userConfig, 'utf8')).toBe(`[projects.${JSON.stringify(await realpath(proj))}]\nenabled = false\n`);
    const run = tb(['run', '--', 'sh', '-c', 'echo a > a.txt']);
    expect(run.code).toBe(0);
    expect(run.stderr).toContain('no checkpoint: checkpoints are off (enabled = false in');
    expect(tb(['status']).stdout).toContain('checkpoints: off (enabled = false in');
    // Another project of the same user is not switched off.
    const other = path.join(root, 'other');
    await mkdir(other);
    execFileSync('git', ['init', '-q'], { cwd: other, env });
    expect(tb(['status'], { cwd: other }).stdout).toContain('checkpoints: on');
    expect(tb(['on']).code).toBe(0);
    expect(tb(['status']).stdout).toContain('checkpoints: on');
    // Asked for, the project file holds it; once it does, on and off edit it there.
    expect(tb(['off', '--project-file']).code).toBe(0);
    expect(await readFile(path.join(proj, 'turnback.toml'), 'utf8')).toBe('[checkpoints]\nenabled = false\n');
    expect(tb(['on']).code).toBe(0);
    expect(await readFile(path.join(proj, 'turnback.toml'), 'utf8')).toBe('[checkpoints]\nenabled = true\n');
  });

  it('refuses a project at the home folder at every command', () => {
    const run = tb(['run', '--project', home, '--', 'true']);
    expect(run.code).toBe(0);
    expect(run.stderr).toContain('checkpoints are off: the project is your home folder');
    expect(tb(['status', '--project', home]).stdout).toContain('checkpoints: off (the project is your home folder)');
    expect(tb(['list', '--project', home]).stderr).toContain('the project is your home folder');
    expect(tb(['on', '--project', home]).code).toBe(1);
  });

  it('says why at every command for the home folder and /, and writes nothing there', () => {
    const rootHadToml = existsSync('/turnback.toml');
    for (const [project, why] of [
      [home, 'the project is your home folder'],
      ['/', 'the project is the root folder (/)'],
    ] as const) {
      const commands = [['run', '--', 'true'], ['list'], ['status'], ['show', 'abcdef01'], ['diff', 'abcdef01'], ['undo', '--yes'], ['redo', '--yes'], ['prune'], ['verify'], ['on'], ['off']];
      for (const command of commands) {
        const [name, ...rest] = command as [string, ...string[]];
        const result = tb([name, '--project', project, ...rest]);
        expect(`${result.stdout}${result.stderr}`, `turnback ${name} --project ${project}`).toContain(why);
      }
      expect(tb(['off', '--project', project]).code).toBe(0);
      expect(tb(['on', '--project', project]).code).toBe(1);
    }
    expect(existsSync(path.join(home, 'turnback.toml'))).toBe(false);
    expect(existsSync('/turnback.toml')).toBe(rootHadToml);
    expect(existsSync(path.join(home, 'data', 'turnback'))).toBe(false);
  }, 180_000);

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
    const child = spawn(process.execPath, ['--no-warnings', CLI, 'run', '--', 'sh', '-c', 'echo s > started; echo ready; exec sleep 30'], { cwd: proj, env, stdio: ['ignore', 'pipe', 'pipe'] });
    let stderr = '';
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    await lineOn(child.stdout, 'ready');
    child.kill('SIGINT');
    const code = await new Promise<number | null>((resolve) => child.once('exit', (c) => resolve(c)));
    expect(code).toBe(130);
    expect(stderr).toContain('files: 1 new');
    expect(stderr).toContain('  new      started');
  });

  it('forwards SIGTERM sent to turnback itself, prints the list, and exits 128 + 15', async () => {
    const child = spawn(process.execPath, ['--no-warnings', CLI, 'run', '--', 'sh', '-c', 'echo s > started; echo ready; exec sleep 30'], { cwd: proj, env, stdio: ['ignore', 'pipe', 'pipe'] });
    let stderr = '';
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    await lineOn(child.stdout, 'ready');
    process.kill(child.pid as number, 'SIGTERM');
    const code = await new Promise<number | null>((resolve) => child.once('exit', (c) => resolve(c)));
    expect(code).toBe(143);
    expect(stderr).toContain('files: 1 new');
  });

  it('undo says the store is busy (exit 4) while another session holds it, and changes nothing', async () => {
    tb(['run', '--', ...EDIT]);
    const dir = json<{ store: { dir: string } }>(tb(['status', '--json'])).store.dir;
    const store = await CheckpointStore.open(dir, { projectRoot: proj });
    const busy = await store.withLock(async () => tb(['undo', '--yes']));
    expect(busy.code, busy.stderr).toBe(4);
    expect(busy.stderr).toContain('the checkpoint store is busy (another session is using it); try again when it finishes');
    expect(existsSync(path.join(proj, 'docs'))).toBe(false);
    const after = tb(['undo', '--yes']);
    expect(after.code, after.stderr).toBe(0);
    expect(existsSync(path.join(proj, 'docs', 'notes', 'n0.md'))).toBe(true);
  });

  it('status names a run whose turnback was killed, and the next run records it for undo', async () => {
    const child = spawn(process.execPath, ['--no-warnings', CLI, 'run', '--', 'sh', '-c', 'printf x >> Cargo.toml && printf ok > started && echo ready && sleep 30'], {
      cwd: proj,
      env,
      stdio: ['ignore', 'pipe', 'ignore'],
      detached: true,
    });
    await lineOn(child.stdout, 'ready');
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

  it('list shows a running run, then the killed run as one honest row, never an empty open turn', async () => {
    tb(['run', '--label', 'earlier', '--', 'sh', '-c', 'echo e > e.txt']);
    const child = spawn(process.execPath, ['--no-warnings', CLI, 'run', '--', 'sh', '-c', 'printf x >> Cargo.toml && rm -rf docs && printf ok > started && echo ready && sleep 30'], {
      cwd: proj,
      env,
      stdio: ['ignore', 'pipe', 'ignore'],
      detached: true,
    });
    await lineOn(child.stdout, 'ready');
    const during = tb(['list']);
    expect(during.stdout).toMatch(/ {2}before sh -c .* · \d\d:\d\d {3}0 files changed {3}\(running now\)\n/);
    process.kill(child.pid as number, 'SIGKILL');
    await new Promise((resolve) => child.once('exit', resolve));
    try {
      process.kill(-(child.pid as number), 'SIGKILL');
    } catch {
      // The group may already be gone.
    }

    const list = tb(['list']);
    expect(list.code).toBe(0);
    // list records the killed run first (as run and undo do), so its ids are the ones undo offers.
    expect(list.stderr).toContain('turnback was killed while a command ran: `sh -c');
    const rows = list.stdout.trim().split('\n');
    expect(rows).toHaveLength(2);
    expect(rows[0]).toMatch(/^[0-9a-f]{8} {2}before sh -c 'printf x >> Cargo\.toml.* · \d\d:\d\d {3}6 files changed {3}\(interrupted: turnback was killed while it ran\)$/);
    expect(rows[1]).toMatch(/^[0-9a-f]{8} {2}earlier · \d\d:\d\d {3}1 file changed {3}exit 0 · \d+\.\d s$/);
    expect(list.stdout).not.toContain('0 files changed');

    const listed = json<{ checkpoints: { kind: string; state: string; files: number }[]; interrupted: unknown[] }>(tb(['list', '--json']));
    expect(listed.checkpoints.map((c) => [c.kind, c.state, c.files])).toEqual([
      ['call', 'interrupted', 6],
      ['turn', 'complete', 1],
    ]);
    expect(listed.interrupted).toEqual([]);
    expect(tb(['status']).stdout).toMatch(/last picture: before sh -c .*\(6 files changed; interrupted: turnback was killed while it ran\)/);

    const undo = tb(['undo'], { input: '1\ny\n' });
    expect(undo.stdout).toMatch(/ {2}1 {2}[0-9a-f]{8} {2}before sh -c .* \(6 files; interrupted: turnback was killed while it ran\)/);
    expect(undo.code, undo.stderr).toBe(0);
    expect(await readFile(path.join(proj, 'Cargo.toml'), 'utf8')).toBe('[package]\nname = "p"\n');
    expect(await readFile(path.join(proj, 'docs', 'notes', 'draft.md'), 'utf8')).toBe('not committed\n');
    // The file the killed run itself created, still as it left it, goes with its undo (issue #26 point 7).
    expect(existsSync(path.join(proj, 'started'))).toBe(false);
  });

  it('prints a progress line on stderr when a picture takes longer than the threshold', () => {
    env.TURNBACK_PROGRESS_AFTER_MS = '0';
    const run = tb(['run', '--', 'sh', '-c', 'echo hi > a.txt']);
    expect(run.code).toBe(0);
    expect(run.stdout).toBe('');
    // Off a terminal: one line when it starts, one when it ends, for the picture before and after.
    expect(run.stderr).toMatch(/^turnback: taking a picture (before sh -c 'echo hi > a\.txt'…|… \d+ files seen, \d+ of \d+ copied)$/m);
    expect(run.stderr).toMatch(/^turnback: taking a picture after sh -c 'echo hi > a\.txt'…$/m);
    expect(run.stderr.match(/^turnback: picture taken in \d+\.\d s$/gm)).toHaveLength(2);
    expect(run.stderr).toContain('files: 1 new');
    expect(run.stderr).not.toContain('\r');

    env.TURNBACK_PROGRESS_AFTER_MS = '600000';
    const quick = tb(['run', '--', 'sh', '-c', 'echo again > a.txt']);
    expect(quick.code).toBe(0);
    expect(quick.stderr).not.toContain('taking a picture');
    expect(quick.stderr).not.toContain('picture taken');
    expect(quick.stderr).toContain('files: 1 changed');
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
  const until = (check: () => boolean, what: string): Promise<void> => whenFolderSays(path.join(root, 'pane'), check, what);

  beforeEach(async () => {
    await mkdir(path.join(root, 'pane'));
  });
  const keys = (...k: string[]): void => void spawnSync('tmux', ['send-keys', '-t', session, ...k]);

  afterEach(() => {
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

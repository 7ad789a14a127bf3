import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, readFile, realpath, stat, writeFile } from 'node:fs/promises';
import * as path from 'node:path';
import { describe, expect, it } from 'vitest';
import { CLI, EDIT, env, home, json, proj, root, runReport, tb, useE2eProject } from './e2e-harness.js';

// The built command end to end, in its own process: run, list, show, diff, status, then config,
// prune and verify. Undo and redo: e2e-undo.test.ts; signals, crashes and concurrency:
// e2e-signals.test.ts; the terminal picker: e2e-terminal.test.ts.

useE2eProject();

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


import { execFileSync, spawnSync } from 'node:child_process';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';
import { beforeEach, describe, expect, it } from 'vitest';
import { shownPath, shownText } from '../../src/report/escape.js';
import { tempFolder } from '../helpers/temp.js';

const CLI = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..', 'dist', 'cli', 'main.cjs');
// A name that would retitle the terminal (OSC), ring its bell, and forge a line of its own.
const EVIL = 'evil\u001b]0;pwned\u0007\n  write back  innocent.txt';

let proj: string;
let env: NodeJS.ProcessEnv;

function tb(args: string[], input = ''): { code: number | null; stdout: string; stderr: string } {
  const result = spawnSync(process.execPath, ['--no-warnings', CLI, ...args], { cwd: proj, env, input, encoding: 'utf8' });
  return { code: result.status, stdout: result.stdout, stderr: result.stderr };
}

beforeEach(async () => {
  const root = await tempFolder('turnback-escape-');
  const home = path.join(root, 'home');
  proj = path.join(root, 'proj');
  await mkdir(home);
  await mkdir(proj);
  env = { PATH: process.env.PATH, HOME: home, XDG_DATA_HOME: path.join(home, 'data'), XDG_CONFIG_HOME: path.join(home, 'config'), NO_COLOR: '1', LANG: 'C' };
  await writeFile(path.join(proj, EVIL), 'before\n');
  execFileSync('git', ['init', '-q'], { cwd: proj, env });
});

const CONTROL = /[\u0000-\u0009\u000b-\u001f\u007f]/u;

describe('names and labels printed for a person are escaped; --json stays exact', () => {
  it('run, list, show, diff and the undo preview never print a control character of a file name', async () => {
    const run = tb(['run', '--', 'node', '-e', `require('fs').writeFileSync(${JSON.stringify(EVIL)}, 'after\\n')`]);
    expect(run.code).toBe(0);
    expect(run.stderr).toContain(`changed  ${shownPath(EVIL)}`);
    const [picture] = (JSON.parse(tb(['list', '--json']).stdout) as { checkpoints: { id: string }[] }).checkpoints;
    if (picture === undefined) throw new Error('no picture listed');
    const show = tb(['show', picture.id]);
    const diff = tb(['diff', picture.id]);
    expect([show.code, diff.code]).toEqual([0, 0]);
    expect(show.stdout).toContain(shownPath(EVIL));
    expect(diff.stdout).toContain(`a/${shownPath(EVIL)}`);
    for (const result of [run, tb(['list']), show, diff, tb(['undo', '--dry-run'])]) {
      expect(CONTROL.test(result.stdout)).toBe(false);
      expect(CONTROL.test(result.stderr)).toBe(false);
      // The forged line never stands on its own.
      expect(`${result.stdout}${result.stderr}`.split('\n').some((line) => line.trim() === 'write back  innocent.txt')).toBe(false);
    }
    const preview = tb(['undo', '--dry-run']);
    expect(preview.stdout).toContain(shownPath(EVIL));
    // --json keeps the exact name.
    const reportFile = path.join(path.dirname(proj), 'report.json');
    tb(['run', '--report', reportFile, '--', 'node', '-e', `require('fs').writeFileSync(${JSON.stringify(EVIL)}, 'again\\n')`]);
    expect(await readFile(reportFile, 'utf8')).toContain(JSON.stringify(EVIL).slice(1, -1));
  });

  it('quotes a name git-style only when it holds something unsafe, and escapes free text', () => {
    expect(shownPath('src/a b.ts')).toBe('src/a b.ts');
    expect(shownPath('src/é.ts')).toBe('src/é.ts');
    expect(shownPath('a\nb')).toBe('"a\\nb"');
    expect(shownPath('x\u001b[31m"q"\\')).toBe('"x\\e[31m\\"q\\"\\\\"');
    expect(shownPath('rtl\u202ecod.exe')).toBe('"rtl\\u{202e}cod.exe"');
    expect(shownText('sed -i s/a/b/\r\nrm')).toBe('sed -i s/a/b/\\r\\nrm');
  });
});

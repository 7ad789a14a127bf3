import { execFileSync, spawnSync } from 'node:child_process';
import * as fs from 'node:fs/promises';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { resolveCoverage } from '../../src/capture/coverage.js';
import { isCheckpointError } from '../../src/core/errors.js';
import { resolveCheckpointConfig } from '../../src/session/config.js';
import { sandbox } from '../session/helpers.js';

const CLI = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..', 'dist', 'cli', 'main.cjs');

describe('the file-size limit has a ceiling, enforced when the config is read', () => {
  it('max_file_mib above 1024 is INVALID_CONFIG in the config and in coverage options; 1024 is accepted', () => {
    for (const attempt of [() => resolveCheckpointConfig({ max_file_mib: 4096 }), () => resolveCoverage({ maxFileMib: 4096 })]) {
      const error = (() => {
        try {
          attempt();
        } catch (e) {
          return e;
        }
        return undefined;
      })();
      expect(isCheckpointError(error, 'INVALID_CONFIG')).toBe(true);
      expect((error as Error).message).toMatch(/at most 1024/);
    }
    expect(resolveCheckpointConfig({ max_file_mib: 1024 }).maxFileMib).toBe(1024);
    expect(resolveCoverage({ maxFileMib: 1024 }).maxFileBytes).toBe(1024 * 1024 * 1024);
  });

  it('turnback run with max_file_mib = 4096 refuses with a clear message and its own exit code, never an abort', async () => {
    const { base, project } = await sandbox();
    execFileSync('git', ['init', '-q'], { cwd: project });
    await fs.writeFile(path.join(project, 'turnback.toml'), '[checkpoints]\nmax_file_mib = 4096\n');
    const home = path.join(base, 'home');
    await fs.mkdir(home);
    const result = spawnSync(process.execPath, ['--no-warnings', CLI, 'run', '--', 'sh', '-c', 'echo ran > ran.txt'], {
      cwd: project,
      env: { PATH: process.env.PATH, HOME: home, XDG_DATA_HOME: path.join(home, 'data'), XDG_CONFIG_HOME: path.join(home, 'config'), NO_COLOR: '1' },
      encoding: 'utf8',
    });
    expect(result.signal).toBeNull();
    expect(result.status).toBe(2);
    expect(result.stderr).toMatch(/max_file_mib is at most 1024/);
    await expect(fs.stat(path.join(project, 'ran.txt'))).rejects.toThrow();
  });
});

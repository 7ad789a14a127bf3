import { mkdir, readFile, writeFile } from 'node:fs/promises';
import * as path from 'node:path';
import { beforeEach, describe, expect, it } from 'vitest';
import { tempFolder } from '../helpers/temp.js';
import { isCheckpointError } from '../../src/index.js';
import { checkpointsTable, loadCliConfig, mergeTables, setEnabledInToml, userConfigPath, writeProjectEnabled } from '../../src/cli/config-file.js';
import { loadContext, refusalOf } from '../../src/cli/context.js';

let dir: string;
beforeEach(async () => {
  dir = await tempFolder('turnback-cli-config-');
});

describe('setEnabledInToml', () => {
  it('adds a table to an empty or unrelated file, keeping other lines', () => {
    expect(setEnabledInToml('', false)).toBe('[checkpoints]\nenabled = false\n');
    expect(setEnabledInToml('# mine\n[other]\nx = 1\n', true)).toBe('# mine\n[other]\nx = 1\n\n[checkpoints]\nenabled = true\n');
  });

  it('replaces or inserts enabled inside an existing table only', () => {
    const text = '[checkpoints]\nkeep_days = 3 # short\nenabled = true\n[other]\nenabled = 1\n';
    expect(setEnabledInToml(text, false)).toBe('[checkpoints]\nkeep_days = 3 # short\nenabled = false\n[other]\nenabled = 1\n');
    expect(setEnabledInToml('[checkpoints]\nkeep_days = 3\n', false)).toBe('[checkpoints]\nenabled = false\nkeep_days = 3\n');
  });

  it('refuses spellings it cannot edit safely', () => {
    try {
      setEnabledInToml('checkpoints = { enabled = true }\n', false);
      expect.unreachable();
    } catch (error) {
      expect(isCheckpointError(error, 'INVALID_CONFIG')).toBe(true);
    }
  });
});

describe('config loading', () => {
  it('rejects bad TOML and unknown keys, naming the file', () => {
    expect(() => checkpointsTable('[checkpoints\n', 'x.toml')).toThrow(/x\.toml is not valid TOML/);
    expect(() => checkpointsTable('[checkpoints]\nkeep_dayz = 1\n', 'x.toml')).toThrow(/x\.toml: unknown checkpoint config key: keep_dayz/);
    expect(checkpointsTable('[other]\n', 'x.toml')).toEqual({});
  });

  it('merges user then project, project winning key by key; on by default', async () => {
    expect(mergeTables({ keep_days: 1, retain: 5 }, { keep_days: 2 })).toEqual({ keep_days: 2, retain: 5 });
    const env = { HOME: dir, XDG_CONFIG_HOME: path.join(dir, 'cfg') };
    expect(userConfigPath(env)).toBe(path.join(dir, 'cfg', 'turnback', 'config.toml'));
    const project = path.join(dir, 'p');
    await mkdir(project);
    let config = await loadCliConfig(project, env);
    expect(config.enabled).toBe(true);
    expect(config.enabledBy).toBeUndefined();

    await mkdir(path.join(dir, 'cfg', 'turnback'), { recursive: true });
    await writeFile(userConfigPath(env), '[checkpoints]\nenabled = false\nkeep_days = 3\nretain = 7\ndir = "store"\n');
    config = await loadCliConfig(project, env);
    expect(config.enabled).toBe(false);
    expect(config.enabledBy).toBe(userConfigPath(env));
    expect(config.resolved.dir).toBe(path.join(dir, 'cfg', 'turnback', 'store'));

    await writeProjectEnabled(project, true);
    await writeFile(path.join(project, 'turnback.toml'), `${await readFile(path.join(project, 'turnback.toml'), 'utf8')}keep_days = 9\n`);
    config = await loadCliConfig(project, env);
    expect(config.enabled).toBe(true);
    expect(config.resolved.keepDays).toBe(9);
    expect(config.resolved.retain).toBe(7);
  });

  it('picks the store folder: --store > TURNBACK_DIR > config > default', async () => {
    const project = path.join(dir, 'p');
    await mkdir(project);
    const env = { HOME: dir, XDG_CONFIG_HOME: path.join(dir, 'cfg'), XDG_DATA_HOME: path.join(dir, 'data') };
    const byDefault = await loadContext({ project }, env);
    expect(byDefault.storeFrom).toBe('default');
    expect(byDefault.storeDir.startsWith(path.join(dir, 'data', 'turnback'))).toBe(true);
    await writeFile(path.join(project, 'turnback.toml'), '[checkpoints]\ndir = ".tb"\n');
    expect((await loadContext({ project }, env)).storeDir).toBe(path.join(project, '.tb'));
    expect((await loadContext({ project }, { ...env, TURNBACK_DIR: path.join(dir, 'env') })).storeDir).toBe(path.join(dir, 'env'));
    const flagged = await loadContext({ project, store: path.join(dir, 'flag') }, { ...env, TURNBACK_DIR: path.join(dir, 'env') });
    expect([flagged.storeDir, flagged.storeFrom]).toEqual([path.join(dir, 'flag'), '--store']);
  });

  it('refuses the home folder and the root folder', () => {
    expect(refusalOf(dir, dir)).toBe('the project is your home folder');
    expect(refusalOf('/', dir)).toBe('the project is the root folder (/)');
    expect(refusalOf(dir, path.join(dir, 'elsewhere'))).toBeUndefined();
  });
});

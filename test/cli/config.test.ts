import { describe, expect, it } from 'vitest';
import { cliRepo } from './harness.js';

// Issue #12: `turnback config` prints the configuration in effect and where each value came from.

interface ConfigJson {
  config: Record<string, { value: unknown; from: string }>;
}

describe('turnback config', () => {
  it('names, for every key, its value and the file it came from (project over user), or default', async () => {
    const repo = await cliRepo({ 'turnback.toml': '[checkpoints]\nretain = 7\n' });
    const { mkdir, writeFile } = await import('node:fs/promises');
    const userFile = `${repo.env.XDG_CONFIG_HOME as string}/turnback/config.toml`;
    await mkdir(`${repo.env.XDG_CONFIG_HOME as string}/turnback`, { recursive: true });
    await writeFile(userFile, '[checkpoints]\nretain = 3\nkeep_days = 2\n');
    const shown = JSON.parse(repo.tb(['config', '--json']).stdout) as ConfigJson;
    expect(shown.config.retain).toEqual({ value: 7, from: `${repo.proj}/turnback.toml` });
    expect(shown.config.keep_days).toEqual({ value: 2, from: userFile });
    expect(shown.config.max_file_mib).toEqual({ value: 100, from: 'default' });
    expect(shown.config.enabled).toEqual({ value: true, from: 'default (on)' });
    expect(Object.keys(shown.config)).toHaveLength(14);
    const text = repo.tb(['config']).stdout;
    expect(text).toMatch(/^retain = 7 +\S*turnback\.toml$/m);
    expect(text).toMatch(/^keep_days = 2 +\S*config\.toml$/m);
  });
});

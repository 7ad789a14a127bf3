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
    expect(Object.keys(shown.config)).toHaveLength(18);
    expect(shown.config.endpoint).toEqual({ value: null, from: 'only with dir = "s3://…"' });
    const text = repo.tb(['config']).stdout;
    expect(text).toMatch(/^retain = 7 +\S*turnback\.toml$/m);
    expect(text).toMatch(/^keep_days = 2 +\S*config\.toml$/m);

    // A store on S3: the location, its server keys, and the local store it is pushed from.
    await writeFile(userFile, '[checkpoints]\ndir = "s3://bucket-one/team/x"\nendpoint = "https://s3.example.test"\nforce_path_style = true\n');
    const remote = JSON.parse(repo.tb(['config', '--json']).stdout) as ConfigJson;
    expect(remote.config.dir?.value).toBe('s3://bucket-one/team/x/');
    expect(remote.config.dir?.from).toMatch(/config\.toml \(pushed from the local store \//);
    expect(remote.config.endpoint).toEqual({ value: 'https://s3.example.test', from: userFile });
    expect(remote.config.force_path_style).toEqual({ value: true, from: userFile });
    expect(remote.config.region).toEqual({ value: null, from: "default (the AWS SDK's)" });
    expect(remote.config.request_timeout_seconds).toEqual({ value: 30, from: 'default' });

    // A request's deadline: a number of seconds, and only with a store on S3.
    await writeFile(userFile, '[checkpoints]\ndir = "s3://bucket-one/team/x"\nrequest_timeout_seconds = 2.5\n');
    expect((JSON.parse(repo.tb(['config', '--json']).stdout) as ConfigJson).config.request_timeout_seconds).toEqual({ value: 2.5, from: userFile });
    for (const bad of ['request_timeout_seconds = 0', 'request_timeout_seconds = "30"', 'request_timeout_seconds = -1']) {
      await writeFile(userFile, `[checkpoints]\ndir = "s3://bucket-one/team/x"\n${bad}\n`);
      const refused = repo.tb(['config']);
      expect(refused.code, bad).not.toBe(0);
      expect(refused.stderr, bad).toContain('request_timeout_seconds must be a number of seconds');
    }
    await writeFile(userFile, '[checkpoints]\nrequest_timeout_seconds = 5\n');
    expect(repo.tb(['config']).stderr).toContain('request_timeout_seconds applies only to a store on S3');
  });
});

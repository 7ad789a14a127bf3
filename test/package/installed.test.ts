import { execFileSync, spawn, spawnSync } from 'node:child_process';
import { existsSync, readdirSync } from 'node:fs';
import { mkdir, writeFile } from 'node:fs/promises';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { beforeAll, describe, expect, it } from 'vitest';
import { cliRepo } from '../cli/harness.js';
import { tempFolder } from '../helpers/temp.js';

// The package as a person gets it: `npm pack`, then `npm install` of the tarball into an empty
// project with production dependencies only, as `npx turnback` would — its own commands work
// from there (`turnback mcp`, `turnback acp -- AGENT`), and the S3 remote's SDK, an optional peer,
// is neither installed nor needed until a remote is configured, which then says how to get it.

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const AGENT = path.join(ROOT, 'test', 'fixtures', 'acp-agent.mjs');
let app: string;
let bin: string;

beforeAll(async () => {
  const base = await tempFolder('turnback-installed-');
  const packed = execFileSync('npm', ['pack', '--silent', '--pack-destination', base], { cwd: ROOT, encoding: 'utf8' }).trim().split('\n').pop() ?? '';
  app = path.join(base, 'app');
  await mkdir(app);
  await writeFile(path.join(app, 'package.json'), JSON.stringify({ name: 'app', private: true }));
  // From npm's cache where it can (the suite's own `npm ci` filled it); the registry otherwise.
  execFileSync('npm', ['install', '--omit=dev', '--ignore-scripts', '--no-audit', '--no-fund', '--prefer-offline', path.join(base, packed)], { cwd: app, stdio: 'ignore' });
  bin = path.join(app, 'node_modules', '.bin', 'turnback');
}, 300_000);

describe('the installed package', () => {
  it('brings the SDKs its own commands need, and leaves the S3 SDK out', () => {
    const modules = path.join(app, 'node_modules');
    expect(existsSync(path.join(modules, '@modelcontextprotocol', 'sdk', 'package.json'))).toBe(true);
    expect(existsSync(path.join(modules, '@agentclientprotocol', 'sdk', 'package.json'))).toBe(true);
    expect(existsSync(path.join(modules, '@aws-sdk'))).toBe(false);
    // The framework adapters' SDKs stay the user's: optional peers, not installed with turnback.
    for (const peer of ['ai', '@openai', 'langchain', '@anthropic-ai']) expect(readdirSync(modules)).not.toContain(peer);
  });

  it('`turnback mcp` serves out of the box: an MCP client lists its tools', async () => {
    const repo = await cliRepo({ 'a.txt': 'a\n' });
    const client = new Client({ name: 'installed-test', version: '0.0.0' });
    await client.connect(new StdioClientTransport({ command: bin, args: ['mcp'], cwd: repo.proj, env: { ...(repo.env as Record<string, string>), TURNBACK_SERVER: 'off' }, stderr: 'pipe' }));
    try {
      expect((await client.listTools()).tools.map((t) => t.name).sort()).toEqual(['diff_checkpoint', 'list_checkpoints', 'restore_checkpoint', 'undo_savepoint']);
    } finally {
      await client.close();
    }
  });

  it('`turnback acp -- AGENT` proxies out of the box: the agent answers initialize through it', async () => {
    const repo = await cliRepo({ 'a.txt': 'a\n' });
    const proxy = spawn(bin, ['acp', '--', process.execPath, AGENT], { cwd: repo.proj, env: { ...repo.env, TURNBACK_SERVER: 'off' }, stdio: ['pipe', 'pipe', 'pipe'] });
    let stderr = '';
    proxy.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    const answer = new Promise<Record<string, unknown>>((resolve, reject) => {
      let seen = '';
      proxy.stdout.on('data', (chunk: Buffer) => {
        seen += chunk.toString();
        const line = seen.split('\n').find((l) => l.includes('"id":1'));
        if (line !== undefined) resolve(JSON.parse(line) as Record<string, unknown>);
      });
      proxy.on('exit', (code) => reject(new Error(`the proxy exited (${code}) before answering: ${stderr}`)));
    });
    proxy.stdin.write(`${JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: 1, clientCapabilities: {} } })}\n`);
    const reply = await answer;
    proxy.kill();
    expect(reply.result).toMatchObject({ protocolVersion: 1 });
  });

  it('a configured S3 remote without its SDK: push says which package to install, exit 1, and the run goes on', async () => {
    const repo = await cliRepo({ 'a.txt': 'a\n' });
    await writeFile(path.join(repo.proj, 'turnback.toml'), '[checkpoints]\ndir = "s3://bucket/prefix"\nendpoint = "http://127.0.0.1:1"\n');
    const env = { ...repo.env, TURNBACK_SERVER: 'off' };
    const run = spawnSync(bin, ['run', '--', 'sh', '-c', 'echo changed > a.txt'], { cwd: repo.proj, env, encoding: 'utf8' });
    expect(run.status).toBe(0);
    const push = spawnSync(bin, ['push'], { cwd: repo.proj, env, encoding: 'utf8' });
    expect(push.status).toBe(1);
    expect(push.stderr).toContain('npm install @aws-sdk/client-s3@');
    expect(spawnSync(bin, ['undo', '--yes'], { cwd: repo.proj, env, encoding: 'utf8' }).status).toBe(0);
  });
});

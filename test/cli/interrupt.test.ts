import { spawn } from 'node:child_process';
import { watch } from 'node:fs';
import { readdir, readFile } from 'node:fs/promises';
import * as path from 'node:path';
import { describe, expect, it } from 'vitest';
import { CLI, cliRepo } from './harness.js';

// Issue #12: Ctrl-C during an undo leaves a whole tree — the undo either finishes or rolls back —
// and never leaves `.turnback-*` files in the project. The built binary is sent SIGINT the moment
// its first stage file appears (seen through fs.watch, not a timer).

const COUNT = 1500;

async function everyName(dir: string): Promise<string[]> {
  return (await readdir(dir, { recursive: true })).map(String);
}

describe('Ctrl-C during an undo', () => {
  it('rolls back (exit 130) or finishes; either way every file is one version and no .turnback-* file is left', async () => {
    const files = Object.fromEntries(Array.from({ length: COUNT }, (_, i) => [`d/f${i}.txt`, `orig ${i}\n`]));
    const repo = await cliRepo(files);
    const script = `const fs=require('fs');for(let i=0;i<${COUNT};i++)fs.writeFileSync('d/f'+i+'.txt','agent '+i+'\\n')`;
    expect(repo.tb(['run', '--', process.execPath, '-e', script]).code).toBe(0);
    let rolledBack = 0;
    for (let attempt = 0; attempt < 3 && rolledBack === 0; attempt++) {
      const child = spawn(process.execPath, ['--no-warnings', CLI, 'undo', '--yes'], { cwd: repo.proj, env: repo.env, stdio: ['ignore', 'pipe', 'pipe'] });
      let stderr = '';
      let stdout = '';
      child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
      child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
      const watcher = watch(path.join(repo.proj, 'd'), (_event, name) => {
        if (String(name).startsWith('.turnback-')) {
          watcher.close();
          child.kill('SIGINT');
        }
      });
      const code = await new Promise<number | null>((resolve) => child.once('close', (c) => resolve(c)));
      watcher.close();
      const names = await everyName(repo.proj);
      expect(names.filter((name) => name.split('/').some((part) => part.startsWith('.turnback-')))).toEqual([]);
      const versions = new Set<string>();
      for (let i = 0; i < COUNT; i++) versions.add((await readFile(path.join(repo.proj, 'd', `f${i}.txt`), 'utf8')).split(' ')[0] as string);
      expect(versions.size, `exit ${String(code)}: ${stderr}`).toBe(1);
      if (code === 130) {
        rolledBack += 1;
        expect([...versions]).toEqual(['agent']);
        expect(stderr).toContain('cancelled and rolled back');
        // Issue #27: nothing was killed and nothing failed, and there is nothing to undo.
        expect(stdout).toContain('cancelled, nothing changed');
        expect(stdout).not.toContain('saved first');
        expect(stdout).not.toMatch(/failed|rolled back after/);
        const list = repo.tb(['list']).stdout;
        expect(list).toContain('cancelled, nothing changed');
        expect(list).not.toContain('cut short');
      } else {
        // The signal came after the commit point: the undo finished. Put the agent's version back for the next try.
        expect(code).toBe(0);
        expect([...versions]).toEqual(['orig']);
        expect(repo.tb(['redo', '--yes']).code).toBe(0);
      }
    }
    expect(rolledBack).toBeGreaterThan(0);
  });
});

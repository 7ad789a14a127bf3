import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { readFile } from 'node:fs/promises';
import * as path from 'node:path';
import { describe, expect, it } from 'vitest';
import { cliRepo, killGroup, startRun } from './harness.js';
import { onPath, processesOfRun } from '../../src/cli/command-process.js';

// A SIGKILLed turnback must not leave its command writing into the tree while undo acts: on Linux
// the command gets SIGTERM when turnback dies (setpriv --pdeathsig); a command that outlives it
// anyway is seen (its TURNBACK_RUN mark) and every restore refuses until it ends.
const canBind = process.platform === 'linux' && onPath('setpriv') !== undefined;
if (!canBind) console.warn('command-life tests skipped: they need Linux with util-linux setpriv');

describe.runIf(canBind)('the command dies with turnback, or undo waits for it', () => {
  it('a SIGKILLed turnback takes its command with it (parent-death signal); undo then records and restores the run', async () => {
    const repo = await cliRepo({ 'a.txt': 'a\n' });
    const program = "require('fs').writeFileSync('a.txt', 'changed\\n'); console.log('started'); setInterval(() => {}, 1000)";
    const run = startRun(repo, [process.execPath, '-e', program]);
    try {
      await run.line('started');
      const exited = once(run.child, 'exit');
      process.kill(run.child.pid as number, 'SIGKILL');
      // Ends only when the command died too: it got SIGTERM when turnback died.
      await run.closed;
      await exited;
      const undo = repo.tb(['undo', '--path', 'a.txt', '--yes']);
      expect(undo.code).toBe(0);
      expect(undo.stderr).toContain('turnback was killed while a command ran');
      expect(await readFile(path.join(repo.proj, 'a.txt'), 'utf8')).toBe('a\n');
    } finally {
      killGroup(run.child);
    }
  });

  it('a command that ignores the signal keeps running: undo, revert and redo refuse (exit 4), list and status say so; once it ends, undo works', async () => {
    const repo = await cliRepo({ 'a.txt': 'a\n' });
    const run = startRun(repo, ['sh', '-c', 'trap "" TERM; echo changed > a.txt; echo started; while :; do sleep 1; done']);
    try {
      await run.line('started');
      process.kill(run.child.pid as number, 'SIGKILL');
      await once(run.child, 'exit');
      const sessions = JSON.parse(repo.tb(['list', '--json']).stdout) as { checkpoints: { id: string; state: string }[] };
      expect(sessions.checkpoints[0]?.state).toBe('running');

      const undo = repo.tb(['undo', '--yes']);
      expect(undo.code).toBe(4);
      expect(undo.stderr).toMatch(/the command of a run whose turnback was killed is still running \(pids? [0-9, ]+: sh -c .*\): nothing is restored until it ends \(kill [0-9 ]+, or let it finish\)/);
      expect(repo.tb(['redo', '--yes']).code).toBe(4);
      expect(repo.tb(['revert', sessions.checkpoints[0]?.id as string, '--yes']).code).toBe(4);
      expect(repo.tb(['status']).stdout).toContain('undo waits until it ends');
      expect(await readFile(path.join(repo.proj, 'a.txt'), 'utf8')).toBe('changed\n');
    } finally {
      killGroup(run.child);
    }
    await run.closed;
    const undo = repo.tb(['undo', '--path', 'a.txt', '--yes']);
    expect(undo.code).toBe(0);
    expect(await readFile(path.join(repo.proj, 'a.txt'), 'utf8')).toBe('a\n');
  });
});

describe('processesOfRun', () => {
  it('finds a process by its whole TURNBACK_RUN entry, not by a prefix of another run', async () => {
    const child = spawn('sh', ['-c', 'echo ready; read line'], { env: { ...process.env, TURNBACK_RUN: 'cli-1-abc' }, stdio: ['pipe', 'pipe', 'ignore'] });
    try {
      await once(child.stdout, 'data');
      if (process.platform !== 'linux') return expect(processesOfRun('cli-1-abc')).toBeUndefined();
      expect(processesOfRun('cli-1-abc')).toContain(child.pid);
      expect(processesOfRun('cli-1-ab')).not.toContain(child.pid);
      expect(processesOfRun('cli-1-abcd')).not.toContain(child.pid);
    } finally {
      child.stdin.end('\n');
      await once(child, 'exit');
    }
  });
});

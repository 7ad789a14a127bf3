import { readFileSync } from 'node:fs';

/**
 * True when `pid` names a live process on this host. `EPERM` means it exists but belongs to
 * someone else, which still counts as alive.
 */
export function isPidAlive(pid: number): boolean {
  if (!Number.isInteger(pid) || pid <= 0) return false;
  if (pid === process.pid) return true;
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException | null)?.code === 'EPERM';
  }
}

/**
 * When `pid` started, as the kernel counts it (clock ticks since boot, `/proc/PID/stat` field
 * 22), or `undefined` where there is no /proc or the process is gone. Kept beside a pid so a pid
 * reused by an unrelated process is not taken for the one that wrote the record.
 */
export function processStartTime(pid: number): string | undefined {
  if (!Number.isInteger(pid) || pid <= 0) return undefined;
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // The command name (field 2) may hold spaces and parentheses: count from the last ')'.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return fields[19];
  } catch {
    return undefined;
  }
}

/**
 * True when the process that recorded `pid` and `startTime` (from {@link processStartTime}) still
 * runs: the pid is alive and, where the start time can be read, it started at that moment.
 */
export function isSameProcessAlive(pid: number, startTime: string | undefined): boolean {
  if (!isPidAlive(pid)) return false;
  if (startTime === undefined) return true;
  const now = processStartTime(pid);
  return now === undefined || now === startTime;
}

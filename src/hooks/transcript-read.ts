import { closeSync, constants, fstatSync, openSync, readSync } from 'node:fs';

// Reads the end of an agent's transcript (issue #28, transcript.ts): only a regular file, never
// through a link, at most its last TAIL_BYTES — a turn's lines are at its end, and a session
// of days must not cost a hook event more than that. Never throws: no transcript, no comparison.

/** How much of a transcript's end is read. */
const TAIL_BYTES = 8 * 1024 * 1024;

/**
 * The last {@link TAIL_BYTES} of the transcript at `file` (from a line's start), or `undefined`
 * when it cannot be read as a regular file.
 */
export function readTranscriptTail(file: string): string | undefined {
  let fd: number;
  try {
    fd = openSync(file, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
  } catch {
    return undefined;
  }
  try {
    const stats = fstatSync(fd);
    if (!stats.isFile()) return undefined;
    const length = Math.min(stats.size, TAIL_BYTES);
    const buffer = Buffer.alloc(length);
    let read = 0;
    while (read < length) {
      const got = readSync(fd, buffer, read, length - read, stats.size - length + read);
      if (got === 0) break;
      read += got;
    }
    const text = buffer.subarray(0, read).toString('utf8');
    // Cut in a line: it starts at the next one.
    return length < stats.size ? text.slice(text.indexOf('\n') + 1) : text;
  } catch {
    return undefined;
  } finally {
    closeSync(fd);
  }
}

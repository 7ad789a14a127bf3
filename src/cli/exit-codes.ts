/**
 * The exit codes of `turnback`. `run` is the exception: it exits with its command's code (or
 * 128 + signal number when the command was killed by a signal), whatever the picture did.
 */
export const EXIT = {
  /** Done. */
  ok: 0,
  /** An error: the store is unusable, a file could not be read, an unexpected failure. */
  error: 1,
  /** Bad usage: unknown option, missing argument, a path outside the project, a malformed id or config. */
  usage: 2,
  /** Nothing to do: nothing to undo or redo, or the question was answered no (cancelled). */
  nothing: 3,
  /** The store is busy with another session (its lock was held longer than we wait). */
  busy: 4,
  /** `run` could not take its picture (the store cannot be written): the command did not run. */
  unprotected: 5,
  /**
   * A restore (`undo`, `redo`, `revert`) finished but did not bring every file back (a stored
   * copy missing or damaged, a file changed since): its last line says how many and why.
   */
  skipped: 6,
} as const;

/** One of the {@link EXIT} values. */
export type ExitCode = (typeof EXIT)[keyof typeof EXIT];

/** The exit code section every command's `--help` ends with. */
export const EXIT_CODES_HELP: string = `
Exit codes:
  0  ok
  1  error
  2  bad usage (unknown option, path outside the project, bad id or config)
  3  nothing to undo or redo, or cancelled
  4  the checkpoint store is busy (another session holds it)
  5  run could not take its picture (the store cannot be written); the command did not run
     (turnback run --unprotected -- CMD runs it without one)
  6  undo, redo or revert finished but skipped files (the last line says how many and why)
  turnback run exits with its command's code (128 + signal number when it was killed by a signal).`;

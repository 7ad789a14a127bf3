/**
 * How restore chooses a file's permission bits.
 *
 * - `exact`: the recorded permission bits (`& 0o777`); setuid, setgid and sticky are never restored.
 * - `never-widen`: the recorded bits, but never granting execute, group-write or other-write that
 *   the destination does not already have, always keeping owner read+write, and leaving an
 *   already-executable destination's own bits alone.
 */
export type ModePolicy = 'exact' | 'never-widen';

/**
 * The mode restore writes for a file recorded with `recordedMode`, given the mode of the file now
 * at the destination (`undefined` when there is none, or it is not a regular file). Pure.
 *
 * @example restoredMode('never-widen', 0o777, 0o644) // 0o644: no exec, no group/other write granted
 * @example restoredMode('exact', 0o4755) // 0o755: setuid stripped
 */
export function restoredMode(policy: ModePolicy, recordedMode: number, destinationMode?: number): number {
  const recorded = recordedMode & 0o777;
  switch (policy) {
    case 'exact':
      return recorded;
    case 'never-widen': {
      // An executable destination was made so on purpose (a script); restore must not change it.
      if (destinationMode !== undefined && (destinationMode & 0o111) !== 0) return destinationMode & 0o777;
      const existing = destinationMode === undefined ? 0 : destinationMode & 0o777;
      const grantable = ~(0o111 | 0o022) | existing;
      return (recorded | 0o600) & grantable & 0o777;
    }
  }
}

import { randomBytes } from 'node:crypto';
import { CheckpointError } from './errors.js';

/**
 * An opaque checkpoint identifier. Lexical order is chronological order: it starts with
 * zero-padded milliseconds, then a per-process sequence, then a random tail.
 * Session records carry only this string.
 */
export type CheckpointId = string & { readonly __brand: 'CheckpointId' };

const ID_PATTERN = /^[0-9]{13}-[0-9a-z]{4}-[0-9a-f]{8}$/;

let lastMillis = 0;
let sequence = 0;

/**
 * Creates a new id, strictly greater than every id this process created before, even when the
 * clock goes backwards.
 */
export function newCheckpointId(now: number = Date.now()): CheckpointId {
  if (now > lastMillis) {
    lastMillis = now;
    sequence = 0;
  } else {
    sequence += 1;
    if (sequence >= 36 ** 4) {
      lastMillis += 1;
      sequence = 0;
    }
  }
  const millis = String(lastMillis).padStart(13, '0');
  const seq = sequence.toString(36).padStart(4, '0');
  return `${millis}-${seq}-${randomBytes(4).toString('hex')}` as CheckpointId;
}

/** True when `value` is a well-formed CheckpointId. */
export function isCheckpointId(value: unknown): value is CheckpointId {
  return typeof value === 'string' && ID_PATTERN.test(value);
}

/**
 * Validates untrusted input as a CheckpointId.
 *
 * @throws CheckpointError `INVALID_ID` when malformed.
 */
export function parseCheckpointId(value: unknown): CheckpointId {
  if (!isCheckpointId(value)) {
    const shown = typeof value === 'string' ? JSON.stringify(value.slice(0, 80)) : typeof value;
    throw new CheckpointError('INVALID_ID', `not a checkpoint id: ${shown}`);
  }
  return value;
}

/** The creation time encoded in an id, in epoch milliseconds. */
export function checkpointIdTime(id: CheckpointId): number {
  return Number(id.slice(0, 13));
}

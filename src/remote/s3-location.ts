import { CheckpointError } from '../core/errors.js';
import { checkKey } from './backend.js';

// `s3://bucket/prefix`, parsed without loading the AWS SDK: the configuration reads it on every
// command, and only `push`, `pull` and the background push load the SDK.

/** A parsed `s3://bucket/prefix`. */
export interface S3Location {
  bucket: string;
  /** Empty, or ending with `/`. */
  prefix: string;
}

/**
 * Parses `s3://bucket[/prefix]`.
 * @throws CheckpointError `INVALID_CONFIG` for anything else (another scheme, a bad bucket name, a bad prefix).
 */
export function parseS3Location(location: unknown): S3Location {
  if (typeof location !== 'string' || !location.startsWith('s3://')) throw new CheckpointError('INVALID_CONFIG', 'an S3 store is given as s3://bucket or s3://bucket/prefix', { found: String(location) });
  const rest = location.slice('s3://'.length);
  const slash = rest.indexOf('/');
  const bucket = slash < 0 ? rest : rest.slice(0, slash);
  // S3's bucket naming rules: 3–63 lowercase letters, digits, dots and hyphens, a letter or digit at each end.
  if (!/^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$/.test(bucket) || bucket.includes('..')) {
    throw new CheckpointError('INVALID_CONFIG', 'an S3 bucket name is 3–63 lowercase letters, digits, dots and hyphens', { found: bucket });
  }
  let prefix = slash < 0 ? '' : rest.slice(slash + 1);
  if (prefix.length > 0) {
    if (!prefix.endsWith('/')) prefix += '/';
    try {
      checkKey(prefix.slice(0, -1));
    } catch {
      throw new CheckpointError('INVALID_CONFIG', 'an S3 prefix is `/`-separated segments of letters, digits, `.`, `_` and `-`', { found: prefix });
    }
  }
  return { bucket, prefix };
}


import { describe, expect, it } from 'vitest';
import { isCheckpointError } from '../../src/core/errors.js';
import { resolveCheckpointConfig } from '../../src/session/config.js';

// `dir = "s3://bucket/prefix"` and its three keys, as the configuration reads them (no SDK loaded).

function refusal(table: Record<string, unknown>): string | undefined {
  try {
    resolveCheckpointConfig(table);
    return undefined;
  } catch (error) {
    if (!isCheckpointError(error, 'INVALID_CONFIG')) throw error;
    return error.message;
  }
}

describe('a store on S3 in the configuration', () => {
  it('an s3:// dir is the remote, the local store stays the default folder', () => {
    const resolved = resolveCheckpointConfig({ dir: 's3://my-bucket/team/proj', endpoint: 'http://127.0.0.1:7480', region: 'eu-west-1', force_path_style: true });
    expect(resolved.dir).toBeUndefined();
    expect(resolved.remote).toEqual({ location: 's3://my-bucket/team/proj/', endpoint: 'http://127.0.0.1:7480', region: 'eu-west-1', forcePathStyle: true, requestTimeoutMs: 30_000 });
    expect(resolveCheckpointConfig({ dir: '/var/x' }).remote).toBeUndefined();
    expect(resolveCheckpointConfig({ dir: 's3://bucket' }).remote).toEqual({ location: 's3://bucket/', endpoint: undefined, region: undefined, forcePathStyle: false, requestTimeoutMs: 30_000 });
  });

  it('bad values and keys without an s3:// dir are INVALID_CONFIG', () => {
    expect(refusal({ endpoint: 'http://x' })).toContain('endpoint applies only to a store on S3');
    expect(refusal({ dir: '/local', region: 'us-east-1' })).toContain('region applies only to a store on S3');
    expect(refusal({ dir: 's3://bucket', endpoint: 'ftp://x' })).toContain('endpoint must be an http:// or https:// address');
    expect(refusal({ dir: 's3://bucket', region: 'Not A Region' })).toContain('region must be a region name');
    expect(refusal({ dir: 's3://bucket', force_path_style: 'yes' })).toContain('force_path_style must be true or false');
    expect(refusal({ dir: 's3://B' })).toContain('bucket name');
    expect(refusal({ dir: 's3://bucket/../up' })).toContain('S3 prefix');
  });
});

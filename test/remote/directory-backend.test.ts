import * as fs from 'node:fs/promises';
import * as path from 'node:path';
import { describe, expect, it } from 'vitest';
import { isCheckpointError } from '../../src/core/errors.js';
import { DirectoryBackend } from '../../src/remote/directory-backend.js';
import { tempFolder } from '../helpers/temp.js';
import { backendConformance } from './conformance.js';

backendConformance('the directory backend', async () => DirectoryBackend.open(path.join(await tempFolder('turnback-backend-'), 'remote')));
backendConformance('the directory backend, durable', async () => DirectoryBackend.open(path.join(await tempFolder('turnback-backend-'), 'remote'), { durable: true }), { slow: true });

describe('the directory backend', () => {
  it('refuses a root that is a file, and leaves no temp file after its writes', async () => {
    const base = await tempFolder('turnback-backend-');
    await fs.writeFile(path.join(base, 'file'), 'x');
    const error = await DirectoryBackend.open(path.join(base, 'file')).then(() => undefined, (e: unknown) => e);
    expect(isCheckpointError(error, 'STORE_UNAVAILABLE')).toBe(true);
    const backend = await DirectoryBackend.open(path.join(base, 'remote'));
    await backend.create('objects/a', Buffer.from('a'));
    await backend.create('objects/a', Buffer.from('b'));
    await backend.put('state/s', Buffer.from('s'));
    expect(await fs.readdir(path.join(base, 'remote', '.tmp'))).toEqual([]);
    expect(backend.capabilities).toEqual({ atomicCreate: true, durableWrites: false });
  });
});

import { chmodSync, mkdtempSync, renameSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { EndpointReader, endpointFile, readEndpoint, writeEndpoint } from '../../src/server/hook-endpoint.js';

// The listener checks every request's secret against the endpoint file, re-reading it only when
// the file's identity changed: each way the file can change must take effect at the next read.

let folder: string;
beforeEach(() => {
  folder = mkdtempSync(path.join(tmpdir(), 'tb-endpoint-'));
  chmodSync(folder, 0o700);
});
afterEach(() => rmSync(folder, { recursive: true, force: true }));

const secret = (digit: string): string => digit.repeat(64);

describe('EndpointReader', () => {
  it('reads what the file holds now: replaced by rename, rewritten in place at the same size, chmodded, turned into a link, removed', () => {
    writeEndpoint(folder, { port: 4000, secret: secret('a') });
    const reader = new EndpointReader(folder);
    expect(reader.read()).toEqual({ port: 4000, secret: secret('a') });
    expect(reader.read()).toEqual({ port: 4000, secret: secret('a') });

    // An install making a new secret: a new file renamed over the old.
    writeEndpoint(folder, { port: 4000, secret: secret('b') });
    expect(reader.read()).toEqual({ port: 4000, secret: secret('b') });

    // Rewritten in place, same size (a new inode is not needed to change it).
    writeFileSync(endpointFile(folder), `${JSON.stringify({ port: 4000, secret: secret('c') })}\n`);
    expect(reader.read()).toEqual({ port: 4000, secret: secret('c') });

    // Readable by others: not trusted, at once; trusted again once it is owner-only.
    chmodSync(endpointFile(folder), 0o644);
    expect(reader.read()).toBeUndefined();
    chmodSync(endpointFile(folder), 0o600);
    expect(reader.read()).toEqual({ port: 4000, secret: secret('c') });

    // A link in its place, even to a good file: never followed.
    const elsewhere = path.join(folder, 'other.json');
    writeFileSync(elsewhere, `${JSON.stringify({ port: 4000, secret: secret('d') })}\n`, { mode: 0o600 });
    rmSync(endpointFile(folder));
    symlinkSync(elsewhere, endpointFile(folder));
    expect(reader.read()).toBeUndefined();
    expect(readEndpoint(folder)).toBeUndefined();

    rmSync(endpointFile(folder));
    expect(reader.read()).toBeUndefined();
    renameSync(elsewhere, endpointFile(folder));
    expect(reader.read()).toEqual({ port: 4000, secret: secret('d') });
  });

  it('kept between reads once the file is past the racy window (a clock a minute ahead): a rename, a chmod, a link and a removal still take effect at once', () => {
    writeEndpoint(folder, { port: 4000, secret: secret('a') });
    const reader = new EndpointReader(folder, () => Date.now() + 60_000);
    expect(reader.read()).toEqual({ port: 4000, secret: secret('a') });
    expect(reader.read()).toEqual({ port: 4000, secret: secret('a') });
    writeEndpoint(folder, { port: 4000, secret: secret('b') });
    expect(reader.read()).toEqual({ port: 4000, secret: secret('b') });
    chmodSync(endpointFile(folder), 0o640);
    expect(reader.read()).toBeUndefined();
    chmodSync(endpointFile(folder), 0o600);
    expect(reader.read()).toEqual({ port: 4000, secret: secret('b') });
    const elsewhere = path.join(folder, 'other.json');
    renameSync(endpointFile(folder), elsewhere);
    expect(reader.read()).toBeUndefined();
    symlinkSync(elsewhere, endpointFile(folder));
    expect(reader.read()).toBeUndefined();
    rmSync(endpointFile(folder));
    renameSync(elsewhere, endpointFile(folder));
    expect(reader.read()).toEqual({ port: 4000, secret: secret('b') });
  });
});

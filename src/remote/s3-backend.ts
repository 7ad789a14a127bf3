import { randomBytes } from 'node:crypto';
import {
  AbortMultipartUploadCommand,
  CompleteMultipartUploadCommand,
  CopyObjectCommand,
  CreateMultipartUploadCommand,
  DeleteObjectCommand,
  GetObjectCommand,
  HeadBucketCommand,
  HeadObjectCommand,
  ListObjectsV2Command,
  PutObjectCommand,
  S3Client,
  UploadPartCommand,
} from '@aws-sdk/client-s3';
import { CheckpointError } from '../core/errors.js';
import { parseS3Location, type S3Location } from './s3-location.js';
import { checkKey, checkPrefix, type BackendCallOptions, type BackendCapabilities, type BackendEntry, type StoreBackend } from './backend.js';

// A store backend on S3 and the servers that speak its API (Ceph's RADOS Gateway, MinIO, R2,
// GCS's S3 mode), through the official SDK. The rules it keeps, each checked against a real
// server by the conformance suite:
// - an atomic create is PutObject with `If-None-Match: *`: 412 means the key exists (left as it
//   was); 409 (a concurrent conditional write in flight) is tried again;
// - a server that does not enforce that header would let two creates both "succeed": the backend
//   probes it when it opens and refuses to work with such a server;
// - objects over 5 MiB go up in 5 MiB parts (multipart), smaller ones in one request;
// - a listing follows every continuation token;
// - request and response checksums only "when required": some S3-compatible servers mishandle
//   the SDK's default streaming checksums;
// - credentials come from the SDK's own chain (environment, shared files, instance roles), never
//   from turnback's configuration.

/** Objects above this go up in parts. */
export const MULTIPART_THRESHOLD: number = 5 * 1024 * 1024;
/** The size of each part (S3's smallest allowed, but for the last). */
const PART_BYTES = 5 * 1024 * 1024;
/** Tries of a create that met a concurrent conditional write (409). */
const CONFLICT_TRIES = 5;

/** Where and how to reach the server. */
export interface S3BackendOptions {
  /** `s3://bucket` or `s3://bucket/prefix`. */
  location: string;
  /** The server's address; default the SDK's own (AWS) for the region. */
  endpoint?: string;
  /** @default the SDK's (AWS_REGION), else `us-east-1` */
  region?: string;
  /** Bucket in the path (`endpoint/bucket/key`), as most S3-compatible servers want. @default false */
  forcePathStyle?: boolean;
  /** For tests and tools only: credentials given directly instead of the SDK's chain. */
  credentials?: { accessKeyId: string; secretAccessKey: string };
  /** How long a connection may take to open. @default 5 s */
  connectTimeoutMs?: number;
  /** How long a request may go unanswered, or its socket quiet, before it fails (each request is tried three times). @default 30 s */
  requestTimeoutMs?: number;
}

/** What the SDK's errors carry that tells them apart. */
interface SdkFailure {
  name?: string;
  code?: string;
  $metadata?: { httpStatusCode?: number };
  message?: string;
}

/** A typed error for an SDK failure (see `REMOTE_UNAVAILABLE` and `REMOTE_REFUSED`). */
export function remoteError(error: unknown, doing: string, where: string): CheckpointError {
  if (error instanceof CheckpointError) return error;
  const failure = (typeof error === 'object' && error !== null ? error : {}) as SdkFailure;
  const status = failure.$metadata?.httpStatusCode;
  const name = failure.name ?? failure.code ?? '';
  const said = `${doing} ${where}: ${failure.message ?? String(error)}`;
  const refused = (why: string): CheckpointError => new CheckpointError('REMOTE_REFUSED', `${said} (${why})`, { found: why, cause: error });
  const unavailable = (why: string): CheckpointError => new CheckpointError('REMOTE_UNAVAILABLE', `${said} (${why}; try again later)`, { found: why, cause: error });
  if (name === 'AbortError') return unavailable('aborted');
  if (name === 'NoSuchBucket') return refused('no-bucket');
  if (['InvalidAccessKeyId', 'SignatureDoesNotMatch', 'AccessDenied', 'Forbidden', 'CredentialsProviderError', 'ExpiredToken', 'InvalidToken'].includes(name) || status === 401 || status === 403) return refused('denied');
  if (name === 'SlowDown' || name === 'Throttling' || name === 'ThrottlingException' || status === 429 || status === 503) return unavailable('throttled');
  if (name === 'TimeoutError' || name === 'RequestTimeout' || /timed? ?out/i.test(failure.message ?? '')) return unavailable('timeout');
  if (status !== undefined && status >= 500) return unavailable('server-error');
  if (status === 404) return refused('no-bucket');
  if (status !== undefined && status >= 400) return refused('bad-request');
  // No answer at all: refused connection, unknown host, reset.
  return unavailable('unreachable');
}

function statusOf(error: unknown): number | undefined {
  return (error as SdkFailure | null)?.$metadata?.httpStatusCode;
}

function isMissing(error: unknown): boolean {
  const name = (error as SdkFailure | null)?.name;
  return name === 'NoSuchKey' || name === 'NotFound' || (statusOf(error) === 404 && name !== 'NoSuchBucket');
}

/** A {@link StoreBackend} on an S3 bucket (under a prefix). */
export class S3Backend implements StoreBackend {
  readonly location: string;
  readonly capabilities: BackendCapabilities = { atomicCreate: true, durableWrites: true };

  private constructor(
    private readonly client: S3Client,
    private readonly where: S3Location,
  ) {
    this.location = `s3://${where.bucket}/${where.prefix}`;
  }

  /**
   * Connects, checks that the bucket answers, and probes whether the server enforces
   * conditional creates (two creates of one probe key: the second must be refused).
   * @throws CheckpointError `INVALID_CONFIG` (a bad location), `REMOTE_REFUSED` (`denied`,
   *   `no-bucket`, `no-conditional-writes`), `REMOTE_UNAVAILABLE` (`unreachable`, `timeout`, …).
   */
  static async open(options: S3BackendOptions): Promise<S3Backend> {
    const where = parseS3Location(options.location);
    const requestTimeoutMs = options.requestTimeoutMs ?? 30_000;
    const client = new S3Client({
      ...(options.endpoint !== undefined ? { endpoint: options.endpoint } : {}),
      region: options.region ?? process.env.AWS_REGION ?? 'us-east-1',
      forcePathStyle: options.forcePathStyle === true,
      ...(options.credentials !== undefined ? { credentials: options.credentials } : {}),
      requestChecksumCalculation: 'WHEN_REQUIRED',
      responseChecksumValidation: 'WHEN_REQUIRED',
      maxAttempts: 3,
      // A deadline on every request, and on a socket gone quiet mid-body, that fails the request
      // (the SDK's default only logs a warning and waits on): three tries at most, then a typed
      // REMOTE_UNAVAILABLE (`timeout`) naming the request.
      requestHandler: { connectionTimeout: options.connectTimeoutMs ?? 5000, requestTimeout: requestTimeoutMs, throwOnRequestTimeout: true, socketTimeout: requestTimeoutMs },
    });
    const backend = new S3Backend(client, where);
    try {
      await client.send(new HeadBucketCommand({ Bucket: where.bucket }));
    } catch (error) {
      client.destroy();
      throw remoteError(error, 'cannot reach the bucket of', backend.location);
    }
    try {
      await backend.#probeConditionalCreates();
    } catch (error) {
      client.destroy();
      throw error;
    }
    return backend;
  }

  /** Closes the SDK's connections. */
  close(): void {
    this.client.destroy();
  }

  /**
   * Over 5 MiB, the create asks first whether the key exists and completes its parts with
   * `If-None-Match: *`; a server that checks that only on single requests could let two such
   * creates of one key both land. turnback creates keys that large only for content-addressed
   * objects, whose two writers write the very same bytes.
   */
  async create(key: string, bytes: Uint8Array, options: BackendCallOptions = {}): Promise<'created' | 'exists'> {
    const objectKey = this.#objectKey(key);
    if (bytes.length > MULTIPART_THRESHOLD && (await this.head(key, options)) !== undefined) return 'exists';
    for (let attempt = 1; ; attempt++) {
      try {
        if (bytes.length > MULTIPART_THRESHOLD) await this.#putInParts(objectKey, bytes, true, options.signal);
        else await this.client.send(new PutObjectCommand({ Bucket: this.where.bucket, Key: objectKey, Body: bytes, IfNoneMatch: '*' }), abortOf(options));
        return 'created';
      } catch (error) {
        const status = statusOf(error);
        if (status === 412) return 'exists';
        // Another conditional write of the same key is in flight: its outcome decides, so ask again.
        if (status === 409 && attempt < CONFLICT_TRIES) {
          await new Promise((resolve) => setTimeout(resolve, 20 * attempt));
          continue;
        }
        throw remoteError(error, 'cannot create', `${this.location}${key}`);
      }
    }
  }

  async put(key: string, bytes: Uint8Array, options: BackendCallOptions = {}): Promise<void> {
    const objectKey = this.#objectKey(key);
    try {
      if (bytes.length > MULTIPART_THRESHOLD) await this.#putInParts(objectKey, bytes, false, options.signal);
      else await this.client.send(new PutObjectCommand({ Bucket: this.where.bucket, Key: objectKey, Body: bytes }), abortOf(options));
    } catch (error) {
      throw remoteError(error, 'cannot write', `${this.location}${key}`);
    }
  }

  async get(key: string, options: BackendCallOptions = {}): Promise<Buffer | undefined> {
    const objectKey = this.#objectKey(key);
    try {
      const answer = await this.client.send(new GetObjectCommand({ Bucket: this.where.bucket, Key: objectKey }), abortOf(options));
      if (answer.Body === undefined) return Buffer.alloc(0);
      return Buffer.from(await answer.Body.transformToByteArray());
    } catch (error) {
      if (isMissing(error)) return undefined;
      throw remoteError(error, 'cannot read', `${this.location}${key}`);
    }
  }

  async getStream(key: string, options: BackendCallOptions = {}): Promise<AsyncIterable<Uint8Array> | undefined> {
    const objectKey = this.#objectKey(key);
    const where = `${this.location}${key}`;
    let body: AsyncIterable<Uint8Array> | undefined;
    try {
      const answer = await this.client.send(new GetObjectCommand({ Bucket: this.where.bucket, Key: objectKey }), abortOf(options));
      body = answer.Body as AsyncIterable<Uint8Array> | undefined;
    } catch (error) {
      if (isMissing(error)) return undefined;
      throw remoteError(error, 'cannot read', where);
    }
    return (async function* typed() {
      try {
        if (body !== undefined) yield* body;
      } catch (error) {
        throw remoteError(error, 'cannot read', where);
      }
    })();
  }

  async head(key: string, options: BackendCallOptions = {}): Promise<{ size: number } | undefined> {
    const objectKey = this.#objectKey(key);
    try {
      const answer = await this.client.send(new HeadObjectCommand({ Bucket: this.where.bucket, Key: objectKey }), abortOf(options));
      return { size: answer.ContentLength ?? 0 };
    } catch (error) {
      if (isMissing(error)) return undefined;
      throw remoteError(error, 'cannot look at', `${this.location}${key}`);
    }
  }

  async *list(prefix: string, options: BackendCallOptions = {}): AsyncIterable<BackendEntry> {
    checkPrefix(prefix);
    const base = this.where.prefix;
    let token: string | undefined;
    do {
      let page;
      try {
        page = await this.client.send(
          new ListObjectsV2Command({ Bucket: this.where.bucket, Prefix: `${base}${prefix}`, ...(token !== undefined ? { ContinuationToken: token } : {}) }),
          abortOf(options),
        );
      } catch (error) {
        throw remoteError(error, 'cannot list', `${this.location}${prefix}`);
      }
      for (const item of page.Contents ?? []) {
        if (item.Key === undefined || !item.Key.startsWith(base)) continue;
        yield { key: item.Key.slice(base.length), size: item.Size ?? 0, modifiedAt: item.LastModified?.getTime() ?? 0 };
      }
      token = page.IsTruncated === true ? page.NextContinuationToken : undefined;
    } while (token !== undefined);
  }

  /** A copy of the object onto itself with its metadata replaced: the server sets a new LastModified, no bytes travel. */
  async touch(key: string, options: BackendCallOptions = {}): Promise<boolean> {
    const objectKey = this.#objectKey(key);
    try {
      await this.client.send(
        new CopyObjectCommand({ Bucket: this.where.bucket, Key: objectKey, CopySource: `${this.where.bucket}/${encodeURIComponent(objectKey).replace(/%2F/g, '/')}`, MetadataDirective: 'REPLACE', Metadata: { 'turnback-touched': String(Date.now()) } }),
        abortOf(options),
      );
      return true;
    } catch (error) {
      if (isMissing(error)) return false;
      throw remoteError(error, 'cannot touch', `${this.location}${key}`);
    }
  }

  async delete(key: string, options: BackendCallOptions = {}): Promise<void> {
    const objectKey = this.#objectKey(key);
    try {
      await this.client.send(new DeleteObjectCommand({ Bucket: this.where.bucket, Key: objectKey }), abortOf(options));
    } catch (error) {
      if (isMissing(error)) return;
      throw remoteError(error, 'cannot remove', `${this.location}${key}`);
    }
  }

  /** Creates one probe key twice: a server that lets the second through ignores `If-None-Match`. */
  async #probeConditionalCreates(): Promise<void> {
    const key = `.turnback-probe/${process.pid}-${randomBytes(8).toString('hex')}`;
    const first = await this.create(key, Buffer.from('first'));
    const second = await this.create(key, Buffer.from('second'));
    const kept = await this.get(key);
    await this.delete(key).catch(() => undefined);
    if (first !== 'created' || second !== 'exists' || kept?.toString() !== 'first') {
      throw new CheckpointError('REMOTE_REFUSED', `the S3 server at ${this.location} does not enforce conditional writes (If-None-Match: *), so two machines could overwrite each other's checkpoints: turnback does not use it`, {
        found: 'no-conditional-writes',
      });
    }
  }

  /** A multipart upload; with `ifAbsent`, its completion is conditional (412 when the key exists). */
  async #putInParts(objectKey: string, bytes: Uint8Array, ifAbsent: boolean, signal: AbortSignal | undefined): Promise<void> {
    const bucket = this.where.bucket;
    const started = await this.client.send(new CreateMultipartUploadCommand({ Bucket: bucket, Key: objectKey }), abortOf({ signal }));
    const uploadId = started.UploadId;
    if (uploadId === undefined) throw new CheckpointError('REMOTE_REFUSED', `the S3 server gave no upload id for ${objectKey}`, { found: 'bad-request' });
    try {
      const parts: { ETag: string; PartNumber: number }[] = [];
      for (let at = 0, number = 1; at < bytes.length; at += PART_BYTES, number++) {
        const part = await this.client.send(new UploadPartCommand({ Bucket: bucket, Key: objectKey, UploadId: uploadId, PartNumber: number, Body: bytes.subarray(at, at + PART_BYTES) }), abortOf({ signal }));
        parts.push({ ETag: part.ETag ?? '', PartNumber: number });
      }
      await this.client.send(
        new CompleteMultipartUploadCommand({ Bucket: bucket, Key: objectKey, UploadId: uploadId, MultipartUpload: { Parts: parts }, ...(ifAbsent ? { IfNoneMatch: '*' } : {}) }),
        abortOf({ signal }),
      );
    } catch (error) {
      await this.client.send(new AbortMultipartUploadCommand({ Bucket: bucket, Key: objectKey, UploadId: uploadId })).catch(() => undefined);
      throw error;
    }
  }

  #objectKey(key: string): string {
    return `${this.where.prefix}${checkKey(key)}`;
  }
}

function abortOf(options: BackendCallOptions): { abortSignal?: AbortSignal } {
  return options.signal !== undefined ? { abortSignal: options.signal } : {};
}

/**
 * turnback/remote — the store's backends (issue #16): the one narrow interface a backend
 * implements ({@link StoreBackend}: bytes under keys, created once or replaced whole, listed by
 * prefix, deleted), the local folder backend and the S3 backend (S3 and every server that speaks
 * its API). The main `turnback` entry never imports this one, nor the AWS SDK it loads.
 *
 * @packageDocumentation
 */
export { checkKey, checkPrefix, MAX_KEY_LENGTH, type BackendCallOptions, type BackendCapabilities, type BackendEntry, type BackendKey, type StoreBackend } from './remote/backend.js';
export { DirectoryBackend, type DirectoryBackendOptions } from './remote/directory-backend.js';
export { MULTIPART_THRESHOLD, remoteError, S3Backend, type S3BackendOptions } from './remote/s3-backend.js';
export { parseS3Location, type S3Location } from './remote/s3-location.js';
export { pullCheckpoints, pushCheckpoints, remoteCheckpointIds, type PullReport, type PushReport, type SyncOptions } from './remote/sync.js';
export { workspaceIdentity, workspaceIdentityOf, type WorkspaceIdentity } from './remote/workspace-identity.js';
export { pruneRemote, type RemotePruneOptions, type RemotePruneReport } from './remote/prune.js';
export { REMOTE_GRACE_MS } from './remote/sync.js';

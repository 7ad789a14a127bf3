import { loadContext, openStore, type CliContext, type GlobalOptions } from './context.js';
import { EXIT } from './exit-codes.js';
import { CliExit, type Io } from './io.js';
import { shownText } from '../report/escape.js';
import { sizeText } from '../report/size-text.js';
import type { RemoteStoreConfig } from '../admin.js';
import { withPushSlot } from './background-push.js';

// `turnback push` and `turnback pull [SESSION]`: the local store and its remote copy on S3
// (`dir = "s3://bucket/prefix"`). The AWS SDK (an optional peer dependency) is loaded only here,
// when one of them runs: every other command starts without it, and an install without it works.

type RemoteModule = typeof import('../remote.js');

function remoteOf(context: CliContext): RemoteStoreConfig {
  const remote = context.config.resolved.remote;
  if (remote === undefined) {
    throw new CliExit(EXIT.usage, 'USAGE', 'no remote store: set dir = "s3://bucket/prefix" in turnback.toml (with endpoint, region and force_path_style for a server other than AWS)');
  }
  return remote;
}

type S3Backend = Awaited<ReturnType<RemoteModule['S3Backend']['open']>>;

/** Runs `fn` with the remote module, a connection to the project's remote store and its workspace there; closes the connection after. */
async function withRemote<T>(context: CliContext, remote: RemoteStoreConfig, fn: (module: RemoteModule, backend: S3Backend, workspace: Awaited<ReturnType<RemoteModule['workspaceIdentity']>>) => Promise<T>): Promise<T> {
  const { module, backend } = await connect(remote);
  try {
    return await fn(module, backend, await module.workspaceIdentity(context.projectRoot));
  } finally {
    backend.close();
  }
}

/** The version the remote store is tested with (its package file's devDependencies pin it). */
const TESTED_AWS_SDK = '3.1175.0';

/**
 * The remote store's code with the AWS SDK. The SDK is an optional peer dependency, left out of
 * turnback's own install (it is larger than the rest of it together): whoever configures an S3
 * remote installs it, and a missing SDK is said so, with the command that brings it.
 */
async function loadRemoteModule(): Promise<RemoteModule> {
  try {
    return await import('../remote.js');
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if ((code === 'MODULE_NOT_FOUND' || code === 'ERR_MODULE_NOT_FOUND') && /@aws-sdk\/client-s3/.test(String((error as Error).message))) {
      throw new CliExit(EXIT.error, 'REMOTE_UNAVAILABLE', `a remote store on S3 needs the AWS SDK, which turnback does not install itself: npm install @aws-sdk/client-s3@${TESTED_AWS_SDK} (beside turnback, or globally with -g where turnback is global)`);
    }
    throw error;
  }
}

async function connect(remote: RemoteStoreConfig): Promise<{ module: RemoteModule; backend: S3Backend }> {
  // The SDK's notice that its future releases need Node 22 is about turnback's pinned dependency,
  // not the person's code: it stays out of the command's output (an SDK setting for exactly this).
  process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= 'true';
  const module = await loadRemoteModule();
  const backend = await module.S3Backend.open({
    location: remote.location,
    ...(remote.endpoint !== undefined ? { endpoint: remote.endpoint } : {}),
    ...(remote.region !== undefined ? { region: remote.region } : {}),
    forcePathStyle: remote.forcePathStyle,
    requestTimeoutMs: remote.requestTimeoutMs,
  });
  return { module, backend };
}

/** Options of `turnback push`. */
export interface PushOptions extends GlobalOptions {
  /** Started at a turn's end (background-push.ts): one at a time per store, again until nothing is new, failures to the remote log. */
  background?: boolean;
}

/** `turnback push`: the sealed checkpoints the remote lacks, objects before the manifests naming them. */
export async function pushCommand(options: PushOptions, io: Io): Promise<number> {
  if (options.background === true) return backgroundPush(options, io);
  const context = await loadContext(options, io.invocation);
  const remote = remoteOf(context);
  const store = await openStore(context);
  return withRemote(context, remote, async (module, backend, workspace) => {
    const report = await module.pushCheckpoints(store, backend, workspace);
    io.emit({ location: backend.location, workspace: workspace.id, ...report });
    if (report.pushed.length === 0) io.out(`nothing to push: ${shownText(backend.location)} has every checkpoint of this project (${report.alreadyThere})`);
    else io.out(`pushed ${report.pushed.length} checkpoint${report.pushed.length === 1 ? '' : 's'} to ${shownText(backend.location)}: ${report.objects} file copies, ${sizeText(report.bytes)} in ${report.bundles} bundle${report.bundles === 1 ? '' : 's'}`);
    return EXIT.ok;
  });
}

async function backgroundPush(options: GlobalOptions, io: Io): Promise<number> {
  try {
    const context = await loadContext(options, io.invocation);
    if (context.refusal !== undefined || !context.config.enabled) return EXIT.ok;
    const remote = remoteOf(context);
    await withPushSlot(context.storeDir, async () => {
      const store = await openStore(context);
      await withRemote(context, remote, async (module, backend, workspace) => {
        // Again while a push sent something: a turn that ended during it is sent too.
        for (let round = 0; round < 20; round++) {
          const report = await module.pushCheckpoints(store, backend, workspace);
          if (report.pushed.length === 0) break;
        }
      });
    });
  } catch (error) {
    io.err(`${new Date().toISOString()} turnback push after a turn: ${shownText(error instanceof Error ? error.message : String(error))}`);
    return EXIT.error;
  }
  return EXIT.ok;
}

/** `turnback pull [SESSION]`: the remote's checkpoints of this project (of one agent session) into the local store. */
export async function pullCommand(session: string | undefined, options: GlobalOptions, io: Io): Promise<number> {
  const context = await loadContext(options, io.invocation);
  const remote = remoteOf(context);
  if (session !== undefined && (session.length === 0 || session.length > 200 || /[\u0000-\u001f]/.test(session))) throw new CliExit(EXIT.usage, 'USAGE', 'a session is its id as `turnback list` shows it');
  const store = await openStore(context);
  return withRemote(context, remote, async (module, backend, workspace) => {
    const report = await module.pullCheckpoints(store, backend, workspace, session !== undefined ? { sessionId: session } : {});
    io.emit({ location: backend.location, workspace: workspace.id, ...report });
    if (report.pulled.length === 0) io.out(`nothing to pull from ${shownText(backend.location)}${session !== undefined ? ` for session ${shownText(session)}` : ''} (${report.alreadyHere} already here)`);
    else io.out(`pulled ${report.pulled.length} checkpoint${report.pulled.length === 1 ? '' : 's'} from ${shownText(backend.location)} (${report.objects} file copies); turnback list shows them, turnback undo takes them back`);
    return EXIT.ok;
  });
}

/** Prunes the store's copy on S3 by the config's retain and keep_days (`turnback prune`). */
export async function pruneRemoteStore(context: CliContext, remote: RemoteStoreConfig, dryRun: boolean): Promise<{ location: string; report: Awaited<ReturnType<RemoteModule['pruneRemote']>> }> {
  return withRemote(context, remote, async (module, backend, workspace) => {
    const { retain, keepDays } = context.config.resolved;
    return { location: backend.location, report: await module.pruneRemote(backend, workspace, { retain, keepDays, dryRun }) };
  });
}

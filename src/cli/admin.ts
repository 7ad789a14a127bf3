import { loadContext, openStore, storeExists, type GlobalOptions } from './context.js';
import { writeProjectEnabled, writeUserSwitch } from './config-file.js';
import { EXIT } from './exit-codes.js';
import { CliExit, describeFailure, type Io } from './io.js';
import { pruneRemoteStore } from './remote.js';
import { displayLabel, resolveId, shortId } from './pictures.js';
import { shownPath, shownText } from '../report/escape.js';
import { sizeText } from '../report/size-text.js';

/**
 * `turnback on` / `turnback off`: keeps the switch for this project in the user's config
 * (`[projects."<root>"]`), so no untracked file lands in the repository; in the project's
 * turnback.toml instead with `--project-file`, or when that file already holds `enabled`.
 */
export async function switchCommand(enabled: boolean, options: GlobalOptions & { projectFile?: boolean }, io: Io): Promise<number> {
  const context = await loadContext(options, io.invocation);
  if (context.refusal !== undefined) {
    // Nothing to switch: a project here takes no pictures, and no turnback.toml is written into
    // the home folder or `/`. Switching on cannot work, so that is an error; off already holds.
    io.emit({ enabled: false, why: context.refusal });
    io.out(`checkpoints: off (${context.refusal})`);
    io.err(`turnback: checkpoints are off: ${context.refusal}; a project here takes no pictures`);
    return enabled ? EXIT.error : EXIT.ok;
  }
  const inProject = options.projectFile === true || context.config.project.table.enabled !== undefined;
  const file = inProject ? await writeProjectEnabled(context.projectRoot, enabled) : await writeUserSwitch(context.projectRoot, enabled);
  io.emit({ enabled, file });
  io.out(`checkpoints: ${enabled ? 'on' : 'off'}   (enabled = ${enabled} in ${shownPath(file)}${inProject ? '' : ` for ${shownPath(context.projectRoot)}`})`);
  if (!enabled) io.out(io.style.dim('turnback undo still works on earlier pictures'));
  return EXIT.ok;
}

/** `turnback prune`: clears checkpoints past `retain`, `keep_days` and `max_store_gib`. */
export async function pruneCommand(options: GlobalOptions & { dryRun?: boolean }, io: Io): Promise<number> {
  const context = await loadContext(options, io.invocation);
  if (context.refusal !== undefined) io.err(`turnback: checkpoints are off: ${context.refusal}`);
  if (!(await storeExists(context))) {
    io.emit({ removedCheckpoints: [], removedObjects: 0, freedBytes: 0, cleared: [], keptByGrace: 0, dryRun: options.dryRun === true });
    io.out('no checkpoints in this project');
    return EXIT.ok;
  }
  const r = context.config.resolved;
  const store = await openStore(context);
  const dryRun = options.dryRun === true;
  const report = await store.prune({ retain: r.retain, keepDays: r.keepDays, maxStoreBytes: Math.floor(r.maxStoreGib * 1024 ** 3), dryRun });
  // Then what the kept checkpoints and pictures rest on in git comes into the store (what the server does in its idle time), so it outlives a `git gc`.
  const gitCopies = dryRun || !context.config.enabled || context.refusal !== undefined ? undefined : await store.copyGitBlobsIn();
  // The store's copy on S3 too, by the same retain and keep_days; its failure leaves the local prune done.
  const remote = r.remote === undefined ? undefined : await pruneRemoteStore(context, r.remote, dryRun).catch((error: unknown) => ({ error: describeFailure(error).message }));
  io.emit({ ...report, ...(gitCopies !== undefined ? { gitCopies: { copied: gitCopies.copied, bytes: gitCopies.bytes, left: gitCopies.left, lost: gitCopies.lost } } : {}), ...(remote !== undefined ? { remote } : {}) });
  const byReason = new Map<string, number>();
  for (const c of report.cleared) byReason.set(c.reason, (byReason.get(c.reason) ?? 0) + 1);
  const why = [...byReason].map(([reason, n]) => `${n} ${reason === 'retain' ? `past retain = ${r.retain}` : reason === 'keep-days' ? `older than ${r.keepDays} days` : 'over the store cap'}`).join(', ');
  const cleared = `${report.removedCheckpoints.length} ${report.removedCheckpoints.length === 1 ? 'checkpoint' : 'checkpoints'}${why.length > 0 ? ` (${why})` : ''}, ${report.removedObjects} objects`;
  if (dryRun) io.out(`would clear ${cleared}, freeing at most ${sizeText(report.freedBytes)} (nothing was removed; the max_store_gib cap is not simulated)`);
  else io.out(`cleared ${cleared}, freed ${sizeText(report.freedBytes)}`);
  if (gitCopies !== undefined && gitCopies.copied + gitCopies.left > 0) {
    const lost = gitCopies.lost > 0 ? `; ${gitCopies.lost} git no longer has (their pre-images are lost)` : '';
    io.out(`copied ${gitCopies.copied} ${gitCopies.copied === 1 ? 'pre-image' : 'pre-images'} resting on git's objects into the store (${sizeText(gitCopies.bytes)})${lost}`);
  }
  if (report.keptByGrace > 0) {
    const minutes = Math.round(report.graceMs / 60_000);
    io.out(`${dryRun ? 'would keep' : 'kept'} ${report.keptByGrace} unreferenced ${report.keptByGrace === 1 ? 'object' : 'objects'} younger than ${minutes} ${minutes === 1 ? 'minute' : 'minutes'} (a capture elsewhere may be about to use them); a later prune removes them`);
  }
  if (remote !== undefined && 'error' in remote) {
    io.err(`turnback: the remote store was not pruned: ${shownText(remote.error)}`);
    return EXIT.error;
  }
  if (remote !== undefined) {
    const n = remote.report.removed.length;
    io.out(
      `remote ${shownText(remote.location)}: ${dryRun ? 'would clear' : 'cleared'} ${n} ${n === 1 ? 'checkpoint' : 'checkpoints'} and ${remote.report.bundlesRemoved} ${remote.report.bundlesRemoved === 1 ? 'bundle' : 'bundles'} (${sizeText(remote.report.bytesRemoved)}); ${remote.report.kept} kept` +
        (remote.report.bundlesSpared > 0 ? `; ${remote.report.bundlesSpared} unnamed ${remote.report.bundlesSpared === 1 ? 'bundle' : 'bundles'} younger than an hour kept (a push elsewhere may be about to name them)` : ''),
    );
  }
  return EXIT.ok;
}

/** `turnback verify`: checks every object and manifest; exit 1 when there are problems. */
export async function verifyCommand(options: GlobalOptions, io: Io): Promise<number> {
  const context = await loadContext(options, io.invocation);
  if (context.refusal !== undefined) io.err(`turnback: checkpoints are off: ${context.refusal}`);
  if (!(await storeExists(context))) {
    io.emit({ ok: true, problems: [], stats: { checkpoints: 0, objects: 0, bytes: 0 } });
    io.out('no checkpoints in this project');
    return EXIT.ok;
  }
  const store = await openStore(context);
  const report = await store.verify();
  // The same figure `status` shows: everything under the store folder, not only the objects.
  const onDisk = await store.storeSizeBytes();
  io.emit({ ...report, storeBytes: onDisk });
  io.out(
    `${report.ok ? 'store ok' : `store has ${report.problems.length} ${report.problems.length === 1 ? 'problem' : 'problems'}`}: ${report.stats.checkpoints} checkpoints, ${report.stats.objects} objects (${sizeText(report.stats.bytes)}); ${sizeText(onDisk)} on disk`,
  );
  for (const problem of report.problems) io.out(`  ${problem.kind}${problem.path !== undefined ? `  ${shownPath(problem.path)}` : ''}   ${shownText(problem.detail)}`);
  return report.ok ? EXIT.ok : EXIT.error;
}

/** The keys of `[checkpoints]`, in the order `turnback config` prints them. */
const CONFIG_KEYS = ['enabled', 'dir', 'endpoint', 'region', 'force_path_style', 'request_timeout_seconds', 'retain', 'keep_days', 'max_store_gib', 'max_file_mib', 'max_picture_files', 'max_picture_mib', 'max_picture_seconds', 'max_walk_entries', 'snapshot_cap_mib', 'skip', 'protected', 'copy_credentials'] as const;

/** `turnback config`: the configuration in effect, each value with where it came from. */
export async function configCommand(options: GlobalOptions, io: Io): Promise<number> {
  const context = await loadContext(options, io.invocation);
  const { user, project, resolved } = context.config;
  const rows = CONFIG_KEYS.map((key) => {
    if (key === 'enabled') return { key, value: context.config.enabled, from: context.config.enabledBy ?? 'default (on)' };
    if (key === 'dir') {
      const remote = resolved.remote;
      if (remote !== undefined) return { key, value: remote.location, from: `${project.table.dir !== undefined ? project.file : user.file} (pushed from the local store ${context.storeDir})` };
      return { key, value: context.storeDir, from: context.storeFrom === 'default' ? 'default (the per-project data folder)' : context.storeFrom === 'config' ? (project.table.dir !== undefined ? project.file : user.file) : context.storeFrom };
    }
    if (key === 'endpoint' || key === 'region' || key === 'force_path_style' || key === 'request_timeout_seconds') {
      const remote = resolved.remote;
      const value = remote === undefined ? null : key === 'force_path_style' ? remote.forcePathStyle : key === 'request_timeout_seconds' ? remote.requestTimeoutMs / 1000 : (remote[key] ?? null);
      const from = (project.table as Record<string, unknown>)[key] !== undefined ? project.file : (user.table as Record<string, unknown>)[key] !== undefined ? user.file : resolved.remote === undefined ? 'only with dir = "s3://…"' : key === 'request_timeout_seconds' ? 'default' : "default (the AWS SDK's)";
      return { key, value, from };
    }
    const camel = key.replace(/_([a-z])/g, (_, letter: string) => letter.toUpperCase()) as keyof typeof resolved;
    const from = (project.table as Record<string, unknown>)[key] !== undefined ? project.file : (user.table as Record<string, unknown>)[key] !== undefined ? user.file : 'default';
    return { key, value: resolved[camel], from };
  });
  io.emit({ config: Object.fromEntries(rows.map(({ key, value, from }) => [key, { value, from }])), files: { user: { file: user.file, found: user.found }, project: { file: project.file, found: project.found } } });
  const width = Math.max(...rows.map((row) => `${row.key} = ${JSON.stringify(row.value)}`.length));
  for (const { key, value, from } of rows) io.out(`${`${key} = ${JSON.stringify(value)}`.padEnd(width)}   ${io.style.dim(shownText(from))}`);
  io.out(io.style.dim(`read: ${shownPath(project.file)}${project.found ? '' : ' (none)'}, ${shownPath(user.file)}${user.found ? '' : ' (none)'}`));
  return EXIT.ok;
}

/** `turnback drop ID`: removes one picture; its objects go at the next prune unless something else uses them. */
export async function dropCommand(id: string, options: GlobalOptions, io: Io): Promise<number> {
  const context = await loadContext(options, io.invocation);
  if (!(await storeExists(context))) throw new CliExit(EXIT.nothing, 'NOTHING', 'no checkpoints in this project');
  const store = await openStore(context);
  try {
    const meta = await resolveId(store, id);
    await store.dropCheckpoint(meta.id);
    io.emit({ dropped: meta.id });
    io.out(`dropped ${shortId(meta.id)}  ${displayLabel(meta)}; its copies go at the next prune unless another picture uses them`);
    return EXIT.ok;
  } finally {
    await store.close();
  }
}

import { loadContext, openStore, storeExists, type GlobalOptions } from './context.js';
import { writeProjectEnabled } from './config-file.js';
import { EXIT } from './exit-codes.js';
import type { Io } from './io.js';
import { shownPath, shownText } from '../report/escape.js';
import { sizeText } from '../report/size-text.js';

/** `turnback on` / `turnback off`: writes `enabled` in the project's turnback.toml `[checkpoints]` table. */
export async function switchCommand(enabled: boolean, options: GlobalOptions, io: Io): Promise<number> {
  const context = await loadContext(options);
  if (context.refusal !== undefined) {
    // Nothing to switch: a project here takes no pictures, and no turnback.toml is written into
    // the home folder or `/`. Switching on cannot work, so that is an error; off already holds.
    io.emit({ enabled: false, why: context.refusal });
    io.out(`checkpoints: off (${context.refusal})`);
    io.err(`turnback: checkpoints are off: ${context.refusal}; a project here takes no pictures`);
    return enabled ? EXIT.error : EXIT.ok;
  }
  const file = await writeProjectEnabled(context.projectRoot, enabled);
  io.emit({ enabled, file });
  io.out(`checkpoints: ${enabled ? 'on' : 'off'}   (enabled = ${enabled} in ${file})`);
  if (!enabled) io.out(io.style.dim('turnback undo still works on earlier pictures'));
  return EXIT.ok;
}

/** `turnback prune`: clears checkpoints past `retain`, `keep_days` and `max_store_gib`. */
export async function pruneCommand(options: GlobalOptions, io: Io): Promise<number> {
  const context = await loadContext(options);
  if (context.refusal !== undefined) io.err(`turnback: checkpoints are off: ${context.refusal}`);
  if (!(await storeExists(context))) {
    io.emit({ removedCheckpoints: [], removedObjects: 0, freedBytes: 0, cleared: [] });
    io.out('no checkpoints in this project');
    return EXIT.ok;
  }
  const r = context.config.resolved;
  const store = await openStore(context);
  const report = await store.prune({ retain: r.retain, keepDays: r.keepDays, maxStoreBytes: Math.floor(r.maxStoreGib * 1024 ** 3) });
  io.emit(report);
  const byReason = new Map<string, number>();
  for (const c of report.cleared) byReason.set(c.reason, (byReason.get(c.reason) ?? 0) + 1);
  const why = [...byReason].map(([reason, n]) => `${n} ${reason === 'retain' ? `past retain = ${r.retain}` : reason === 'keep-days' ? `older than ${r.keepDays} days` : 'over the store cap'}`).join(', ');
  io.out(`cleared ${report.removedCheckpoints.length} ${report.removedCheckpoints.length === 1 ? 'checkpoint' : 'checkpoints'}${why.length > 0 ? ` (${why})` : ''}, ${report.removedObjects} objects, freed ${sizeText(report.freedBytes)}`);
  if (report.keptByGrace > 0) {
    const minutes = Math.round(report.graceMs / 60_000);
    io.out(`kept ${report.keptByGrace} unreferenced ${report.keptByGrace === 1 ? 'object' : 'objects'} younger than ${minutes} ${minutes === 1 ? 'minute' : 'minutes'} (a capture elsewhere may be about to use them); a later prune removes them`);
  }
  return EXIT.ok;
}

/** `turnback verify`: checks every object and manifest; exit 1 when there are problems. */
export async function verifyCommand(options: GlobalOptions, io: Io): Promise<number> {
  const context = await loadContext(options);
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

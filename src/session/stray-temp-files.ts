import type { FileSystem } from '../fs/file-system.js';
import type { PlanEntry } from '../restore/plan.js';

// A restore killed before its commit can leave its stage and displaced files beside the paths it
// wrote. A later restore of those paths names them (even when it writes nothing), so a person
// sees what is left; the rollback of a killed restore (interrupted-restore.ts) removes them.

/**
 * Staged or displaced files that an earlier, killed restore left beside the paths this one
 * planned (written or not), project-relative and sorted, leaving out `known` (the ones this
 * restore already reports). Their content is in the store (every restore saves first), so they
 * are reported for a person to remove, never deleted silently and never read as project files.
 */
export async function strayTempFiles(fs: FileSystem, projectRoot: string, entries: readonly PlanEntry[], known: readonly string[]): Promise<string[]> {
  const folders = new Set(entries.map((e) => (e.path.includes('/') ? e.path.slice(0, e.path.lastIndexOf('/')) : '')));
  const seen = new Set(known);
  const strays: string[] = [];
  const sync = fs.sync;
  for (const folder of folders) {
    const abs = folder === '' ? projectRoot : `${projectRoot}/${folder}`;
    // One readdir per touched folder; synchronous when available (a folder listing of a
    // project folder is small, and a restore of many files touches many folders).
    let names: string[];
    try {
      names = sync !== undefined ? sync.readdirSync(abs) : await fs.readdir(abs);
    } catch {
      names = [];
    }
    for (const name of names) {
      const rel = folder === '' ? name : `${folder}/${name}`;
      if ((name.startsWith('.turnback-stage-') || name.startsWith('.turnback-displaced-')) && !seen.has(rel)) strays.push(rel);
    }
  }
  return strays.sort();
}

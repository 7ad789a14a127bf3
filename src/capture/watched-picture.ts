import type { TreeWatcher, WatchAnswer } from '../fs/tree-watcher.js';
import type { ResolvedCoverage } from './coverage.js';
import type { Picture, PictureRecord } from './picture.js';
import type { VouchedChanges } from './scan-types.js';
import { indexKeyOf } from './tracked-files.js';

// How a keeper's pictures use a watcher: the token each picture was taken at, and what the next
// picture may take from the watcher's answer. A picture vouched for entirely (nothing changed and
// git's index is the same file) is the last picture itself; one with a few changes walks only the
// folders the changes name (scan.ts, `changes`); anything the watcher cannot vouch for, or a last
// picture that was cut short, makes the picture a full sweep, as without a watcher.

/** The last picture taken with a token, and the token (a moment before its walk began). */
interface Watched {
  token: string;
  picture: Picture;
  /** git's index file when the walk began: tracked files follow it, and no watcher reports `.git`. */
  indexKey: string;
}

/** What the next picture takes from the watcher. */
export type WatchPlan =
  /** Nothing changed since the last picture: it is this picture. */
  | { kind: 'same'; picture: Picture }
  /** A walk with `changes`, or a full sweep (`changes` undefined); `token` is for the picture it makes. */
  | { kind: 'walk'; changes: VouchedChanges | undefined; token: string | undefined; indexKey: string; answer?: WatchAnswer };

/** The folders a change set may have changed the listing of: each path's folder, and each path itself. */
export function vouchedChanges(paths: readonly string[], replaced: ReadonlySet<string>): VouchedChanges {
  const dirty = new Set<string>();
  for (const p of paths) {
    dirty.add(p);
    const slash = p.lastIndexOf('/');
    dirty.add(slash < 0 ? '' : p.slice(0, slash));
  }
  return { paths: new Set(paths), dirty, replaced };
}

/** One keeper's use of the watcher of its project. */
export class WatchedPictures {
  readonly #root: string;
  /** The coverage and exclusions the pictures are taken with (the verification sweep walks the same). */
  readonly coverage: ResolvedCoverage;
  readonly exclude: readonly string[];
  #last: Watched | undefined;
  /** Pictures planned: the last picture again, a walk of what changed, a full sweep. */
  readonly counts = { same: 0, changes: 0, sweeps: 0 };

  constructor(root: string, coverage: ResolvedCoverage, exclude: readonly string[]) {
    this.#root = root;
    this.coverage = coverage;
    this.exclude = exclude;
  }

  /** The project root. */
  get root(): string {
    return this.#root;
  }

  /**
   * Asks `watcher` what changed since the last picture, when the picture about to be taken starts
   * from that picture's records (`from`); otherwise settles a fresh token for a full sweep. With
   * `holds`, "nothing changed" gives the last picture back only when `holds` says it still holds.
   */
  async plan(watcher: TreeWatcher, from: ReadonlyMap<string, PictureRecord> | undefined, holds?: (picture: Picture) => Promise<boolean>): Promise<WatchPlan> {
    const last = this.#last;
    const indexKey = indexKeyOf(this.#root);
    if (last !== undefined && from !== undefined && from === last.picture.records) {
      const answer = await watcher.changesSince(last.token);
      if (answer.vouched) {
        // Nothing changed in the tree: the last picture is this one, while what it names still
        // holds (`holds`: its stored copies still vouched); otherwise a walk of no change.
        if (answer.paths.length === 0 && indexKey === last.indexKey && (holds === undefined || (await holds(last.picture)))) {
          last.token = answer.token;
          this.counts.same++;
          return { kind: 'same', picture: last.picture };
        }
        this.counts.changes++;
        return { kind: 'walk', changes: vouchedChanges(answer.paths, answer.replaced), token: answer.token, indexKey, answer };
      }
      if (answer.token !== undefined) {
        this.counts.sweeps++;
        return { kind: 'walk', changes: undefined, token: answer.token, indexKey, answer };
      }
    }
    this.counts.sweeps++;
    const settled = await watcher.settle();
    return { kind: 'walk', changes: undefined, token: settled.token, indexKey };
  }

  /** Remembers `picture`, taken after `plan`, for the next one; a picture cut short is never vouched from. */
  taken(plan: WatchPlan, picture: Picture): void {
    if (plan.kind === 'same') return;
    this.#last = plan.token !== undefined && !picture.partial ? { token: plan.token, picture, indexKey: plan.indexKey } : undefined;
  }

  /** The last picture and its token, for the verification sweep. */
  get last(): { token: string; picture: Picture } | undefined {
    return this.#last;
  }

  /** Trusts no earlier token: the next picture is a full sweep (after a disagreement). */
  forget(): void {
    this.#last = undefined;
  }
}

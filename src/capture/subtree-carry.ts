import type { FolderMemo, WholeSubtree } from './scan-memo.js';
import type { StatRecord } from './stat-record.js';
import type { VouchedChanges } from './scan-types.js';

// Taking an untouched subtree whole in a change-set walk (scan.ts): a folder no change lies under
// is carried with every folder below it from the last walk's memo, without a visit to any of them.
// A visit to such a folder would hand back its very memo, its subfolders, its ignored names and
// nothing to list (each is quiet), so the carry adds exactly those, for the whole subtree at once.

export type { WholeSubtree } from './scan-memo.js';

/** The folders a change set touches: every changed or replaced path, and every folder above one. */
export function touchedFolders(changes: VouchedChanges): Set<string> {
  const touched = new Set<string>(['']);
  const note = (p: string): void => {
    for (let at = p; at !== '' && !touched.has(at); ) {
      touched.add(at);
      const slash = at.lastIndexOf('/');
      at = slash < 0 ? '' : at.slice(0, slash);
    }
  };
  for (const p of changes.dirty) note(p);
  for (const p of changes.replaced) note(p);
  return touched;
}

/** What a walk's carry needs to judge a subtree: the last memo, the quiet rule, the repository state. */
export interface CarryContext {
  folders: ReadonlyMap<string, FolderMemo>;
  quiet: (record: StatRecord) => boolean;
  quietEpoch: string | undefined;
  /** What the notes stand on besides the subtree itself (the memo's carry epoch and the quiet epoch). */
  epochs: string;
  isRepository: boolean;
}

/**
 * The summary of the subtree at `rel` (whose memo is `memo`), when it can be carried: every folder
 * below has a memo with its listing (none left unchecked, too deep or unreadable), was listed in
 * the same kind of project (repository or not), and has only quiet records. Notes its answer (and
 * each subfolder's) on the memos, so a later walk asks again only for folders it visited since.
 */
export function wholeOf(rel: string, memo: FolderMemo, ctx: CarryContext): WholeSubtree | undefined {
  const noted = memo.whole;
  if (noted !== undefined && noted.epochs === ctx.epochs) return noted.carryable ? noted.whole : undefined;
  const whole = summarize(rel, memo, ctx);
  memo.whole = whole !== undefined ? { carryable: true, whole, epochs: ctx.epochs } : { carryable: false, epochs: ctx.epochs };
  return whole;
}

function summarize(rel: string, memo: FolderMemo, ctx: CarryContext): WholeSubtree | undefined {
  const listing = memo.listing;
  if (listing === undefined || listing.inRepository !== ctx.isRepository) return undefined;
  if (memo.quiet === undefined || memo.quietEpoch !== ctx.quietEpoch) {
    memo.quiet = memo.records.every((record) => record === undefined || ctx.quiet(record));
    memo.quietEpoch = ctx.quietEpoch;
  }
  if (!memo.quiet) return undefined;
  const children: WholeSubtree[] = [];
  let entries = listing.entries;
  let folders = 1;
  let ignoredNames = memo.ignored?.length ?? 0;
  for (const name of listing.subfolders) {
    const childRel = rel === '' ? name : `${rel}/${name}`;
    const child = ctx.folders.get(childRel);
    if (child === undefined) return undefined;
    const summary = wholeOf(childRel, child, ctx);
    if (summary === undefined) return undefined;
    children.push(summary);
    entries += summary.entries;
    folders += summary.folders;
    ignoredNames += summary.ignoredNames;
  }
  return { rel, memo, children, entries, folders, ignoredNames };
}

/** Adds a carried subtree's memos to a walk's (when it builds a new map of them: scan.ts). */
export function carryWhole(whole: WholeSubtree, into: Map<string, FolderMemo> | undefined): void {
  if (into === undefined) return;
  into.set(whole.rel, whole.memo);
  for (const child of whole.children) carryWhole(child, into);
}

/** Adds a carried subtree's ignored names to a walk's, in the walk's order, looking only where there are some. */
export function carryIgnored(whole: WholeSubtree, ignored: string[]): void {
  if (whole.ignoredNames === 0) return;
  const names = whole.memo.ignored;
  if (names !== undefined) for (const name of names) ignored.push(name);
  for (const child of whole.children) carryIgnored(child, ignored);
}

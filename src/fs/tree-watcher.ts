import * as nodeFs from 'node:fs';
import * as path from 'node:path';

// What a picture asks of a file-system watcher: "what changed under the project since token T",
// answered only when the watcher can vouch for it. The one implementation is watchman's
// (fs/watchman.ts); tests drive pictures through the same interface with a watcher that refuses
// to vouch on demand. Nothing here watches anything itself.

/** Why a watcher does not vouch for an answer: the picture then sweeps the whole tree. */
export type NotVouchedReason =
  /** The watcher was just started, or the token is from before a restart: it never saw that moment. */
  | 'unknown-token'
  /** The kernel's event queue overflowed (or the watcher re-crawled the tree for another reason). */
  | 'overflow'
  /** `/proc/sys/fs/inotify/max_user_watches` is reached: some folder is not watched. */
  | 'watch-limit'
  /** A folder could not be watched (permissions, or it vanished while being watched). */
  | 'unwatchable'
  /** The project is on, or holds, a network or mounted file system whose changes inotify does not see. */
  | 'mount'
  /** A name the watcher cannot report exactly (not valid UTF-8). */
  | 'unreadable-name'
  /** The idle verification sweep found a file the watcher did not report. */
  | 'disagreement'
  /** The watcher is closed, or its service went away or answered with an error. */
  | 'stopped';

/**
 * The watcher's answer to {@link TreeWatcher.changesSince}. Vouched: `paths` are every path under
 * the project (project-relative, `/`-separated) that was created, removed, renamed, written or
 * changed in mode since the token, and `replaced` the ones among them whose entry was created or
 * removed (a folder renamed in or out is one: nothing under it is vouched for). `token` is the
 * moment of the answer, for the next question.
 */
export type WatchAnswer =
  | { vouched: true; token: string; paths: readonly string[]; replaced: ReadonlySet<string> }
  | { vouched: false; token: string | undefined; reason: NotVouchedReason; detail: string };

/** What `turnback status` says about a project's watcher. */
export interface WatcherStatus {
  /** `watching`: its answers are vouched; `not-vouching`: the last answer was not (see `reason`). */
  state: 'watching' | 'not-vouching';
  reason?: NotVouchedReason;
  detail?: string;
  /** The service behind it, e.g. `watchman 4.9.0`. */
  backend: string;
}

/**
 * A recursive watcher of one project tree. Every method settles first: an answer covers every
 * write that had returned to its writer before the call was made (watchman syncs through a
 * cookie file), so a picture taken right after a command never misses a write still in flight.
 */
export interface TreeWatcher {
  /** The canonical project root watched. */
  readonly root: string;
  /** A token for this moment, or why there is none. */
  settle(): Promise<{ token: string } | { token: undefined; reason: NotVouchedReason; detail: string }>;
  /** What changed since `token` (from {@link TreeWatcher.settle} or an earlier answer). */
  changesSince(token: string): Promise<WatchAnswer>;
  /** The state of the last answer. */
  status(): WatcherStatus;
  /** Stops watching; later answers are `stopped`. */
  close(): Promise<void>;
}

/**
 * Network and user-space file systems, by `statfs` type: inotify sees only the changes made
 * through this machine's kernel, so a watcher cannot vouch for them.
 */
const NETWORK_TYPES = new Set(['nfs', 'nfs4', 'cifs', 'smb3', 'smbfs', 'fuse', 'fuseblk', 'ceph', 'afs', '9p', 'virtiofs', 'glusterfs', 'lustre', 'gpfs', 'davfs', 'sshfs']);

/**
 * Why a watcher cannot vouch for `root` because of where it lives: on a network or user-space
 * file system, or with another file system mounted inside it (the mount table, `/proc/self/mountinfo`).
 * `undefined` when neither, or when the mount table cannot be read (not Linux).
 */
export function mountRefusal(root: string, mountInfo?: string): string | undefined {
  let text = mountInfo;
  if (text === undefined) {
    try {
      text = nodeFs.readFileSync('/proc/self/mountinfo', 'utf8');
    } catch {
      return undefined;
    }
  }
  const inside = `${root}${root.endsWith(path.sep) ? '' : path.sep}`;
  let best: { point: string; type: string } | undefined;
  for (const line of text.split('\n')) {
    const fields = line.split(' ');
    const dash = fields.indexOf('-');
    if (fields.length < 5 || dash < 0) continue;
    const point = (fields[4] as string).replace(/\\([0-7]{3})/g, (_, octal: string) => String.fromCharCode(parseInt(octal, 8)));
    const type = (fields[dash + 1] ?? '').split('.')[0] as string;
    if (point.startsWith(inside)) return `${point} is another file system mounted inside the project`;
    if ((root === point || inside.startsWith(point.endsWith('/') ? point : `${point}/`)) && (best === undefined || point.length >= best.point.length)) best = { point, type };
  }
  if (best !== undefined && NETWORK_TYPES.has(best.type)) return `the project is on a ${best.type} file system (${best.point}), whose changes from other machines no watcher sees`;
  return undefined;
}

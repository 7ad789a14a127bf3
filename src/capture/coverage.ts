import * as nodeFs from 'node:fs';
import { homeFolder } from '../core/home.js';
import * as path from 'node:path';
import ignore from 'ignore';
import type { Ignore } from 'ignore';
import { DEFAULTS, MAX_FILE_MIB_CEILING, type Defaults } from '../core/defaults.js';
import { CheckpointError, errnoCode } from '../core/errors.js';
import { readRegularTextSync } from '../fs/regular-file.js';

/** The numeric limits of one picture. Every limit stops the picture early and marks it partial. */
export type CoverageLimits = Pick<Defaults, 'maxFileMib' | 'maxPictureFiles' | 'maxPictureMib' | 'maxPictureSeconds' | 'maxWalkEntries' | 'maxDepth'>;

/** The default limits (the `[checkpoints]` defaults). */
export const DEFAULT_LIMITS: Readonly<CoverageLimits> = Object.freeze({
  maxFileMib: DEFAULTS.maxFileMib,
  maxPictureFiles: DEFAULTS.maxPictureFiles,
  maxPictureMib: DEFAULTS.maxPictureMib,
  maxPictureSeconds: DEFAULTS.maxPictureSeconds,
  maxWalkEntries: DEFAULTS.maxWalkEntries,
  maxDepth: DEFAULTS.maxDepth,
});

/** What a picture covers and how far it may go. Every field is optional. */
export interface CoverageOptions extends Partial<CoverageLimits> {
  /**
   * Extra gitignore-style patterns, relative to the project root, that pictures never cover.
   * @default []
   */
  skip?: readonly string[];
  /**
   * Copy credential files (`.env`, `*.pem`, …) into the owner-only store like any file, instead of
   * recording them uncopied. @default false
   */
  copyCredentials?: boolean;
}

/** {@link CoverageOptions} with every default applied and validated; internals see only this. */
export interface ResolvedCoverage extends Readonly<CoverageLimits> {
  /** The configured skip patterns, as given. */
  readonly skip: readonly string[];
  /** `maxFileMib` in bytes. */
  readonly maxFileBytes: number;
  /** `maxPictureMib` in bytes. */
  readonly maxPictureBytes: number;
  /** True when `path` (project-relative, `/`-separated) matches a `skip` pattern. */
  isSkipped(projectPath: string, isFolder: boolean): boolean;
  /** Whether credential files are copied (`copy_credentials`). */
  readonly copyCredentials: boolean;
  /** True for a file recorded but never copied because it holds credentials (and they are not copied). */
  isUncopiedCredential(projectPath: string): boolean;
}

/**
 * Folder names never walked when the project is not a git repository (no `.git` at its root);
 * in a repository, `.gitignore` decides instead.
 */
export const DEFAULT_SKIPPED_FOLDERS: readonly string[] = Object.freeze([
  'node_modules',
  '.venv',
  'venv',
  'target',
  '__pycache__',
  '.gradle',
  '.next',
]);

/** Largest `.gitignore` read; a larger one leaves its folder unchecked rather than half-applied. */
export const MAX_GITIGNORE_BYTES: number = 1024 * 1024;

const MIB = 1024 * 1024;
/** Skip-pattern tests between resets of the matcher's per-path result cache. */
const SKIP_CACHE_RESET = 4096;

/**
 * Applies defaults and validates coverage options.
 *
 * @example resolveCoverage({ maxFileMib: 10, skip: ['out/'] })
 * @throws CheckpointError `INVALID_CONFIG` for a limit that is not a finite non-negative number (an
 *   integer for counts), or a `skip` that is not an array of non-empty strings.
 */
export function resolveCoverage(options: CoverageOptions = {}): ResolvedCoverage {
  if (typeof options !== 'object' || options === null) {
    throw new CheckpointError('INVALID_CONFIG', 'coverage options must be an object');
  }
  const limits = { ...DEFAULT_LIMITS };
  for (const key of Object.keys(DEFAULT_LIMITS) as (keyof CoverageLimits)[]) {
    const value: unknown = options[key];
    if (value === undefined) continue;
    const integer = key !== 'maxFileMib' && key !== 'maxPictureMib' && key !== 'maxPictureSeconds';
    if (typeof value !== 'number' || !Number.isFinite(value) || value < 0 || (integer && !Number.isInteger(value))) {
      throw new CheckpointError('INVALID_CONFIG', `${key} must be a ${integer ? 'non-negative integer' : 'non-negative number'}`, {
        found: String(value),
      });
    }
    limits[key] = value;
  }
  if (limits.maxFileMib > MAX_FILE_MIB_CEILING) {
    throw new CheckpointError('INVALID_CONFIG', `maxFileMib is at most ${MAX_FILE_MIB_CEILING} (a copy is read into one buffer); larger files are recorded, never copied`);
  }
  const skip: unknown = options.skip ?? [];
  if (!Array.isArray(skip) || !skip.every((p): p is string => typeof p === 'string' && p.length > 0 && !p.includes('\0'))) {
    throw new CheckpointError('INVALID_CONFIG', 'skip must be an array of non-empty gitignore-style patterns');
  }
  let matcher: Ignore | undefined;
  if (skip.length > 0) {
    try {
      matcher = ignore().add(skip);
    } catch (error) {
      throw new CheckpointError('INVALID_CONFIG', 'skip holds a pattern that cannot be parsed', { cause: error });
    }
  }
  if (options.copyCredentials !== undefined && typeof options.copyCredentials !== 'boolean') {
    throw new CheckpointError('INVALID_CONFIG', 'copyCredentials must be true or false');
  }
  const copyCredentials = options.copyCredentials === true;
  const frozenSkip = Object.freeze([...skip]);
  let skipTests = 0;
  return Object.freeze({
    ...limits,
    skip: frozenSkip,
    copyCredentials,
    // An agent's hook secret is never copied, even for those who copy their credentials.
    isUncopiedCredential: (projectPath: string): boolean => (copyCredentials ? isHookSecretPath(projectPath) : isCredentialPath(projectPath)),
    maxFileBytes: Math.floor(limits.maxFileMib * MIB),
    maxPictureBytes: Math.floor(limits.maxPictureMib * MIB),
    isSkipped(projectPath: string, isFolder: boolean): boolean {
      if (matcher === undefined) return false;
      // The `ignore` package remembers every path it tested; this matcher lives as long as the
      // observer, so its memory is bounded by emptying that cache now and then.
      if (++skipTests % SKIP_CACHE_RESET === 0) (matcher as Ignore & { _initCache?: () => void })._initCache?.();
      return matcher.ignores(isFolder ? `${projectPath}/` : projectPath);
    },
  });
}

const CREDENTIAL_EXTENSIONS = ['.pem', '.key', '.p12', '.pfx'];
const ENV_TEMPLATE_SUFFIXES = ['.example', '.sample', '.template'];

/**
 * The files that hold the user's hook secret: the one of this machine alone where `turnback hooks
 * install claude` writes its HTTP hooks, and the server's endpoint file (in the user's state
 * folder, which a project never is — unless `XDG_STATE_HOME` points into one).
 */
const HOOK_SECRET_FILES = ['.claude/settings.local.json', 'turnback/hook-endpoint.json'];

/**
 * True for a file that holds turnback's hook secret (Claude Code's `.claude/settings.local.json`,
 * turnback's `hook-endpoint.json`, in any folder): recorded by pictures, never copied, whatever
 * `copy_credentials` says — a checkpoint is pushed to remotes, and the secret opens the user's
 * hook listener. Case-insensitive.
 *
 * @example isHookSecretPath('.claude/settings.local.json') // true
 */
export function isHookSecretPath(projectPath: string): boolean {
  const lower = projectPath.toLowerCase();
  return HOOK_SECRET_FILES.some((file) => lower === file || lower.endsWith(`/${file}`));
}

/**
 * True for credential files: recorded by pictures, never copied into the store. Matches `.env`,
 * `.env.*` (except names ending `.example`, `.sample` or `.template`), `*.pem`, `*.key`, `*.p12`,
 * `*.pfx`, anything inside a `.secrets` folder, and the hook secret's file ({@link isHookSecretPath}).
 * Case-insensitive, because erring towards "do not copy" is the safe side. Known gaps: `id_rsa`,
 * `.netrc`, `credentials.json` are copied.
 *
 * @example isCredentialPath('config/.env.local') // true
 */
export function isCredentialPath(projectPath: string): boolean {
  // Runs once per new file of a picture: no split, and toLowerCase returns the string itself
  // when it has no upper-case letters.
  const lower = projectPath.toLowerCase();
  if (lower.startsWith('.secrets/') || lower.includes('/.secrets/')) return true;
  if (lower.endsWith('.json') && isHookSecretPath(lower)) return true;
  const name = lower.slice(lower.lastIndexOf('/') + 1);
  if (name.charCodeAt(0) !== 46 /* . */ && !CREDENTIAL_EXTENSIONS.some((ext) => name.endsWith(ext))) return false;
  if (name === '.env') return true;
  if (name.startsWith('.env.')) return !ENV_TEMPLATE_SUFFIXES.some((suffix) => name.endsWith(suffix));
  return CREDENTIAL_EXTENSIONS.some((ext) => name.length > ext.length && name.endsWith(ext));
}

/** Why a workspace takes no pictures. */
export interface WorkspaceRefusal {
  /** `home`: the home folder; `root`: the file-system root; `not-a-directory`: missing or not a folder. */
  reason: 'home' | 'root' | 'not-a-directory';
  /** A human sentence, e.g. "the project is your home folder". */
  detail: string;
}

/**
 * Says why a project root may not take pictures, or `undefined` when it may. A project rooted at
 * the home folder or at `/` would picture far more than a project, so it is refused outright.
 * Both paths are compared canonically (symlinks resolved) when they exist.
 *
 * @example workspaceRefusal(homeFolder()) // { reason: 'home', detail: 'the project is your home folder' }
 */
export function workspaceRefusal(projectRoot: string, homeDir: string = homeFolder()): WorkspaceRefusal | undefined {
  let canonical: string;
  try {
    canonical = nodeFs.realpathSync(path.resolve(projectRoot));
    if (!nodeFs.statSync(canonical).isDirectory()) throw new Error('not a folder');
  } catch {
    return { reason: 'not-a-directory', detail: `the project is not a folder: ${projectRoot}` };
  }
  if (path.parse(canonical).root === canonical) {
    return { reason: 'root', detail: `the project is the root folder (${canonical})` };
  }
  let home = path.resolve(homeDir);
  try {
    home = nodeFs.realpathSync(home);
  } catch {
    // A home folder that does not exist cannot be the project; compare the spelled path anyway.
  }
  if (canonical === home) return { reason: 'home', detail: 'the project is your home folder' };
  return undefined;
}

/**
 * One folder's parsed `.gitignore`, linked to the frames of its ancestors. Frames are immutable,
 * so sibling folders share their parent's chain.
 */
export interface IgnoreFrame {
  /** Project-relative folder holding the `.gitignore` (`''` for the root). */
  readonly base: string;
  /** The parsed rules. */
  readonly rules: Ignore;
  /** The nearest ancestor frame. */
  readonly parent: IgnoreFrame | undefined;
  /**
   * The chain's identity across processes: each `.gitignore` of the chain by folder, size,
   * mtime (ns) and inode, the same key that decides whether a file is parsed again.
   */
  readonly key: string;
}

/** The chain key of no `.gitignore` at all. */
export const NO_RULES_KEY = '';

/** The {@link IgnoreFrame.key} of a chain (`''` for none). */
export function chainKeyOf(frame: IgnoreFrame | undefined): string {
  return frame === undefined ? NO_RULES_KEY : frame.key;
}

/** The outcome of loading one folder's `.gitignore`. */
export type IgnoreLoad =
  | { ok: true; frame: IgnoreFrame | undefined }
  | { ok: false; reason: 'gitignore-unusable'; detail: string };

interface CachedRules {
  key: string;
  rules: Ignore | undefined;
  /** The last frame built from these rules; reused while its parent is the same object. */
  frame?: IgnoreFrame;
}

/**
 * Loads `.gitignore` files folder by folder during a walk and answers "is this path ignored" the
 * way git does: the deepest `.gitignore` with an opinion wins, each file's rules are relative to
 * its own folder, and the last matching line (negations included) decides within one file.
 *
 * Parsed rules are cached per folder, keyed by the file's size, mtime and inode, so a stack kept
 * across pictures re-parses only edited files.
 *
 * Limit within the `ignore` package: each file's rules also treat a path as ignored when that
 * file ignores one of its parent folders, so a deeper `.gitignore` that re-includes a folder an
 * outer one excluded does not re-include that folder's files.
 */
export class IgnoreStack {
  readonly #cache = new Map<string, CachedRules>();
  /** Per folder, the frame chain the last scan used there. */
  readonly #frames = new Map<string, IgnoreFrame | undefined>();
  /** Per folder, the chain key a scan of an earlier process used there (see {@link IgnoreStack.seed}). */
  #seeded: ReadonlyMap<string, string> | undefined;
  #epoch = 0;
  #coverage: unknown;

  /**
   * Grows whenever some folder's rule chain (or the coverage in use) differs from the last scan
   * that visited it: ignore decisions taken at an equal epoch still hold where the chain is the
   * same object.
   */
  get epoch(): number {
    return this.#epoch;
  }

  /** Notes the coverage rules a scan uses; a different one invalidates earlier decisions. */
  useCoverage(coverage: unknown): void {
    if (this.#coverage === coverage) return;
    this.#coverage = coverage;
    this.#epoch++;
  }

  /**
   * Carries the stack over to `coverage`, the very rules it was used with in a new object (the
   * next command of a server process): unlike {@link IgnoreStack.useCoverage}, the decisions
   * taken so far still hold.
   */
  carryOver(coverage: unknown): void {
    if (this.#coverage !== undefined) this.#coverage = coverage;
  }

  /**
   * Empties the per-path result caches of every parsed rule set. The `ignore` package remembers
   * each path it has tested (memory growing with the tree, about 170 bytes per file); a scan
   * never tests a path twice, so it calls this as it goes. Uses the package's own cache reset
   * when present; without it only the memory saving is lost.
   */
  trimCaches(): void {
    for (const cached of this.#cache.values()) {
      const rules = cached.rules as (Ignore & { _initCache?: () => void }) | undefined;
      if (typeof rules?._initCache === 'function') rules._initCache();
    }
  }

  /**
   * Records the chain a scan uses for a folder; true when it is the very chain the last scan
   * that visited the folder used (in this process, or, for a first visit, the chain key seeded
   * from an earlier process's scan).
   */
  noteFrame(folderRel: string, frame: IgnoreFrame | undefined): boolean {
    if (this.#frames.has(folderRel)) {
      if (this.#frames.get(folderRel) === frame) return true;
      this.#epoch++;
    } else if (this.#seeded !== undefined) {
      const seeded = this.#seeded.get(folderRel);
      if (seeded !== undefined) {
        this.#frames.set(folderRel, frame);
        if (seeded === chainKeyOf(frame)) return true;
        this.#epoch++;
        return false;
      }
    }
    this.#frames.set(folderRel, frame);
    return false;
  }

  /**
   * The chain key the last scan used per folder, for an earlier-process seed of the next one
   * ({@link IgnoreStack.seed}).
   */
  chainKeys(): Map<string, string> {
    const keys = new Map<string, string>();
    for (const [folderRel, frame] of this.#frames) keys.set(folderRel, chainKeyOf(frame));
    return keys;
  }

  /**
   * Seeds a fresh stack with what an earlier process's scan saw: its chain key per folder, under
   * `coverage`. A first visit whose chain has the seeded key counts as the same chain, so ignore
   * decisions that scan took still hold where no `.gitignore` of the chain changed. Only a stack
   * no scan used yet can be seeded; returns the epoch those decisions hold at.
   */
  seed(coverage: unknown, keys: ReadonlyMap<string, string>): number {
    if (this.#coverage === undefined && this.#frames.size === 0) {
      this.#coverage = coverage;
      this.#seeded = keys;
    }
    return this.#epoch;
  }

  /**
   * Reads `<folderAbs>/.gitignore` (the caller has seen it listed) and returns the frame to use
   * inside the folder. An unusable file (not a regular file, e.g. a symlink; unreadable; over
   * 1 MiB; or holding an ambiguous `***` line) yields `ok: false`: the folder must stay unchecked.
   */
  load(parent: IgnoreFrame | undefined, folderRel: string, folderAbs: string): IgnoreLoad {
    const file = path.join(folderAbs, '.gitignore');
    const shown = folderRel === '' ? '.gitignore' : `${folderRel}/.gitignore`;
    let stats: nodeFs.BigIntStats;
    try {
      stats = nodeFs.lstatSync(file, { bigint: true });
    } catch (error) {
      if (errnoCode(error) === 'ENOENT') return { ok: true, frame: parent };
      return unusable(`${shown} cannot be read (${errnoCode(error) ?? 'error'})`);
    }
    if (stats.isSymbolicLink()) return unusable(`${shown} is a symlink`);
    if (!stats.isFile()) return unusable(`${shown} is not a regular file`);
    if (stats.size > BigInt(MAX_GITIGNORE_BYTES)) return unusable(`${shown} is over 1 MiB`);
    const key = `${stats.size}:${stats.mtimeNs}:${stats.ino}`;
    let cached = this.#cache.get(folderRel);
    if (cached?.key !== key) {
      let text: string;
      try {
        text = readRegularTextSync(file);
      } catch (error) {
        return unusable(`${shown} cannot be read (${errnoCode(error) ?? 'error'})`);
      }
      if (/^\s*[^#\s]*\*\*\*/m.test(text)) return unusable(`${shown} holds an ambiguous pattern (***)`);
      let rules: Ignore | undefined;
      try {
        const parsed = ignore().add(text);
        // A file of only comments and blank lines adds no frame, which keeps lookups short.
        rules = /^\s*[^#\s]/m.test(text) ? parsed : undefined;
      } catch {
        return unusable(`${shown} holds a pattern that cannot be parsed`);
      }
      cached = { key, rules };
      this.#cache.set(folderRel, cached);
    }
    if (cached.rules === undefined) return { ok: true, frame: parent };
    // The same object while nothing above changed, so scans can compare chains by identity.
    if (cached.frame === undefined || cached.frame.parent !== parent) {
      cached.frame = { base: folderRel, rules: cached.rules, parent, key: `${chainKeyOf(parent)}\u0000${folderRel}\u0000${key}` };
    }
    return { ok: true, frame: cached.frame };
  }
}

function unusable(detail: string): IgnoreLoad {
  return { ok: false, reason: 'gitignore-unusable', detail };
}

/**
 * True when `projectPath` is ignored by the `.gitignore` chain ending at `frame`.
 * `isFolder` matters: `build/` patterns match folders only.
 */
export function isIgnoredBy(frame: IgnoreFrame | undefined, projectPath: string, isFolder: boolean): boolean {
  for (let current = frame; current !== undefined; current = current.parent) {
    const relative = current.base === '' ? projectPath : projectPath.slice(current.base.length + 1);
    const result = current.rules.test(isFolder ? `${relative}/` : relative);
    if (result.ignored) return true;
    if (result.unignored) return false;
  }
  return false;
}

// Deterministic project trees for the picture benchmarks (seeded PRNG: the same seed gives the same tree).
import * as fs from 'node:fs';
import * as path from 'node:path';

/** mulberry32: small, fast, seeded; good enough for generating test data. */
export function mulberry32(seed) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const WORDS = [
  'const', 'let', 'function', 'return', 'import', 'export', 'from', 'await', 'async', 'if', 'else', 'for', 'while', 'value',
  'index', 'result', 'error', 'options', 'config', 'path', 'file', 'data', 'buffer', 'length', 'string', 'number', 'true',
  'false', 'null', 'undefined', 'this', 'new', 'class', 'interface', 'type', 'extends', '=', '=>', '{', '}', '(', ')', ';',
  'map', 'filter', 'reduce', 'push', 'items', 'user', 'request', 'response', 'handler', 'state', 'props', 'render', 'test',
];
const FOLDER_NAMES = ['src', 'lib', 'core', 'utils', 'components', 'api', 'models', 'views', 'tests', 'docs', 'assets', 'styles', 'server', 'client', 'common', 'internal'];
const EXTENSIONS = ['.ts', '.js', '.json', '.md', '.css', '.tsx', '.py', '.txt'];

/** Source-like text: compresses roughly like real code (not trivially, not at all). */
function textPool(rng, bytes) {
  const parts = [];
  let size = 0;
  let line = '';
  while (size < bytes) {
    const word = WORDS[Math.floor(rng() * WORDS.length)];
    line += (line ? ' ' : '  '.repeat(Math.floor(rng() * 4))) + word + (rng() < 0.08 ? String(Math.floor(rng() * 1000)) : '');
    if (line.length > 40 + rng() * 60) {
      parts.push(line, '\n');
      size += line.length + 1;
      line = '';
    }
  }
  return Buffer.from(parts.join(''), 'latin1');
}

function randomPool(rng, bytes) {
  const buf = Buffer.allocUnsafe(bytes);
  for (let i = 0; i + 4 <= bytes; i += 4) buf.writeUInt32LE(Math.floor(rng() * 4294967296), i);
  return buf;
}

/** Log-uniform integer in [lo, hi]: many small files, few big ones, like a real project. */
function logUniform(rng, lo, hi) {
  return Math.round(Math.exp(Math.log(lo) + rng() * (Math.log(hi) - Math.log(lo))));
}

/**
 * Writes a tree of `files` files under `root` (which must exist and be empty).
 * Realistic mode: most files 200 B–8 KB of source-like text, `bigFiles` of 50–500 KB (half text,
 * half incompressible), folders nested up to `maxDepth`, a root `.gitignore` ignoring `build/`
 * and `*.log`, with `ignoredFiles` files under `build/` and a few `.log` files.
 * Tiny mode: 16–64 byte files (fast to generate), same folder shape.
 *
 * @returns {{ files: string[], covered: string[], bytes: number, folders: number }}
 *   `covered` are the files a picture (and git) should see: not ignored.
 */
export function generateTree(root, options = {}) {
  const { files: fileCount = 10_000, seed = 1, maxDepth = 6, tiny = false, bigFiles = 25, ignoredFiles = 300, logFiles = 20 } = options;
  const rng = mulberry32(seed);
  const folderCount = options.folders ?? Math.max(8, Math.round(fileCount / 14));
  const folders = [{ rel: '', depth: 0 }];
  for (let k = 0; folders.length < folderCount; k++) {
    const parent = folders[Math.floor(rng() * folders.length)];
    if (parent.depth >= maxDepth) continue;
    const name = `${FOLDER_NAMES[Math.floor(rng() * FOLDER_NAMES.length)]}${k}`;
    folders.push({ rel: parent.rel === '' ? name : `${parent.rel}/${name}`, depth: parent.depth + 1 });
  }
  for (const folder of folders) if (folder.rel !== '') fs.mkdirSync(path.join(root, folder.rel), { recursive: true });
  const buildFolders = ['build', 'build/out', 'build/out/chunks', 'build/cache'];
  for (const folder of buildFolders) fs.mkdirSync(path.join(root, folder), { recursive: true });
  fs.writeFileSync(path.join(root, '.gitignore'), 'build/\n*.log\n');

  const text = tiny ? undefined : textPool(rng, 1024 * 1024);
  const random = tiny ? undefined : randomPool(rng, 512 * 1024);
  const all = ['.gitignore'];
  const covered = ['.gitignore'];
  let bytes = 16;
  const write = (rel, size, big) => {
    const header = Buffer.from(`// ${rel} #${seed}\n`, 'latin1');
    let body;
    if (tiny) body = Buffer.from('x'.repeat(Math.max(0, size - header.length)), 'latin1');
    else if (big) {
      const half = size >> 1;
      const t = Math.floor(rng() * (text.length - half));
      const r = Math.floor(rng() * (random.length - (size - half)));
      body = Buffer.concat([text.subarray(t, t + half), random.subarray(r, r + size - half)]);
    } else {
      const off = Math.floor(rng() * (text.length - size));
      body = text.subarray(off, off + Math.max(0, size - header.length));
    }
    fs.writeFileSync(path.join(root, rel), Buffer.concat([header, body]));
    bytes += header.length + body.length;
    all.push(rel);
  };
  const regular = fileCount - 1 - ignoredFiles - logFiles;
  for (let i = 0; i < regular; i++) {
    const folder = folders[Math.floor(rng() * folders.length)];
    const name = `f${i}${EXTENSIONS[Math.floor(rng() * EXTENSIONS.length)]}`;
    const rel = folder.rel === '' ? name : `${folder.rel}/${name}`;
    const big = !tiny && i % Math.max(1, Math.floor(regular / Math.max(1, bigFiles))) === 7 && bigFiles > 0;
    const size = tiny ? 16 + Math.floor(rng() * 49) : big ? logUniform(rng, 50 * 1024, 500 * 1024) : logUniform(rng, 200, 8 * 1024);
    write(rel, size, big);
    covered.push(rel);
  }
  for (let i = 0; i < ignoredFiles; i++) {
    const folder = buildFolders[i % buildFolders.length];
    write(`${folder}/b${i}.js`, tiny ? 32 : logUniform(rng, 200, 8 * 1024), false);
  }
  for (let i = 0; i < logFiles; i++) {
    const folder = folders[Math.floor(rng() * folders.length)];
    write(folder.rel === '' ? `run${i}.log` : `${folder.rel}/run${i}.log`, tiny ? 32 : logUniform(rng, 200, 4 * 1024), false);
  }
  return { files: all, covered, bytes, folders: folders.length + buildFolders.length };
}

/**
 * Edits `count` covered files in place (appends a line), chosen deterministically from `round`.
 * @returns the edited project-relative paths.
 */
export function editFiles(root, covered, count, round) {
  const edited = [];
  const candidates = covered.filter((p) => p !== '.gitignore');
  for (let k = 0; k < count; k++) {
    const rel = candidates[(round * 7919 + k * 104729) % candidates.length];
    if (edited.includes(rel)) continue;
    fs.appendFileSync(path.join(root, rel), `// edit ${round}.${k}\n`);
    edited.push(rel);
  }
  return edited;
}

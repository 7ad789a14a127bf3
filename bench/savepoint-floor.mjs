// The floor under a savepoint restore: the system calls it makes per file, made from plain Node
// with no turnback code around them (no plan, no transaction log, no lock, journal or manifest).
// A reference for how much of a restore is Node and the kernel, and how much is turnback.
import { createHash } from 'node:crypto';
import * as fs from 'node:fs';
import * as path from 'node:path';
import xxhash from 'xxhash-wasm';

const { h64Raw } = await xxhash();
const READ = fs.constants.O_RDONLY | fs.constants.O_NOFOLLOW | fs.constants.O_NONBLOCK;

/** The plan's and the guard's read: lstat, open, fstat, read, close, and the content hash. */
function readAndHash(file) {
  fs.lstatSync(file, { bigint: true });
  const fd = fs.openSync(file, READ);
  try {
    const stats = fs.fstatSync(fd, { bigint: true });
    const buffer = Buffer.allocUnsafe(Number(stats.size) + 1);
    const bytes = buffer.subarray(0, fs.readSync(fd, buffer, 0, buffer.length, 0));
    h64Raw(bytes);
    return bytes;
  } finally {
    fs.closeSync(fd);
  }
}

/**
 * Writes `copy`'s files (`names`, project paths) into a pack file under `scratch`, the stand-in
 * for the store's stored copies. Not timed.
 */
export function packOf(copy, names, scratch) {
  const pack = path.join(scratch, 'pack');
  const fd = fs.openSync(pack, 'w');
  const at = [];
  let offset = 0;
  for (const name of names) {
    const bytes = fs.readFileSync(path.join(copy, name));
    fs.writeSync(fd, bytes, 0, bytes.length, offset);
    at.push({ offset, length: bytes.length });
    offset += bytes.length;
  }
  fs.closeSync(fd);
  return { pack, at };
}

/**
 * Writes the packed copies back over `project` with a restore's calls: each stored copy read and
 * its SHA-256 taken; each destination read and hashed (the plan); then per file the folder checked
 * (lstat, readlink of its held descriptor), the destination read and hashed again (the guard),
 * saved into a pack and a journal line, the stage written in the inode the last original left,
 * and swapped in (link, rename); the last spare removed.
 */
export function bareRestore(project, names, { pack, at }, scratch) {
  const packFd = fs.openSync(pack, 'r');
  const copies = at.map(({ offset, length }) => {
    const bytes = Buffer.allocUnsafe(length);
    fs.readSync(packFd, bytes, 0, length, offset);
    createHash('sha256').update(bytes).digest('hex');
    return bytes;
  });
  fs.closeSync(packFd);
  for (const name of names) readAndHash(path.join(project, name));
  const saved = fs.openSync(path.join(scratch, 'saved'), 'w');
  const journal = fs.openSync(path.join(scratch, 'journal'), 'w');
  const held = new Map();
  let spare;
  try {
    names.forEach((name, i) => {
      const dir = path.dirname(path.join(project, name));
      if (!held.has(dir)) held.set(dir, fs.openSync(dir, fs.constants.O_RDONLY | fs.constants.O_DIRECTORY | fs.constants.O_NOFOLLOW));
      const through = `/proc/self/fd/${held.get(dir)}`;
      fs.lstatSync(dir);
      fs.readlinkSync(through);
      const dest = `${through}/${path.basename(name)}`;
      const original = readAndHash(dest);
      fs.writeSync(saved, original);
      fs.writeSync(journal, `${JSON.stringify({ op: 'before', path: name, size: original.length })}\n`);
      const stage = `${through}/.stage-${i}`;
      let fd;
      if (spare === undefined) fd = fs.openSync(stage, fs.constants.O_WRONLY | fs.constants.O_CREAT | fs.constants.O_EXCL, 0o644);
      else {
        fs.renameSync(spare, stage);
        fd = fs.openSync(stage, fs.constants.O_WRONLY | fs.constants.O_NOFOLLOW);
      }
      const bytes = copies[i];
      fs.writeSync(fd, bytes, 0, bytes.length, 0);
      fs.ftruncateSync(fd, bytes.length);
      fs.closeSync(fd);
      spare = `${through}/.kept-${i}`;
      fs.linkSync(dest, spare);
      fs.renameSync(stage, dest);
    });
    if (spare !== undefined) fs.unlinkSync(spare);
  } finally {
    for (const fd of held.values()) fs.closeSync(fd);
    fs.closeSync(saved);
    fs.closeSync(journal);
  }
}

// Applies lists of changes to a project tree, as another process (an agent's command) would:
// `node tree-changes.mjs ROOT OUTSIDE`, then one JSON list of operations per line on stdin, each
// answered by `done` on stdout once applied (the process stays, so a step costs no Node start).
// An operation that cannot apply (its path is missing, a folder is in the way) is skipped: the
// tree is whatever the operations left.
import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import * as readline from 'node:readline';

const [root, outside] = process.argv.slice(2);
const at = (rel) => path.join(root, ...rel.split('/'));
let serial = 0;

for await (const line of readline.createInterface({ input: process.stdin })) {
  for (const op of JSON.parse(line)) apply(op);
  process.stdout.write('done\n');
}

function apply(op) {
  try {
    switch (op.op) {
      case 'write':
        fs.mkdirSync(path.dirname(at(op.path)), { recursive: true });
        fs.writeFileSync(at(op.path), op.data);
        break;
      case 'append':
        fs.appendFileSync(at(op.path), op.data);
        break;
      case 'same-second': {
        // Two writes of the same size, the second with the first one's mtime put back: no stat can tell them apart.
        fs.writeFileSync(at(op.path), op.data);
        const { atime, mtime } = fs.statSync(at(op.path));
        fs.writeFileSync(at(op.path), op.data.split('').reverse().join(''));
        fs.utimesSync(at(op.path), atime, mtime);
        break;
      }
      case 'rm':
        fs.rmSync(at(op.path), { recursive: true });
        break;
      case 'mkdir':
        fs.mkdirSync(at(op.path), { recursive: true });
        break;
      case 'rename':
        fs.mkdirSync(path.dirname(at(op.to)), { recursive: true });
        fs.renameSync(at(op.from), at(op.to));
        break;
      case 'chmod':
        fs.chmodSync(at(op.path), op.mode);
        break;
      case 'symlink':
        fs.symlinkSync(op.target, at(op.path));
        break;
      case 'flap':
        // One name made and removed again and again, ending made or not.
        for (let i = 0; i < op.times; i++) {
          fs.writeFileSync(at(op.path), `flap ${i}`);
          if (i < op.times - 1 || !op.keep) fs.rmSync(at(op.path));
        }
        break;
      case 'rename-out': {
        const away = path.join(outside, `out-${process.pid}-${serial++}`);
        fs.renameSync(at(op.path), away);
        // Written after it left: never a project path again.
        fs.writeFileSync(path.join(away, 'after-leaving.txt'), 'x');
        break;
      }
      case 'rename-in': {
        // A nested tree made outside the project, then moved in whole.
        const made = path.join(outside, `in-${process.pid}-${serial++}`);
        fs.mkdirSync(path.join(made, 'deep', 'deeper'), { recursive: true });
        fs.writeFileSync(path.join(made, 'top.txt'), 'top');
        fs.writeFileSync(path.join(made, 'deep', 'deeper', 'leaf.txt'), op.data);
        fs.mkdirSync(path.dirname(at(op.path)), { recursive: true });
        fs.renameSync(made, at(op.path));
        break;
      }
      // git's own changes to a committed project's index (the property's git variant).
      case 'git-add':
        git(['add', '--', op.path]);
        break;
      case 'git-commit':
        git(['add', '-A']);
        git(['commit', '-qm', `step ${serial++}`, '--allow-empty']);
        break;
      case 'git-rm-cached':
        git(['rm', '-q', '--cached', '--', op.path]);
        break;
      case 'git-refresh':
        // The index written again with new stat data only (what `git status` does).
        git(['update-index', '-q', '--really-refresh']);
        break;
      default:
        throw new Error(`unknown operation ${op.op}`);
    }
  } catch (error) {
    // ELOOP: a write through a symlink made to point at itself.
    if (!['ENOENT', 'ENOTDIR', 'EISDIR', 'EEXIST', 'ENOTEMPTY', 'EINVAL', 'ELOOP'].includes(error.code)) throw error;
  }
}

/** git in the project, its output dropped; a command that fails (a path not tracked) is skipped like any other operation. */
function git(args) {
  try {
    execFileSync('git', ['-c', 'user.name=t', '-c', 'user.email=t@t.invalid', ...args], { cwd: root, stdio: 'ignore' });
  } catch (error) {
    if (typeof error.status !== 'number') throw error;
  }
}

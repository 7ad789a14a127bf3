import * as fs from 'node:fs';

/**
 * A tree listed by the kernel's bytes, for names that are not valid UTF-8: the hex of each path
 * (`/`-joined bytes) → type, mode and content, or link target (hex too); `.git` left out.
 */
export function byteListing(root: Buffer): Record<string, string> {
  const out: Record<string, string> = {};
  const walk = (dir: Buffer, rel: Buffer | undefined): void => {
    for (const name of fs.readdirSync(dir, { encoding: 'buffer' })) {
      if (name.toString() === '.git') continue;
      const abs = Buffer.concat([dir, Buffer.from('/'), name]);
      const r = rel === undefined ? name : Buffer.concat([rel, Buffer.from('/'), name]);
      const st = fs.lstatSync(abs);
      if (st.isSymbolicLink()) out[r.toString('hex')] = `link:${fs.readlinkSync(abs, { encoding: 'buffer' }).toString('hex')}`;
      else if (st.isDirectory()) walk(abs, r);
      else out[r.toString('hex')] = `file:${(st.mode & 0o7777).toString(8)}:${fs.readFileSync(abs).toString('hex')}`;
    }
  };
  walk(root, undefined);
  return out;
}

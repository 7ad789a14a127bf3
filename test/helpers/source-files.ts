// The product's own source, for tests that read the code itself (which files read the home
// folder, which environment variables src/ reads): one walker, used by each such test.
import { readdir } from 'node:fs/promises';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';

/** The repository's src/ folder. */
export const srcFolder = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..', 'src');

/** Every `.ts` file under `dir` (default src/), at any depth. */
export async function sourceFiles(dir: string = srcFolder): Promise<string[]> {
  const files: string[] = [];
  for (const entry of await readdir(dir, { withFileTypes: true })) {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) files.push(...(await sourceFiles(full)));
    else if (entry.name.endsWith('.ts')) files.push(full);
  }
  return files;
}

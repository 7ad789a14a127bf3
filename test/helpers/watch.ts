import { watch } from 'node:fs';

/**
 * Resolves once `check` holds, asking it at the start and again after every change inside
 * `folder` (fs.watch): for what another process does there — a background push noting its end,
 * a log line, a server's start file. It sets no timer: a change that never comes is the test's
 * own time-out (vitest's, which names the test); `what` names the wait when `check` throws.
 */
export function whenFolderSays(folder: string, check: () => boolean | Promise<boolean>, what: string): Promise<void> {
  return new Promise((resolve, reject) => {
    let done = false;
    let asking = false;
    let askAgain = false;
    const watcher = watch(folder, { recursive: false }, () => void ask());
    function finish(error?: Error): void {
      if (done) return;
      done = true;
      watcher.close();
      if (error === undefined) resolve();
      else reject(error);
    }
    async function ask(): Promise<void> {
      if (done) return;
      // One question at a time; a change during it asks once more after.
      if (asking) {
        askAgain = true;
        return;
      }
      asking = true;
      try {
        do {
          askAgain = false;
          if (await check()) return finish();
        } while (askAgain && !done);
      } catch (error) {
        finish(new Error(`while waiting for ${what}: ${error instanceof Error ? error.message : String(error)}`));
      } finally {
        asking = false;
      }
    }
    void ask();
  });
}

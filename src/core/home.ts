import * as os from 'node:os';

// The person's home folder, read from the environment the code is given rather than from the
// process's C environment. `os.homedir()` asks libuv, which reads HOME from the C environment:
// inside the per-user command server that is the HOME of whichever command started the server,
// not the HOME of the person whose command is being served (src/server/request-env.ts gives each
// served command its own `process.env`, which libuv never sees). Every home folder in src/ comes
// from here.

/**
 * The home folder of `env`: its HOME when set and not empty, else the account's home folder from
 * the user database (what `os.homedir()` falls back to when HOME is unset), else `os.homedir()`
 * where there is no user database (Windows).
 *
 * @example homeFolder({ HOME: '/home/ada' }) // '/home/ada'
 */
export function homeFolder(env: NodeJS.ProcessEnv = process.env): string {
  const home = env.HOME;
  if (home !== undefined && home !== '') return home;
  if (process.platform === 'win32') return os.homedir();
  try {
    return os.userInfo().homedir;
  } catch {
    // No entry for this uid (a container's arbitrary user): libuv's answer, whatever it is.
    return os.homedir();
  }
}

import { unlinkSync } from 'node:fs';
import * as net from 'node:net';

// Binding the command socket: a live server's socket is kept (the caller leaves quietly); a dead
// one's file, which nobody answers, is removed and the socket bound again.

/**
 * `server` listening on `socketPath`; `false` when another live server already listens there.
 * @throws the listen error for anything but a socket in use.
 */
export function listenOnSocket(server: net.Server, socketPath: string): Promise<boolean> {
  return new Promise<boolean>((resolve, reject) => {
    const listen = (retry: boolean): void => {
      server.once('error', (error: NodeJS.ErrnoException) => {
        if (error.code !== 'EADDRINUSE') return reject(error);
        // Taken again between removing a dead server's file and binding: another server won.
        if (!retry) return resolve(false);
        const probe = net.connect(socketPath);
        probe.once('connect', () => {
          probe.destroy();
          resolve(false);
        });
        probe.once('error', () => {
          try {
            unlinkSync(socketPath);
          } catch {
            // Gone already.
          }
          listen(false);
        });
      });
      server.listen(socketPath, () => resolve(true));
    };
    listen(true);
  });
}

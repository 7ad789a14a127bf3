import type { Socket } from 'node:net';
import { PROTOCOL_VERSION } from './address.js';
import { readFrames, sendFrame, type ServerFrame } from './frames.js';
import type { ServerLife } from './life.js';
import { requestOf, type Request } from './request.js';
import { requestVariables, withEnvironment } from './request-env.js';
import { INTERRUPTS, type ChildEnd, type ProcessSeam } from './seam.js';
import { watchHinted } from './watching.js';

// One client's connection to the command socket: `hello`, then one request (or a `ping`, a
// `stop`), served on a process seam whose output goes back as frames, with the client's own
// environment as the command's `process.env` (request-env.ts). Connections are served
// independently: one client's long `run` never holds up another's command.

/** Runs one command line on a served process seam and returns its exit code (main.ts's `execute`). */
export type Executor = (argv: readonly string[], seam: ProcessSeam) => Promise<number>;

/** Raised in a served command when its client went away (killed, or its terminal closed). */
export class ClientGone extends Error {
  constructor() {
    super('the turnback process that asked for this command is gone');
    this.name = 'ClientGone';
  }
}

/** Serves the client on `socket` until its command ends or it hangs up. */
export function serveConnection(socket: Socket, life: ServerLife, execute: Executor): void {
  let request: Request | undefined;
  /** The served command's environment: everything run for this request runs inside it. */
  let env: Record<string, string> | undefined;
  let gone = false;
  const interruptListeners = new Set<(signal: NodeJS.Signals) => void>();
  let child: { resolve: (end: ChildEnd) => void; reject: (error: Error) => void } | undefined;
  const send = (frame: ServerFrame): void => sendFrame(socket, frame);
  /** Runs `work` as part of the request (its environment), once there is one. */
  const within = (work: () => void): void => (env === undefined ? work() : withEnvironment(env, work));
  const interrupt = (signal: NodeJS.Signals): void => within(() => {
    for (const listener of [...interruptListeners]) listener(signal);
  });
  socket.on('error', () => undefined);
  socket.once('close', () => {
    gone = true;
    child?.reject(new ClientGone());
    child = undefined;
    // The person's process vanished: as a closed terminal would, it interrupts the command.
    interrupt('SIGHUP');
  });
  send({ t: 'hello', protocol: PROTOCOL_VERSION, pid: process.pid });
  readFrames(socket, (frame) => {
    switch (frame.t) {
      case 'ping':
        send({ t: 'pong', ...life.report() });
        socket.end();
        return;
      case 'stop':
        send({ t: 'exit', code: 0 });
        socket.end();
        life.stop();
        return;
      case 'watch':
        // A project a command in its own process is picturing (watch-hint.ts): not a request, and not a command served.
        if (request === undefined) watchHinted(frame.root);
        socket.end();
        return;
      case 'signal':
        if (typeof frame.signal === 'string' && (INTERRUPTS as readonly string[]).includes(frame.signal)) interrupt(frame.signal as NodeJS.Signals);
        return;
      case 'child': {
        const waiting = child;
        child = undefined;
        if (waiting === undefined || !Number.isSafeInteger(frame.code)) return;
        waiting.resolve({
          code: frame.code as number,
          signal: typeof frame.signal === 'string' ? (frame.signal as NodeJS.Signals) : undefined,
          ...(typeof frame.spawnError === 'string' ? { spawnError: frame.spawnError } : {}),
        });
        return;
      }
      case 'request': {
        if (request !== undefined) return;
        request = requestOf(frame);
        if (request === undefined) {
          socket.destroy();
          return;
        }
        const done = life.busy();
        // Alive and on it: a client whose server froze after its hello learns it from this frame's absence.
        send({ t: 'taken' });
        const shape = request;
        const seam: ProcessSeam = {
          cwd: shape.cwd,
          pid: shape.pid,
          ...(shape.input !== undefined ? { input: shape.input } : {}),
          ...(shape.inputGap !== undefined ? { inputGap: shape.inputGap } : {}),
          ...(shape.startedAt !== undefined ? { startedAt: shape.startedAt } : {}),
          accept(promise) {
            // A client that gave up waiting runs the hook itself: this one must then change nothing.
            if (gone) return false;
            send({ t: 'accepted', deadline: promise.deadline, log: promise.log });
            return true;
          },
          stdout: { write: (text) => send({ t: 'out', text }), isTTY: shape.stdout.tty, ...(shape.stdout.columns !== undefined ? { columns: shape.stdout.columns } : {}) },
          stderr: { write: (text) => send({ t: 'err', text }), isTTY: shape.stderr.tty, ...(shape.stderr.columns !== undefined ? { columns: shape.stderr.columns } : {}) },
          onInterrupt(listener) {
            interruptListeners.add(listener);
            return () => interruptListeners.delete(listener);
          },
          runChild(argv, sessionId) {
            if (gone) return Promise.reject(new ClientGone());
            return new Promise<ChildEnd>((resolve, reject) => {
              child = { resolve, reject };
              send({ t: 'spawn', argv: [...argv], sessionId });
            });
          },
        };
        env = requestVariables(shape.env);
        withEnvironment(env, () => {
          life
            .idleWorkStopped()
            .then(() => execute(shape.argv, seam))
            .catch((error: unknown) => {
              send({ t: 'err', text: `turnback: ${error instanceof Error ? error.message : String(error)}\n` });
              return 1;
            })
            .then((code) => {
              done();
              send({ t: 'exit', code });
              socket.end();
            });
        });
        return;
      }
      default:
        socket.destroy();
    }
  });
}

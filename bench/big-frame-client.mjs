// A client of the command server that sends one oversized request: a hook request whose payload
// is BYTES long (node bench/big-frame-client.mjs SOCKET BYTES), written as fast as the socket takes
// it, as an agent's parallel tool call with a huge payload (or any client) can. It prints
// `started` once its first MiB is handed to the kernel, so the bench knows the server is reading
// it, and ends when the server closes the connection (it refuses a frame past its limit) or once
// everything is written and answered.
import * as net from 'node:net';

const [socketPath, bytesText] = process.argv.slice(2);
const total = Number(bytesText);
if (socketPath === undefined || !Number.isSafeInteger(total) || total <= 0) throw new Error('usage: big-frame-client.mjs SOCKET BYTES');

const head = JSON.stringify({ t: 'request', argv: ['hook', 'claude', 'PreToolUse'], cwd: process.cwd(), pid: process.pid, stdout: { tty: false }, stderr: { tty: false }, input: '' }).slice(0, -2);
const piece = 'x'.repeat(1024 * 1024);
const socket = net.connect(socketPath);
let sent = 0;
let started = false;

function pump() {
  while (sent < total) {
    const size = Math.min(piece.length, total - sent);
    sent += size;
    const more = socket.write(size === piece.length ? piece : piece.slice(0, size), () => {
      if (!started) {
        started = true;
        process.stdout.write('started\n');
      }
    });
    if (!more) return void socket.once('drain', pump);
  }
  socket.write('"}\n');
}

socket.on('connect', () => {
  socket.write(head);
  pump();
});
// Refused (the frame is past the server's limit) or done: either way this client is over.
socket.on('error', () => process.exit(0));
socket.on('close', () => process.exit(0));
socket.on('data', () => undefined);

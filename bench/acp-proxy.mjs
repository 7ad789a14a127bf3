// The ACP proxy bench (issue #15): what `turnback acp -- AGENT` adds to a message it only
// forwards. 10,000 request/response round trips, one at a time, to a bare echo agent — directly
// and through the proxy, alternating in blocks — and the added time per forwarded message (a
// round trip is two forwarded messages) at p50 and p99.
import { spawn } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';
import { fmtMs } from './lib.mjs';

const HERE = path.dirname(fileURLToPath(import.meta.url));
const ECHO = path.join(HERE, 'acp-echo-agent.mjs');

/** A line-oriented peer over a child's stdio: request() resolves with the answer line. */
function peer(command, args, options) {
  const child = spawn(command, args, { ...options, stdio: ['pipe', 'pipe', 'inherit'] });
  let pending = '';
  let waiting;
  child.stdout.setEncoding('utf8');
  child.stdout.on('data', (chunk) => {
    pending += chunk;
    for (let at = pending.indexOf('\n'); at >= 0; at = pending.indexOf('\n')) {
      const line = pending.slice(0, at);
      pending = pending.slice(at + 1);
      const resolve = waiting;
      waiting = undefined;
      resolve?.(line);
    }
  });
  return {
    request(line) {
      return new Promise((resolve) => {
        waiting = resolve;
        child.stdin.write(`${line}\n`);
      });
    },
    close() {
      child.stdin.end();
      return new Promise((resolve) => child.on('exit', resolve));
    },
  };
}

function percentile(sorted, p) {
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];
}

/**
 * @param {{ temp: { path(name: string): string }, row: Function, notes: string[], quick: boolean, dist: string }} context
 */
export async function benchAcpProxy({ temp, row, notes, quick, dist }) {
  const project = temp.path('acp-project');
  fs.mkdirSync(project, { recursive: true });
  const home = temp.path('acp-home');
  fs.mkdirSync(home, { recursive: true });
  const env = { ...process.env, HOME: home, XDG_DATA_HOME: path.join(home, 'data'), XDG_CONFIG_HOME: path.join(home, 'config') };
  const total = quick ? 2000 : 10_000;
  const block = 500;
  const direct = peer(process.execPath, [ECHO], { cwd: project, env });
  const proxied = peer(process.execPath, [path.join(dist, 'cli', 'main.cjs'), 'acp', '--', process.execPath, ECHO], { cwd: project, env });
  const init = JSON.stringify({ jsonrpc: '2.0', id: 0, method: 'initialize', params: { protocolVersion: 1, clientCapabilities: {} } });
  await direct.request(init);
  await proxied.request(init);
  const times = { direct: [], proxied: [] };
  let id = 1;
  const round = async (side, target) => {
    for (let i = 0; i < block; i++) {
      const line = JSON.stringify({ jsonrpc: '2.0', id: id++, method: 'session/set_mode', params: { sessionId: 's', modeId: 'code' } });
      const start = performance.now();
      await target.request(line);
      times[side].push(performance.now() - start);
    }
  };
  // Warm both sides, then alternate blocks so neither always runs on a warmer machine.
  await round('direct', direct);
  await round('proxied', proxied);
  times.direct.length = 0;
  times.proxied.length = 0;
  for (let done = 0; done < total; done += block) {
    await round('direct', direct);
    await round('proxied', proxied);
  }
  await direct.close();
  await proxied.close();
  const d = [...times.direct].sort((a, b) => a - b);
  const p = [...times.proxied].sort((a, b) => a - b);
  const added50 = (percentile(p, 50) - percentile(d, 50)) / 2;
  const added99 = (percentile(p, 99) - percentile(d, 99)) / 2;
  row('ACP proxy: added per forwarded message, p50', `${fmtMs(added50)} (round trip ${fmtMs(percentile(p, 50))} vs ${fmtMs(percentile(d, 50))} direct)`);
  row('ACP proxy: added per forwarded message, p99', `${fmtMs(added99)} (round trip ${fmtMs(percentile(p, 99))} vs ${fmtMs(percentile(d, 99))} direct)`, '< 1 ms', added99 < 1 ? 'PASS' : 'MISS');
  notes.push(`acp-proxy: ${total} request/response round trips per side, one at a time, in alternating blocks of ${block}, to a bare echo agent (bench/acp-echo-agent.mjs); a round trip is two forwarded messages.`);
}

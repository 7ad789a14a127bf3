// The smallest ACP peer for the proxy bench: answers every request line with an empty result,
// with no SDK in the way, so the bench measures the proxy and not an agent.
import { createInterface } from 'node:readline';

const lines = createInterface({ input: process.stdin });
lines.on('line', (line) => {
  const message = JSON.parse(line);
  if (message.id !== undefined && message.method !== undefined) {
    const result = message.method === 'initialize' ? { protocolVersion: 1, agentCapabilities: {} } : {};
    process.stdout.write(`${JSON.stringify({ jsonrpc: '2.0', id: message.id, result })}\n`);
  }
});

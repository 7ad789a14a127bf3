import * as net from 'node:net';

// A network between a client and a server of the tests (the S3 server), which the test can cut or
// freeze at a point it chooses: a seeded number of bytes, never a time.

/** A relay: its address, the bytes it has forwarded, and what a test does to it. */
export interface Relay {
  endpoint: string;
  total(): number;
  cut(): void;
  freeze(): void;
  close(): void;
}

/**
 * A relay in front of the server at `endpoint`, counting the bytes a client sends through it; `onBytes`
 * hears the running total after each chunk is forwarded. `cut()` drops every connection and
 * refuses new ones, as a network that goes away; `freeze()` keeps every connection open and takes
 * new ones, but forwards nothing more either way, as a server that hangs.
 */
export async function relayTo(endpoint: string, onBytes: (total: number) => void = () => undefined): Promise<Relay> {
  const [host, port] = new URL(endpoint).host.split(':') as [string, string];
  let forwarded = 0;
  let gone = false;
  let frozen = false;
  const sockets = new Set<net.Socket>();
  const relay = net.createServer((inbound) => {
    if (gone) {
      inbound.destroy();
      return;
    }
    const outbound = net.connect(Number(port), host);
    sockets.add(inbound).add(outbound);
    inbound.on('data', (chunk: Buffer) => {
      if (gone || frozen) return;
      outbound.write(chunk);
      forwarded += chunk.length;
      onBytes(forwarded);
    });
    outbound.on('data', (chunk: Buffer) => {
      if (!frozen) inbound.write(chunk);
    });
    for (const socket of [inbound, outbound]) socket.on('error', () => undefined).on('close', () => [inbound, outbound].forEach((s) => s.destroy()));
  });
  await new Promise<void>((resolve) => relay.listen(0, '127.0.0.1', resolve));
  return {
    endpoint: `http://127.0.0.1:${(relay.address() as net.AddressInfo).port}`,
    total: () => forwarded,
    cut: () => {
      gone = true;
      for (const socket of sockets) socket.destroy();
    },
    freeze: () => {
      frozen = true;
    },
    close: () => {
      for (const socket of sockets) socket.destroy();
      relay.close();
    },
  };
}

import fc from 'fast-check';
import { spawnSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { detachedCopy, flatConcat } from '../../src/core/flat-string.js';

describe('flat strings', () => {
  it('flatConcat is a + b and detachedCopy the same text, for any text (seeded property)', () => {
    fc.assert(fc.property(fc.string({ unit: 'grapheme' }), fc.string({ unit: 'grapheme' }), (head, tail) => flatConcat(head, tail) === head + tail && detachedCopy(head + tail) === head + tail));
  });

  it('makes neither a cons node nor a slice of the larger text (a heap snapshot of a process that made them)', () => {
    // A process of its own, so its heap snapshot is small; beside the functions, `+` and `slice`
    // make the kinds this test must tell apart.
    const script = `
      const v8 = require('node:v8');
      const flatConcat = ${flatConcat.toString()};
      const detachedCopy = ${detachedCopy.toString()};
      const folder = ['probe-folder-', 'named-at-length/'].join('');
      const document = 'x'.repeat(4096) + ' git:' + 'ab'.repeat(20) + ' tail';
      const found = document.match(/git:[0-9a-f]{40}/)[0].slice(4);
      globalThis.probe = { joined: flatConcat(folder, 'joined-file-name.ts'), detached: detachedCopy(found), plus: folder + 'plus-file-name.ts', sliced: found };
      const chunks = [];
      const stream = v8.getHeapSnapshot();
      stream.on('data', (chunk) => chunks.push(chunk));
      stream.on('end', () => {
        // The object with the four properties, and the kind of the node each one points at.
        const snapshot = JSON.parse(Buffer.concat(chunks).toString('utf8'));
        const meta = snapshot.snapshot.meta;
        const fields = meta.node_fields.length;
        const edgeFields = meta.edge_fields.length;
        const edgeCountAt = meta.node_fields.indexOf('edge_count');
        const types = meta.node_types[0];
        const names = ['joined', 'detached', 'plus', 'sliced'];
        let edge = 0;
        for (let at = 0; at < snapshot.nodes.length; at += fields) {
          const count = snapshot.nodes[at + edgeCountAt];
          const kinds = {};
          for (let e = edge; e < edge + count * edgeFields; e += edgeFields) {
            const name = snapshot.strings[snapshot.edges[e + 1]];
            if (names.includes(name)) kinds[name] = types[snapshot.nodes[snapshot.edges[e + 2]]];
          }
          edge += count * edgeFields;
          if (Object.keys(kinds).length === names.length) return void process.stdout.write(JSON.stringify(kinds));
        }
        process.stdout.write('{}');
      });
    `;
    const child = spawnSync(process.execPath, ['-e', script], { encoding: 'utf8' });
    expect(child.status, child.stderr).toBe(0);
    const kinds = JSON.parse(child.stdout) as Record<string, string>;
    // The controls: `+` and `slice` made the kinds the functions must not.
    expect(kinds).toEqual({ joined: 'string', detached: 'string', plus: 'concatenated string', sliced: 'sliced string' });
  });
});

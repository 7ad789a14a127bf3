import { describe, expect, it } from 'vitest';
import { attributionOf, candidatesOf, overlapping, type OpenCall } from '../../src/hooks/overlap.js';

// The pure rules of overlapping calls (src/hooks/overlap.ts): when calls contend, who could have
// made a change in a segment, and what a change of a call's window is.

const turnC: OpenCall = { session: 'claude:1', callId: 'turn:1796000000000-0000-00000001' };
const turnX: OpenCall = { session: 'codex:2', callId: 'turn:1796000000000-0000-00000002' };
const shell: OpenCall = { session: 'codex:2', callId: 'call_shell', label: 'Bash: make' };
const patch: OpenCall = { session: 'codex:2', callId: 'call_patch', label: 'apply_patch b.txt', scope: ['b.txt'] };
const edit: OpenCall = { session: 'claude:1', callId: 'toolu_edit', scope: ['x.txt'] };
const edit2: OpenCall = { session: 'claude:1', callId: 'toolu_edit2', scope: ['y.txt'] };

describe('overlapping', () => {
  it('one agent: a turn never contends with its own calls, nor two calls that name their files', () => {
    expect(overlapping([turnX, shell])).toBe(false);
    expect(overlapping([turnC, edit, edit2])).toBe(false);
  });
  it('a shell beside a patch, or two sessions, contend', () => {
    expect(overlapping([turnX, shell, patch])).toBe(true);
    expect(overlapping([turnC, turnX])).toBe(true);
  });
});

describe('candidatesOf', () => {
  it('the call naming the file; else every open tool call; else the open turns', () => {
    expect(candidatesOf('b.txt', [turnX, shell, patch])).toEqual([patch]);
    expect(candidatesOf('c.txt', [turnX, shell, patch])).toEqual([shell, patch]);
    expect(candidatesOf('a.txt', [turnC, turnX])).toEqual([turnC, turnX]);
  });
});

describe('attributionOf', () => {
  const seg = (open: OpenCall[], path: string, from: string, to: string, by: OpenCall[]) => ({ open, changes: [{ path, from: from as never, to: to as never, by }] });
  it("a change made only where the call alone could have made it is its own; another call's whole change is that call's", () => {
    const log = [seg([turnX, shell, patch], 'b.txt', 'file:1', 'file:2', [patch])];
    expect(attributionOf(shell, { path: 'a.txt', from: 'file:a' as never, to: 'file:A' as never }, log)).toEqual({ kind: 'own' });
    expect(attributionOf(shell, { path: 'b.txt', from: 'file:1' as never, to: 'file:2' as never }, log)).toEqual({ kind: 'other', by: [{ session: patch.session, callId: patch.callId, label: patch.label }] });
    // The turn owns what its own session's calls made.
    expect(attributionOf(turnX, { path: 'b.txt', from: 'file:1' as never, to: 'file:2' as never }, log)).toEqual({ kind: 'own' });
  });
  it('shared: another could have made it too, or the other call made only part of the change', () => {
    const log = [seg([turnX, shell, patch], 'c.txt', 'file:c', 'file:C', [shell, patch])];
    expect(attributionOf(shell, { path: 'c.txt', from: 'file:c' as never, to: 'file:C' as never }, log).kind).toBe('shared');
    const part = [seg([turnX, shell, patch], 'b.txt', 'file:1', 'file:2', [patch])];
    // The shell changed b.txt again after the patch (file:2 → file:3): not the patch's alone.
    expect(attributionOf(shell, { path: 'b.txt', from: 'file:1' as never, to: 'file:3' as never }, part).kind).toBe('shared');
  });
  it('segments the call was not open in say nothing about it', () => {
    const log = [seg([turnC, turnX], 'a.txt', 'file:a', 'file:b', [turnC, turnX])];
    expect(attributionOf(shell, { path: 'a.txt', from: 'file:a' as never, to: 'file:b' as never }, log)).toEqual({ kind: 'own' });
    expect(attributionOf(turnC, { path: 'a.txt', from: 'file:a' as never, to: 'file:b' as never }, log).kind).toBe('shared');
  });
});

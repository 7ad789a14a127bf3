import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { Progress, progressDelayMs } from '../../src/cli/progress.js';

function fakeStream(isTTY: boolean): { stream: NodeJS.WriteStream; text: () => string } {
  let written = '';
  const stream = { isTTY, write: (chunk: string) => ((written += chunk), true) } as unknown as NodeJS.WriteStream;
  return { stream, text: () => written };
}

describe('the picture progress line', () => {
  const saved = process.env.TURNBACK_PROGRESS_AFTER_MS;
  beforeEach(() => {
    vi.useFakeTimers();
    delete process.env.TURNBACK_PROGRESS_AFTER_MS;
  });
  afterEach(() => {
    vi.useRealTimers();
    if (saved === undefined) delete process.env.TURNBACK_PROGRESS_AFTER_MS;
    else process.env.TURNBACK_PROGRESS_AFTER_MS = saved;
  });

  it('says nothing for a picture under a second', () => {
    const { stream, text } = fakeStream(false);
    const progress = new Progress(stream, 'turnback: taking a picture before make…', 'picture taken');
    vi.advanceTimersByTime(999);
    progress.update({ walked: 10, copied: 1, toCopy: 2 });
    progress.done();
    vi.advanceTimersByTime(5000);
    expect(text()).toBe('');
  });

  it('off a terminal: one line after a second, one at the end, counts not repeated', () => {
    const { stream, text } = fakeStream(false);
    const progress = new Progress(stream, 'turnback: taking a picture before make…', 'picture taken');
    vi.advanceTimersByTime(1000);
    expect(text()).toBe('turnback: taking a picture before make…\n');
    progress.update({ walked: 12_000, copied: 300, toCopy: 4000 });
    progress.update({ walked: 20_000, copied: 900, toCopy: 4000 });
    vi.advanceTimersByTime(1500);
    progress.done();
    progress.done();
    expect(text()).toBe('turnback: taking a picture before make…\nturnback: picture taken in 2.5 s\n');
  });

  it('on a terminal: one line rewritten in place with the counts, then replaced by the time', () => {
    const { stream, text } = fakeStream(true);
    const progress = new Progress(stream, 'turnback: taking a picture before make…', 'picture taken');
    progress.update({ walked: 500, copied: 0, toCopy: 10 });
    vi.advanceTimersByTime(1000);
    progress.update({ walked: 12_000, copied: 300, toCopy: 4000 });
    vi.advanceTimersByTime(200);
    progress.done();
    expect(text()).toBe(
      '\r\u001b[Kturnback: taking a picture… 500 files seen, 0 of 10 copied' +
        '\r\u001b[Kturnback: taking a picture… 12,000 files seen, 300 of 4,000 copied' +
        '\r\u001b[Kturnback: picture taken in 1.2 s\n',
    );
  });

  it('counts files seen, not the folders listed beside them', () => {
    const { stream, text } = fakeStream(true);
    const progress = new Progress(stream, 'turnback: taking a picture before make…', 'picture taken');
    vi.advanceTimersByTime(1000);
    progress.update({ walked: 12_696, files: 10_102, copied: 0, toCopy: 3 });
    expect(text()).toContain('turnback: taking a picture… 10,102 files seen, 0 of 3 copied');
    expect(text()).not.toContain('12,696');
  });

  it('a picture that failed ends its line with no "picture taken" (the failure is said next)', () => {
    for (const tty of [false, true]) {
      const { stream, text } = fakeStream(tty);
      const progress = new Progress(stream, 'turnback: taking a picture before make…', 'picture taken');
      vi.advanceTimersByTime(3200);
      progress.abandon();
      progress.done();
      expect(text()).not.toContain('picture taken');
      expect(text()).toContain('taking a picture before make');
    }
  });

  it('TURNBACK_PROGRESS_AFTER_MS sets the delay; anything but a whole number is ignored', () => {
    expect(progressDelayMs({})).toBe(1000);
    expect(progressDelayMs({ TURNBACK_PROGRESS_AFTER_MS: '0' })).toBe(0);
    expect(progressDelayMs({ TURNBACK_PROGRESS_AFTER_MS: '250' })).toBe(250);
    for (const bad of ['', '-1', '1.5', 'soon', '1e3', '99999999999']) expect(progressDelayMs({ TURNBACK_PROGRESS_AFTER_MS: bad })).toBe(1000);
    process.env.TURNBACK_PROGRESS_AFTER_MS = '50';
    const { stream, text } = fakeStream(false);
    const progress = new Progress(stream, 'turnback: taking a picture…', 'picture taken');
    vi.advanceTimersByTime(50);
    progress.done();
    expect(text()).toBe('turnback: taking a picture…\nturnback: picture taken in 0.1 s\n');
  });
});

import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { AGENTS } from '../../src/hooks/agents.js';
import { hookCommandText, installedEvents, installHooks, isOurCommand, ourCommands, uninstallHooks, type JsonObject } from '../../src/hooks/settings.js';
import { codexHooksFeature, enableCodexHooks } from '../../src/hooks/codex-config.js';

// Merging turnback's hooks into an agent's file (pure): install keeps everything, is idempotent,
// and uninstall takes out exactly what it put in — for any file an agent could hold.

const command = (agent: string) => (event: string) => `'/usr/bin/node' '/opt/turnback/dist/cli/turnback.cjs' hook ${agent} ${event}`;

/** A hook entry someone else wrote, in the agent's format. */
const otherEntry = (format: string) =>
  fc.string({ minLength: 1, maxLength: 12 }).map((cmd) => (format === 'matcher-groups' ? { matcher: 'Bash', hooks: [{ type: 'command', command: `echo ${cmd}` }] } : format === 'flat' ? { command: `echo ${cmd}` } : { type: 'command', bash: `echo ${cmd}` }));

describe.each(Object.values(AGENTS))('hook settings of $title', (spec) => {
  const events = Object.keys(spec.events);
  const settings = fc.record(
    {
      theme: fc.string(),
      hooks: fc.dictionary(fc.constantFrom(...events, 'Notification', 'other'), fc.array(otherEntry(spec.format), { maxLength: 3 }), { maxKeys: 4 }),
      ...(spec.format === 'matcher-groups' ? {} : { version: fc.constant(1) }),
    },
    // Cursor's and Copilot's files always say their version.
    { requiredKeys: spec.format === 'matcher-groups' ? [] : ['version'] },
  ) as fc.Arbitrary<JsonObject>;

  it('install adds every event, keeps what was there, and a second install changes nothing', () => {
    fc.assert(
      fc.property(settings, (before) => {
        const once = installHooks(spec, before, command(spec.name));
        expect(installedEvents(spec, once.settings).sort()).toEqual([...events].sort());
        for (const [key, value] of Object.entries(before)) if (key !== 'hooks') expect(once.settings[key]).toEqual(value);
        for (const [event, list] of Object.entries((before.hooks ?? {}) as Record<string, unknown[]>)) {
          expect(((once.settings.hooks as Record<string, unknown[]>)[event] ?? []).slice(0, list.length)).toEqual(list);
        }
        const twice = installHooks(spec, once.settings, command(spec.name));
        expect(twice.added).toEqual([]);
        expect(twice.settings).toEqual(once.settings);
      }),
    );
  });

  it('uninstall takes out exactly what install put in', () => {
    fc.assert(
      fc.property(settings, (before) => {
        const { settings: installed } = installHooks(spec, before, command(spec.name));
        const { settings: after } = uninstallHooks(spec, installed);
        const expected = { ...before };
        // An event of turnback's left empty goes; everything else stays as it was.
        const nonEmpty = Object.fromEntries(Object.entries((before.hooks ?? {}) as Record<string, unknown[]>).filter(([event, list]) => !(events.includes(event) && list.length === 0)));
        if (Object.keys(nonEmpty).length > 0) expected.hooks = nonEmpty;
        else delete expected.hooks;
        if (Object.keys(expected).length === 0 || (spec.format !== 'matcher-groups' && Object.keys(expected).length === 1 && expected.version === 1)) expect(after).toBeUndefined();
        else expect(after).toEqual(expected);
      }),
    );
  });

  it('an earlier install by another path is replaced, never doubled', () => {
    const old = installHooks(spec, {}, (event) => `turnback hook ${spec.name} ${event}`).settings;
    const moved = installHooks(spec, old, command(spec.name));
    expect(moved.added.sort()).toEqual([...events].sort());
    for (const event of events) expect(((moved.settings.hooks as Record<string, unknown[]>)[event] ?? []).length).toBe(1);
  });

  it('refuses hooks of the wrong shape instead of guessing', () => {
    expect(() => installHooks(spec, { hooks: [] }, command(spec.name))).toThrow('not an object');
    expect(() => installHooks(spec, { hooks: { [events[0] as string]: 'x' } }, command(spec.name))).toThrow('not a list');
  });
});

describe("Qwen Code's hook file", () => {
  const qwen = AGENTS.qwen;
  type Groups = Record<string, { hooks: { timeout?: number }[] }[]>;

  it('gives every hook 30 s in its unit, milliseconds; an install of 30 (read as 30 ms) is replaced', () => {
    const installed = installHooks(qwen, {}, command('qwen')).settings;
    for (const groups of Object.values(installed.hooks as Groups)) for (const group of groups) for (const hook of group.hooks) expect(hook.timeout).toBe(30_000);
    const old = structuredClone(installed);
    for (const groups of Object.values(old.hooks as Groups)) for (const group of groups) for (const hook of group.hooks) hook.timeout = 30;
    const again = installHooks(qwen, old, command('qwen'));
    expect(again.added.sort()).toEqual(Object.keys(qwen.events).sort());
    expect(again.settings).toEqual(installed);
  });

  it("a file install makes carries Qwen's $version, so Qwen does not rewrite it; uninstall removes it whole", () => {
    const made = installHooks(qwen, {}, command('qwen')).settings;
    expect(made.$version).toBe(4);
    expect(uninstallHooks(qwen, made).settings).toBeUndefined();
    // A file of the person's own keeps its version (or its lack of one: Qwen migrates it).
    expect(installHooks(qwen, { theme: 'dark' }, command('qwen')).settings.$version).toBeUndefined();
    expect(uninstallHooks(qwen, { $version: 4 }).settings).toEqual({ $version: 4 });
  });
});

describe("Codex's hooks feature (config.toml, edited as text)", () => {
  it('reads the feature as on, off or unsaid, under either name', () => {
    expect(codexHooksFeature(undefined)).toBeUndefined();
    expect(codexHooksFeature('model = "gpt-5"\n')).toBeUndefined();
    expect(codexHooksFeature('[features]\nhooks = false\n')).toBe(false);
    expect(codexHooksFeature('[features]\ncodex_hooks = true\n')).toBe(true);
  });

  it('turns it on keeping every other line, comments included', () => {
    expect(enableCodexHooks(undefined)).toEqual({ text: '[features]\nhooks = true\n', changed: true });
    expect(enableCodexHooks('model = "o3" # mine\n').text).toBe('model = "o3" # mine\n\n[features]\nhooks = true\n');
    expect(enableCodexHooks('[features]\nhooks = false # off for now\nother = 1\n\n[tui]\nx = 2\n').text).toBe('[features]\nhooks = true # off for now\nother = 1\n\n[tui]\nx = 2\n');
    expect(enableCodexHooks('[features]\nweb_search = true\n[tui]\nx = 1\n').text).toBe('[features]\nhooks = true\nweb_search = true\n[tui]\nx = 1\n');
    expect(enableCodexHooks('[features]\ncodex_hooks = true\n')).toEqual({ text: '[features]\ncodex_hooks = true\n', changed: false });
  });

  it('refuses what it cannot edit safely: not TOML, features as an inline table', () => {
    expect(() => enableCodexHooks('this is = = not toml')).toThrow();
    expect(() => enableCodexHooks('features = { hooks = false }\n')).toThrow('inline table');
  });
});

describe('the command a hook runs (issue #26: a committed file carries no machine path)', () => {
  it('names `turnback` or `npx turnback` for a project, and this machine’s paths only when asked', () => {
    expect(hookCommandText('codex', 'PreToolUse', { kind: 'name' })).toBe('turnback hook codex PreToolUse');
    expect(hookCommandText('gemini', 'BeforeTool', { kind: 'npx' })).toBe('npx turnback hook gemini BeforeTool');
    expect(hookCommandText('claude', 'Stop', { kind: 'path', node: '/usr/bin/node', cli: "/opt/it's/turnback.cjs" })).toBe(`/usr/bin/node '/opt/it'\\''s/turnback.cjs' hook claude Stop`);
    for (const kind of ['name', 'npx'] as const) expect(isOurCommand(hookCommandText('claude', 'Stop', { kind }), 'claude')).toBe(true);
  });

  it('a machine path from an earlier install is replaced by the portable command; the file lists only that one', () => {
    for (const spec of Object.values(AGENTS)) {
      const old = installHooks(spec, {}, command(spec.name)).settings;
      const portable = installHooks(spec, old, (event) => hookCommandText(spec.name, event, { kind: 'name' }));
      expect(portable.added.sort()).toEqual(Object.keys(spec.events).sort());
      expect(JSON.stringify(portable.settings)).not.toContain('/');
      expect(ourCommands(spec, portable.settings).sort()).toEqual(Object.keys(spec.events).map((e) => `turnback hook ${spec.name} ${e}`).sort());
      expect(ourCommands(spec, { hooks: { x: [] } })).toEqual([]);
    }
  });
});

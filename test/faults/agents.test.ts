import * as fs from 'node:fs/promises';
import * as path from 'node:path';
import { describe, it } from 'vitest';
import { AGENTS, agentSessionId, type AgentName } from '../../src/hooks/agents.js';
import { applyHookEvent } from '../../src/hooks/apply.js';
import { parseHookEvent } from '../../src/hooks/events.js';
import { sharedChanges } from '../../src/hooks/overlap.js';
import { openObserver, sandbox } from '../session/helpers.js';
import { Tally, trials } from './campaign.js';
import type { Seeded } from '../helpers/seed.js';

// Issue #31: two agents in one project, their hook events interleaved in seeded orders. Each tool
// call writes a file of its own — a shell call whole-tree, a write tool the file it names — while
// the other agent's calls and turn are open. The promise: no picture of one session records, as
// its own, a file only the other session's calls wrote (what neither can be told from is shared,
// and its undo refuses it).

type Step = { agent: AgentName; session: string; event: string; payload: Record<string, unknown>; write?: string };

function plan(random: Seeded, project: string): Step[] {
  const sessions: { agent: AgentName; session: string; steps: Step[] }[] = [
    { agent: 'claude', session: 'c1', steps: [] },
    { agent: 'codex', session: 'x1', steps: [] },
  ];
  for (const s of sessions) {
    const base = { session_id: s.session, cwd: project };
    s.steps.push({ agent: s.agent, session: s.session, event: 'UserPromptSubmit', payload: { ...base, hook_event_name: 'UserPromptSubmit', prompt: `work ${s.session}` } });
    const calls = random.int(1, 3);
    for (let i = 0; i < calls; i++) {
      const file = `${s.session}-${i}.txt`;
      const shell = random.int(0, 1) === 0;
      const id = `${s.session}_call_${i}`;
      const tool =
        shell ? { tool_name: 'Bash', tool_input: { command: `echo > ${file}` } }
        : s.agent === 'claude' ? { tool_name: 'Write', tool_input: { file_path: path.join(project, file), content: 'x\n' } }
        : { tool_name: 'apply_patch', tool_input: { command: `*** Begin Patch\n*** Add File: ${file}\n+x\n*** End Patch\n` } };
      const payload = { ...base, ...tool, tool_use_id: id };
      s.steps.push({ agent: s.agent, session: s.session, event: 'PreToolUse', payload: { ...payload, hook_event_name: 'PreToolUse' } });
      s.steps.push({ agent: s.agent, session: s.session, event: 'PostToolUse', payload: { ...payload, hook_event_name: 'PostToolUse' }, write: file });
    }
    s.steps.push({ agent: s.agent, session: s.session, event: 'Stop', payload: { ...base, hook_event_name: 'Stop' } });
  }
  // A seeded merge of the two sessions' events, each session's own order kept.
  const merged: Step[] = [];
  const [a, b] = [sessions[0]?.steps ?? [], sessions[1]?.steps ?? []];
  while (a.length > 0 || b.length > 0) merged.push((b.length === 0 || (a.length > 0 && random.int(0, 1) === 0) ? a : b).shift() as Step);
  return merged;
}

describe('fault campaign: two agents at once', () => {
  it("interleaved hook events never put one session's file in the other's pictures as its own", async () => {
    const tally = new Tally('two agents interleaved', 3101);
    let shared = 0;
    for (let t = 0; t < trials(60, 6); t++) {
      await tally.trial(`order ${t}`, async () => {
        const { project, storeDir } = await sandbox();
        const writer = new Map<string, string>();
        for (const step of plan(tally.random, project)) {
          // The tool's effect lands just before its after event, inside its window.
          if (step.write !== undefined) {
            await fs.writeFile(path.join(project, step.write), `${step.session}\n`);
            writer.set(step.write, step.session);
          }
          const spec = AGENTS[step.agent];
          const observer = await openObserver(project, storeDir, { sessionId: agentSessionId(step.agent, step.session) });
          try {
            await applyHookEvent(observer, parseHookEvent(spec, step.event, JSON.stringify(step.payload), project));
          } finally {
            await observer.close();
          }
        }
        const observer = await openObserver(project, storeDir);
        try {
          for (const meta of await observer.store.list()) {
            const manifest = await observer.store.manifest(meta.id);
            const session = manifest.sessionId ?? '';
            const sharedPaths = new Set<string>();
            for (const call of manifest.calls) for (const s of await sharedChanges(observer.store, session, call.callId)) sharedPaths.add(s.path);
            shared += sharedPaths.size;
            for (const entry of manifest.entries) {
              const by = writer.get(entry.path);
              if (by === undefined || sharedPaths.has(entry.path)) continue;
              if (!session.endsWith(`:${by}`)) throw new Error(`${session}'s ${meta.kind} ${meta.label ?? ''} records ${entry.path}, which ${by} wrote`);
            }
          }
        } finally {
          await observer.close();
        }
      });
    }
    tally.note = `${shared} shared changes refused`;
    tally.finish();
  }, 600_000);
});

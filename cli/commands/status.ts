import { isTerminalPhase } from '../../shared/workflow/plan/run-status.js'
import { isTemplate } from '../../shared/template/run-builder.js'
import type { Workflow } from '../../shared/schemas/workflow.js'
import { has, type ParsedArgs } from '../args.js'
import type { Command, Session } from '../command.js'
import { pause } from '../io.js'
import { formatObjects } from '../output.js'
import { statusView } from '../status-view.js'
import { requireWorkflow } from '../workflows.js'

const CLEAR = '\u001b[H\u001b[2J'

function render(session: Session, wf: Workflow): string {
  return session.format === 'table' ? statusView(wf, session.io.now()) : formatObjects(session.format, wf)
}

/** The part of a Workflow a redraw depends on (not its resourceVersion, which moves on every write). */
function fingerprint(wf: Workflow): string {
  return JSON.stringify([wf.metadata.annotations, wf.spec, wf.status])
}

/**
 * Prints the status, then with `watch` polls and redraws whenever it changes (in place on a
 * terminal), until the run ends or Ctrl-C. A template is watched until Ctrl-C.
 */
export async function showStatus(session: Session, name: string, watch: boolean): Promise<number> {
  let wf = await requireWorkflow(session, name)
  const tty = session.io.isTTY && session.format === 'table'
  session.out(`${tty && watch ? CLEAR : ''}${render(session, wf)}`)
  if (!watch) return 0
  let seen = fingerprint(wf)
  let lastDraw = render(session, wf)
  for (;;) {
    if (!isTemplate(wf) && isTerminalPhase(wf.status?.phase)) return 0
    if (await pause(session.io.pollMs, session.io.signal)) return 0
    wf = await requireWorkflow(session, name)
    const now = fingerprint(wf)
    // On a terminal the durations tick, so redraw every poll; elsewhere only on a change.
    if (now === seen && !tty) continue
    const draw = render(session, wf)
    if (now === seen && draw === lastDraw) continue
    seen = now
    lastDraw = draw
    session.out(tty ? `${CLEAR}${draw}` : `\n${draw}`)
  }
}

export const statusCommand: Command = {
  name: 'status',
  args: '<workflow>',
  arity: [1, 1],
  summary: 'Show a run as a tree of its steps (or a template\'s schedule and runs)',
  description: 'For a run: its phase and duration, then every step in dependency order as a tree (a step hangs under the '
    + 'dependency it waits for last) with phase, duration, retries, what it waits for, and whether a person must approve it; '
    + 'a queued run shows its place in the queue. For a template: its schedule, next run, last schedule and trigger times, '
    + 'active runs and recent runs. --watch redraws on every change until the run ends (or Ctrl-C).',
  flags: [{ name: 'watch', short: 'w', description: 'redraw on change until the run ends (Ctrl-C stops)' }],
  examples: ['kinetic status incident-42', 'kinetic status incident-42 --watch', 'kinetic status nightly-report -o yaml'],
  run: (session: Session, args: ParsedArgs) => showStatus(session, args.positionals[0]!, has(args, 'watch')),
}

export const watchCommand: Command = {
  name: 'watch',
  args: '<workflow>',
  arity: [1, 1],
  summary: 'Same as status --watch',
  description: 'Shows the status of a run and redraws it on every change until the run ends (or Ctrl-C).',
  flags: [],
  examples: ['kinetic watch incident-42'],
  run: (session: Session, args: ParsedArgs) => showStatus(session, args.positionals[0]!, true),
}

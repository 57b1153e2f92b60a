import { topologicalOrder } from '../../shared/workflow/plan/dag.js'
import { isFinishedStepPhase, isTerminalPhase } from '../../shared/workflow/plan/run-status.js'
import { decodeStepStates } from '../../shared/workflow/plan/step-states.js'
import type { Workflow } from '../../shared/schemas/workflow.js'
import { has, type ParsedArgs } from '../args.js'
import type { Command, Session } from '../command.js'
import { CliError } from '../errors.js'
import { pause } from '../io.js'
import { requireWorkflow } from '../workflows.js'

/** What has been printed of one step's log. */
interface Cursor {
  job?: string
  offset: number
  /** A line not yet ended, kept so a prefix goes only before whole lines. */
  partial: string
}

function stepsInOrder(wf: Workflow): string[] {
  const order = topologicalOrder(wf.spec.steps) ?? wf.spec.steps.map((_, i) => i)
  return order.map((i) => wf.spec.steps[i]!.name)
}

/** Prints what is new in one step's log; returns whether the step had a Job at all. */
async function printNew(session: Session, wf: Workflow, step: string, cursor: Cursor, prefixed: boolean, final: boolean): Promise<boolean> {
  const state = decodeStepStates(wf).get(step)
  const job = state?.jobName
  if (!job) return false
  if (cursor.job !== job) {
    if (cursor.job !== undefined) {
      flush(session, step, cursor, prefixed)
      session.out(`${prefixed ? `[${step}] ` : ''}--- retry ${state?.retryCount ?? 0}: Job ${job} ---\n`)
    }
    cursor.job = job
    cursor.offset = 0
  }
  const namespace = session.namespace
  const log = await session.call({ verb: 'get', resource: 'pods/log', namespace }, (kube) => kube.readJobLog(namespace, job))
  if (log === null || log.length <= cursor.offset) {
    if (final) flush(session, step, cursor, prefixed)
    return true
  }
  const fresh = cursor.partial + log.slice(cursor.offset)
  cursor.offset = log.length
  const end = fresh.lastIndexOf('\n')
  const whole = end >= 0 ? fresh.slice(0, end + 1) : ''
  cursor.partial = end >= 0 ? fresh.slice(end + 1) : fresh
  if (whole) session.out(prefixed ? whole.split('\n').slice(0, -1).map((l) => `[${step}] ${l}\n`).join('') : whole)
  if (final) flush(session, step, cursor, prefixed)
  return true
}

function flush(session: Session, step: string, cursor: Cursor, prefixed: boolean): void {
  if (cursor.partial === '') return
  session.out(`${prefixed ? `[${step}] ` : ''}${cursor.partial}\n`)
  cursor.partial = ''
}

/** Prints step logs; with `follow`, polls until the step (or, for every step, the run) finishes. */
export async function showLogs(session: Session, name: string, step: string | undefined, follow: boolean): Promise<number> {
  let wf = await requireWorkflow(session, name)
  if (step !== undefined && !wf.spec.steps.some((s) => s.name === step)) {
    throw new CliError(`step ${step} not found in workflow ${name} (steps: ${wf.spec.steps.map((s) => s.name).join(', ')})`)
  }
  const targets = step !== undefined ? [step] : stepsInOrder(wf)
  const prefixed = step === undefined
  const cursors = new Map(targets.map((t) => [t, { offset: 0, partial: '' } as Cursor]))
  for (;;) {
    const states = decodeStepStates(wf)
    const done = step !== undefined
      ? isFinishedStepPhase(states.get(step)?.phase) || isTerminalPhase(wf.status?.phase)
      : isTerminalPhase(wf.status?.phase)
    const final = !follow || done
    let started = 0
    for (const t of targets) if (await printNew(session, wf, t, cursors.get(t)!, prefixed, final)) started++
    if (final) {
      if (started === 0) {
        const phase = step !== undefined ? states.get(step)?.phase ?? 'not started' : wf.status?.phase ?? 'not started'
        const what = step !== undefined ? `step ${step} of workflow ${name} has no Job (${phase})` : `no step of workflow ${name} has started yet`
        if (step !== undefined && !done) throw new CliError(`${what}; use -f to wait for it`)
        session.warn(what)
      }
      return 0
    }
    if (await pause(session.io.pollMs, session.io.signal)) {
      for (const t of targets) flush(session, t, cursors.get(t)!, prefixed)
      return 0
    }
    wf = await requireWorkflow(session, name)
  }
}

export const logsCommand: Command = {
  name: 'logs',
  args: '<workflow> [step]',
  arity: [1, 2],
  summary: 'Print the logs of a step\'s pod (or of every step, prefixed)',
  description: 'Prints the log of the pod of the step\'s current Job (from the run\'s status). Without a step, prints every '
    + 'step that has a Job, in dependency order, each line prefixed with [step]. -f follows: it keeps printing new lines '
    + 'until the step finishes (or, without a step, until the run ends), across retries.',
  flags: [{ name: 'follow', short: 'f', description: 'keep printing new lines until the step (or run) finishes' }],
  examples: ['kinetic logs incident-42 triage', 'kinetic logs incident-42 -f'],
  run: (session: Session, args: ParsedArgs) => showLogs(session, args.positionals[0]!, args.positionals[1], has(args, 'follow')),
}

import { isTerminalPhase } from '../../shared/workflow/plan/run-status.js'
import { buildRun, isTemplate, randomSuffix } from '../../shared/template/run-builder.js'
import type { Workflow } from '../../shared/schemas/workflow.js'
import { has, parseParams, type FlagSpec, type ParsedArgs } from '../args.js'
import type { Command, Session } from '../command.js'
import { CliError } from '../errors.js'
import { pause } from '../io.js'
import { between, formatObjects } from '../output.js'
import { postRunControl, runControlUrl, segments, SERVER_FLAG } from '../run-control.js'
import { requireWorkflow, WORKFLOWS } from '../workflows.js'

/** `--param k=v`, repeatable. */
export const PARAM_FLAG: FlagSpec = { name: 'param', short: 'p', value: 'key=value', repeatable: true, description: 'set a parameter (repeatable); merged over the template\'s spec.parameters' }

/** Creates a manual run of a template (a random suffix; a taken name is retried once); returns it. */
export async function createManualRun(session: Session, template: Workflow, parameters: Record<string, string>): Promise<Workflow> {
  const namespace = session.namespace
  for (let attempt = 1; attempt <= 2; attempt++) {
    const run = buildRun({ template, type: 'manual', source: session.config.user, suffix: randomSuffix(), parameters })
    const created = await session.call({ verb: 'create', resource: WORKFLOWS, namespace }, (kube) => kube.createWorkflow(run))
    if (created !== 'exists') return created
  }
  throw new CliError(`could not find a free run name for template ${template.metadata.name}; try again`)
}

/** Asks run-control for a manual run of a template (it records the verified user); returns the run's name. */
export async function createRunThroughServer(session: Session, server: string, template: string, parameters: Record<string, string>): Promise<{ name: string; answer: Record<string, unknown> }> {
  const answer = await postRunControl(session, server, `/api/run${segments(session.namespace, template)}`,
    Object.keys(parameters).length > 0 ? { parameters } : {}, `"create" on workflows.purko.io and "get" on ${template} in namespace ${session.namespace}`)
  return { name: typeof answer.run === 'string' ? answer.run : '', answer }
}

/** Prints a created run: its name, or the object with -o. */
export function printRun(session: Session, run: Workflow): void {
  if (session.format === 'table') session.out(`${run.metadata.name}\n`)
  else session.out(formatObjects(session.format, run))
}

/** Polls a run until it ends (or Ctrl-C); exit 0 when it succeeded, 1 otherwise. */
export async function waitForRun(session: Session, name: string): Promise<number> {
  for (;;) {
    const wf = await requireWorkflow(session, name)
    const phase = wf.status?.phase
    if (isTerminalPhase(phase)) {
      const took = between(wf.status?.startTime, wf.status?.completionTime, session.io.now())
      const line = `${name} ${phase}${took ? ` in ${took}` : ''}${wf.status?.message ? `: ${wf.status.message}` : ''}`
      if (phase === 'Succeeded') {
        if (session.format === 'table') session.out(`${line}\n`)
        return 0
      }
      session.warn(line)
      return 1
    }
    if (await pause(session.io.pollMs, session.io.signal)) {
      session.warn(`stopped waiting; ${name} is ${phase ?? 'not started yet'}`)
      return 1
    }
  }
}

/** Refuses a Workflow that is not a template, saying what to do instead. */
export function requireTemplate(wf: Workflow): void {
  if (isTemplate(wf)) return
  const name = wf.metadata.name
  throw new CliError(`workflow ${name} is not a template (no purko.io/template: "true" annotation and no spec.trigger.schedule.cron); run it again with \`kinetic rerun ${name}\``)
}

export const runCommand: Command = {
  name: 'run',
  args: '<template>',
  arity: [1, 1],
  summary: 'Start a run of a template',
  description: 'Creates a run of the template Workflow (a Workflow annotated purko.io/template: "true", or one with a schedule) '
    + 'named <template>-run-<8 hex>, with --param values merged over its parameters, and prints the run\'s name. '
    + 'The run records you (the kubeconfig user) as its trigger source. With --wait, waits for the run to end and '
    + 'exits 0 only when it succeeded. With --server (or $KINETIC_RUN_CONTROL_URL) run-control creates the run and records '
    + 'your verified identity.',
  flags: [PARAM_FLAG, { name: 'wait', description: 'wait for the run to finish; exit 1 unless it succeeded' }, SERVER_FLAG],
  examples: ['kinetic run nightly-report', 'kinetic run nightly-report --param region=eu --param day=monday --wait'],
  async run(session: Session, args: ParsedArgs): Promise<number> {
    const parameters = parseParams(args.flags.get('param') ?? [])
    const server = runControlUrl(session, args)
    if (server) {
      const { name, answer } = await createRunThroughServer(session, server, args.positionals[0]!, parameters)
      session.out(session.format === 'table' ? `${name}\n` : formatObjects(session.format, answer))
      return has(args, 'wait') ? waitForRun(session, name) : 0
    }
    const template = await requireWorkflow(session, args.positionals[0]!)
    requireTemplate(template)
    const run = await createManualRun(session, template, parameters)
    printRun(session, run)
    return has(args, 'wait') ? waitForRun(session, run.metadata.name ?? '') : 0
  },
}

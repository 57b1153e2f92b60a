import { rerunAnnotations, rerunRefusal } from '../../shared/run-control/run-checks.js'
import type { Workflow } from '../../shared/schemas/workflow.js'
import { flag, parseParams, type ParsedArgs } from '../args.js'
import type { Command, Session } from '../command.js'
import { CliError } from '../errors.js'
import { formatObjects } from '../output.js'
import { postRunControl, REASON_FLAG, runControlUrl, segments, SERVER_FLAG } from '../run-control.js'
import { guardedWrite } from '../workflows.js'
import { PARAM_FLAG } from './run.js'

/** Asks for a fresh run of a plain Workflow with parameter overrides (RV-guarded, one retry). */
export async function rerunWorkflow(session: Session, name: string, parameters: Record<string, string>): Promise<Workflow> {
  return guardedWrite(session, name, 'patch', (kube, wf, rv) => kube.patchWorkflow(session.namespace, name, rv, {
    annotations: rerunAnnotations(wf, session.io.now().toISOString()),
    ...(Object.keys(parameters).length > 0 ? { parameters } : {}),
  }), (wf) => {
    if (rerunRefusal(wf)) throw new CliError(`workflow ${name} is a template and never runs itself; start a run with \`kinetic run ${name}\``)
  })
}

/** Prints the outcome of a rerun. */
export function printRerun(session: Session, wf: Workflow | Record<string, unknown>, name: string): void {
  if (session.format === 'table') session.out(`workflow ${name} rerun requested\n`)
  else session.out(formatObjects(session.format, wf))
}

export const rerunCommand: Command = {
  name: 'rerun',
  args: '<workflow>',
  arity: [1, 1],
  summary: 'Run a Workflow again (fresh run id, fresh Jobs)',
  description: 'Sets a new purko.io/rerun annotation, so the Workflow starts a fresh run; the previous run\'s cancel, '
    + 'approvals and denials are removed, and --param values are merged into spec.parameters. A run still in progress is '
    + 'superseded (its Jobs are stopped). With --server (or $KINETIC_RUN_CONTROL_URL) the request goes through run-control, '
    + 'which records who asked.',
  flags: [PARAM_FLAG, REASON_FLAG, SERVER_FLAG],
  examples: ['kinetic rerun incident-42', 'kinetic rerun incident-42 --param severity=high'],
  async run(session: Session, args: ParsedArgs): Promise<number> {
    const name = args.positionals[0]!
    const parameters = parseParams(args.flags.get('param') ?? [])
    const server = runControlUrl(session, args)
    const reason = flag(args, 'reason')
    if (server) {
      const body = { ...(Object.keys(parameters).length > 0 ? { parameters } : {}), ...(reason !== undefined ? { reason } : {}) }
      const answer = await postRunControl(session, server, `/api/rerun${segments(session.namespace, name)}`, body,
        `"patch" on workflows.purko.io in namespace ${session.namespace}`)
      printRerun(session, answer, name)
      return 0
    }
    if (reason !== undefined) session.warn('note: --reason is recorded only through run-control (--server); the annotation carries no reason')
    printRerun(session, await rerunWorkflow(session, name, parameters), name)
    return 0
  },
}

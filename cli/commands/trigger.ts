import { isTemplate } from '../../shared/template/run-builder.js'
import { parseParams, type ParsedArgs } from '../args.js'
import type { Command, Session } from '../command.js'
import { requireWorkflow } from '../workflows.js'
import { printRerun, rerunWorkflow } from './rerun.js'
import { formatObjects } from '../output.js'
import { postRunControl, runControlUrl, segments, SERVER_FLAG } from '../run-control.js'
import { createManualRun, createRunThroughServer, PARAM_FLAG, printRun } from './run.js'

export const triggerCommand: Command = {
  name: 'trigger',
  args: '<workflow>',
  arity: [1, 1],
  summary: 'Start a template\'s run, or rerun a plain Workflow (purkoctl\'s trigger)',
  description: 'For a template, does what `run` does and prints the new run\'s name. For a plain Workflow, does what '
    + '`rerun` does: a fresh run with --param values merged into spec.parameters. With --server (or '
    + '$KINETIC_RUN_CONTROL_URL) run-control does either and records your verified identity.',
  flags: [PARAM_FLAG, SERVER_FLAG],
  examples: ['kinetic trigger weekly-capacity-review', 'kinetic trigger incident-42 --param severity=high'],
  async run(session: Session, args: ParsedArgs): Promise<number> {
    const name = args.positionals[0]!
    const parameters = parseParams(args.flags.get('param') ?? [])
    const wf = await requireWorkflow(session, name)
    const server = runControlUrl(session, args)
    if (server && isTemplate(wf)) {
      const { name: run, answer } = await createRunThroughServer(session, server, name, parameters)
      session.out(session.format === 'table' ? `${run}\n` : formatObjects(session.format, answer))
      return 0
    }
    if (server) {
      const answer = await postRunControl(session, server, `/api/rerun${segments(session.namespace, name)}`,
        Object.keys(parameters).length > 0 ? { parameters } : {}, `"patch" on workflows.purko.io in namespace ${session.namespace}`)
      printRerun(session, answer, name)
      return 0
    }
    if (isTemplate(wf)) {
      printRun(session, await createManualRun(session, wf, parameters))
      return 0
    }
    printRerun(session, await rerunWorkflow(session, name, parameters), name)
    return 0
  },
}

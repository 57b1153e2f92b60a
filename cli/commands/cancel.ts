import { cancelRefusal } from '../../shared/run-control/run-checks.js'
import { ANNOTATION_CANCEL } from '../../shared/schemas/labels.js'
import { flag, type ParsedArgs } from '../args.js'
import type { Command, Session } from '../command.js'
import { CliError } from '../errors.js'
import { formatObjects } from '../output.js'
import { postRunControl, REASON_FLAG, runControlUrl, segments, SERVER_FLAG } from '../run-control.js'
import { guardedWrite } from '../workflows.js'

export const cancelCommand: Command = {
  name: 'cancel',
  args: '<workflow>',
  arity: [1, 1],
  summary: 'Cancel a run in progress',
  description: 'Writes purko.io/cancel: "true": the engine deletes the run\'s Jobs, marks unfinished steps Skipped and ends the '
    + 'run as Cancelled. A run that already finished is refused. With --server (or $KINETIC_RUN_CONTROL_URL) the request goes '
    + 'through run-control, which records who asked.',
  flags: [REASON_FLAG, SERVER_FLAG],
  examples: ['kinetic cancel incident-42'],
  async run(session: Session, args: ParsedArgs): Promise<number> {
    const name = args.positionals[0]!
    const server = runControlUrl(session, args)
    const reason = flag(args, 'reason')
    if (server) {
      const answer = await postRunControl(session, server, `/api/cancel${segments(session.namespace, name)}`, reason !== undefined ? { reason } : {},
        `"patch" on workflows.purko.io in namespace ${session.namespace}`)
      if (session.format === 'table') session.out(`workflow ${name} cancel requested\n`)
      else session.out(formatObjects(session.format, answer))
      return 0
    }
    if (reason !== undefined) session.warn('note: --reason is recorded only through run-control (--server); the annotation carries no reason')
    const updated = await guardedWrite(session, name, 'patch', (kube, _wf, rv) =>
      kube.patchWorkflowMetadata(session.namespace, name, rv, { annotations: { [ANNOTATION_CANCEL]: 'true' } }),
    (wf) => {
      const refusal = cancelRefusal(wf)
      if (refusal?.kind === 'template') throw new CliError(`workflow ${name} is a template and has no run of its own; cancel one of its runs (see \`kinetic status ${name}\`)`)
      if (refusal?.kind === 'run-finished') throw new CliError(`workflow ${name} already finished (${refusal.phase}); nothing to cancel`)
    })
    if (session.format === 'table') session.out(`workflow ${name} cancel requested\n`)
    else session.out(formatObjects(session.format, updated))
    return 0
  },
}

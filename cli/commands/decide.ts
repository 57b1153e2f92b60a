import { isFinishedStepPhase } from '../../shared/workflow/plan/run-status.js'
import { decisionRefusal } from '../../shared/run-control/run-checks.js'
import { ANNOTATION_APPROVE_PREFIX, ANNOTATION_DENY_PREFIX } from '../../shared/schemas/labels.js'
import type { Workflow } from '../../shared/schemas/workflow.js'
import { flag, type ParsedArgs } from '../args.js'
import type { Command, Session } from '../command.js'
import { CliError } from '../errors.js'
import { formatObjects } from '../output.js'
import { postRunControl, runControlUrl, segments, SERVER_FLAG } from '../run-control.js'
import { guardedWrite } from '../workflows.js'

type Verdict = 'approve' | 'deny'

/** Pure: why a step cannot be decided on any more (run-control's reading, in the CLI's words), or undefined when it can. */
export function refusalFor(wf: Workflow, step: string, verdict: Verdict): string | undefined {
  const name = wf.metadata.name ?? ''
  const refusal = decisionRefusal(wf, step)
  switch (refusal?.kind) {
    case undefined: return undefined
    case 'template': return `workflow ${name} is a template and never runs itself; ${verdict} the step on one of its runs`
    case 'unknown-step': return `step ${step} not found in workflow ${name} (steps: ${refusal.steps.join(', ')})`
    case 'run-finished': return `workflow ${name} already finished (${refusal.phase}); nothing to ${verdict}`
    case 'step-started':
      return `step ${step} of workflow ${name} already ${isFinishedStepPhase(refusal.phase) ? 'finished' : 'started'} (${refusal.phase}); nothing to ${verdict}`
  }
}

function decideCommand(verdict: Verdict): Command {
  const noun = verdict === 'approve' ? 'approval' : 'denial'
  const annotation = verdict === 'approve' ? ANNOTATION_APPROVE_PREFIX : ANNOTATION_DENY_PREFIX
  return {
    name: verdict,
    args: '<workflow> <step>',
    arity: [2, 2],
    summary: verdict === 'approve' ? 'Approve a step that waits for a person' : 'Deny a step that waits for a person (it fails)',
    description: `Writes ${annotation}<step>: "true" on the Workflow with your own credentials (guarded by its resourceVersion; `
      + 'retried once when it changed meanwhile). A step that does not exist or already started is refused. '
      + 'With --server (or $KINETIC_RUN_CONTROL_URL) the request goes through run-control instead, which verifies who you are '
      + `and records the ${noun} (user, time, --reason) on the Workflow and in an Event.`,
    flags: [{ name: 'reason', value: 'text', description: `why (recorded by run-control with the ${noun})` }, SERVER_FLAG],
    examples: [`kinetic ${verdict} deploy-prod rollout`, `kinetic ${verdict} deploy-prod rollout --reason "change window" --server https://run-control.example.com`],
    async run(session: Session, args: ParsedArgs): Promise<number> {
      const [name, step] = args.positionals as [string, string]
      const reason = flag(args, 'reason')
      const server = runControlUrl(session, args)
      if (server) {
        const answer = await postRunControl(session, server, `/api/${verdict}${segments(session.namespace, name, step)}`,
          reason !== undefined ? { reason } : {}, `the custom verb "approve" on workflows.purko.io in namespace ${session.namespace}`)
        if (session.format === 'table') session.out(`step ${step} of workflow ${name} ${verdict === 'approve' ? 'approved' : 'denied'}\n`)
        else session.out(formatObjects(session.format, answer))
        return 0
      }
      if (reason !== undefined) session.warn('note: --reason is recorded only through run-control (--server); the annotation carries no reason')
      const updated = await guardedWrite(session, name, 'patch', (kube, _wf, rv) =>
        kube.patchWorkflowMetadata(session.namespace, name, rv, { annotations: { [`${annotation}${step}`]: 'true' } }),
      (wf) => {
        const refusal = refusalFor(wf, step, verdict)
        if (refusal) throw new CliError(refusal)
      })
      if (session.format === 'table') session.out(`step ${step} of workflow ${name} ${verdict === 'approve' ? 'approved' : 'denied'}\n`)
      else session.out(formatObjects(session.format, updated))
      return 0
    },
  }
}

export const approveCommand = decideCommand('approve')
export const denyCommand = decideCommand('deny')

// Serves: purko's dashboard run-control endpoints (step approvals, cancel, rerun), done safely:
// approve/deny a step, cancel, rerun, a manual run of a template, step logs, agent promotion
// approvals. No Trigger: people, the CLI and dashboards call it over HTTP.
// Reads: TokenReview and SubjectAccessReview for the caller (and for its impersonation of a
// person, Impersonate-User/-Group/-Uid, as kube-apiserver checks it), then the Workflow or Agent acted on
// (Jobs, pods and a pod log for logs). Writes: one merge patch of purko's annotations beside the
// verified identity (kinetic.dev/decision-<step>, kinetic.dev/requested-by), a run Workflow, Events.
import type { Context, Hono } from 'hono'
import { bodyLimit } from 'hono/body-limit'
import { ConflictError, TransientError } from '../../shared/core/errors.js'
import { baseApp } from '../../shared/http/app.js'
import type { AccessAttributes, Kube, TokenIdentity } from '../../shared/kube/port.js'
import type { FunctionKube } from './kube-verbs.js'
import type { Logger } from '../../shared/log.js'
import { decodeStepStates } from '../../shared/workflow/plan/step-states.js'
import { accessFor, forbiddenMessage } from '../../shared/run-control/access.js'
import { impersonatedIdentity, impersonationAccess, impersonationForbiddenMessage, impersonationOf } from '../../shared/run-control/impersonation.js'
import type { RunControlConfig } from '../../shared/run-control/config.js'
import { conflict, notFound, refusalOf, RunControlError } from '../../shared/run-control/errors.js'
import { requestLogFields } from '../../shared/run-control/log-line.js'
import { jobState, statusLogView, tailLines, type LogsView } from '../../shared/run-control/logs.js'
import {
  cancelAnnotations, cancelEvent, checkCancel, checkDecision, checkPromotion, checkRerun,
  decisionAnnotations, decisionEvent, promotionEvent, promotionValue, rerunEvent, rerunPatch, runEvent, type Actor,
} from '../../shared/run-control/patches.js'
import { currentRunStatus } from '../../shared/run-control/run-checks.js'
import { MAX_BODY_BYTES, parseAction, type Action, type ActionKind } from '../../shared/run-control/request.js'
import { manualRun, manualRunSuffix } from '../../shared/run-control/runs.js'
import { findStepPod } from '../../shared/run-control/step-pod.js'
import type { Agent } from '../../shared/schemas/agent.js'
import { ANNOTATION_APPROVE_PROMOTION } from '../../shared/schemas/labels.js'
import type { Workflow } from '../../shared/schemas/workflow.js'
import { randomSuffix, templateOf } from '../../shared/template/run-builder.js'

/** Who every call is with `KINETIC_RUN_CONTROL_AUTH=none` (local development only). */
export const ANONYMOUS: TokenIdentity = { username: 'anonymous' }

export interface RunControlDeps {
  kube: FunctionKube
  log: Logger
  now: () => Date
  config: RunControlConfig
  /** The suffix of a manual run without an Idempotency-Key (random by default). */
  randomSuffix?: () => string
}

/** One request being served: who asks and when. */
interface Call {
  deps: RunControlDeps
  /** Whose rights the action is checked against: the caller, or the person it impersonates. */
  caller: TokenIdentity
  actor: Actor
}

interface Answer {
  status: 200 | 201
  body: Record<string, unknown>
}

type Handler<A extends Action> = (call: Call, action: A) => Promise<Answer>

/** The run-control function: JSON over HTTP, every caller authenticated and authorized by the API server. */
export function createApp(deps: RunControlDeps): Hono {
  const app = baseApp(deps.log)
  if (deps.config.auth === 'none') {
    deps.log.warn({ auth: 'none' }, 'Caller authentication is off (KINETIC_RUN_CONTROL_AUTH=none, local development only): every call is allowed, as anonymous')
  }
  app.use('/api/*', bodyLimit({
    maxSize: MAX_BODY_BYTES,
    onError: (c) => c.json({ error: 'payload_too_large', message: `The body must be at most ${MAX_BODY_BYTES} bytes` }, 413),
  }))

  const endpoint = (method: 'GET' | 'POST', path: string, kind: ActionKind) => {
    app.on(method, path, (c) => serve(deps, kind, c))
    app.all(path, (c) => c.json({ error: 'method_not_allowed', message: `${method} required` }, 405, { Allow: method }))
  }
  for (const kind of ['approve', 'deny'] as const) {
    endpoint('POST', `/api/${kind}/:namespace/:workflow/:step`, kind)
    // purko's dashboard path, in the agent namespace.
    endpoint('POST', `/api/${kind}/:workflow/:step`, kind)
  }
  endpoint('POST', '/api/cancel/:namespace/:workflow', 'cancel')
  // purko's dashboard path first: it would otherwise read as the namespace "workflow".
  endpoint('POST', '/api/rerun/workflow/:workflow', 'rerun')
  endpoint('POST', '/api/rerun/:namespace/:workflow', 'rerun')
  endpoint('POST', '/api/run/:namespace/:template', 'run')
  endpoint('GET', '/api/logs/:namespace/:workflow/:step', 'logs')
  endpoint('GET', '/api/logs/:workflow/:step', 'logs')
  endpoint('POST', '/api/agents/:namespace/:agent/approve-promotion', 'promote')

  app.all('/api/*', (c) => c.json({ error: 'not_found', message: `No endpoint ${c.req.method} ${c.req.path}` }, 404))
  return app
}

const HANDLERS: { [K in ActionKind]: Handler<Extract<Action, { kind: K }>> } = {
  approve: decide,
  deny: decide,
  cancel,
  rerun,
  run,
  logs,
  promote,
}

/** Authenticate, parse, authorize, act; every refusal is a JSON answer, anything else a 500. */
async function serve(deps: RunControlDeps, kind: ActionKind, c: Context): Promise<Response> {
  const start = performance.now()
  let action: Action | undefined
  let caller: TokenIdentity | undefined
  let via: string | undefined
  try {
    const authenticated = await authenticate(deps, c.req.header('authorization'))
    caller = authenticated
    const acting = await impersonate(deps, authenticated, c.req.raw.headers)
    caller = acting.subject
    via = acting.via
    action = parseAction(kind, {
      params: c.req.param() as Record<string, string>,
      idempotencyKey: c.req.header('idempotency-key'),
      body: kind === 'logs' ? '' : await c.req.text(),
    }, deps.config.agentNamespace)
    await authorize(deps, caller, accessFor(action))
    const call: Call = { deps, caller, actor: { user: caller.username, ...(via ? { via } : {}), now: deps.now().toISOString() } }
    const answer = await (HANDLERS[kind] as Handler<Action>)(call, action)
    deps.log.info(withVia(requestLogFields(kind, action, caller.username, answer.status, 'ok', performance.now() - start), via), 'Run-control request')
    return c.json(answer.body, answer.status)
  } catch (err) {
    const refusal = refusalOf(err)
    if (!refusal) {
      deps.log.error({ ...withVia(requestLogFields(kind, action, caller?.username, 500, 'error', performance.now() - start), via), err: err instanceof Error ? err.message : String(err) }, 'Run-control request failed unexpectedly')
      throw err
    }
    const fields = withVia(requestLogFields(kind, action, caller?.username, refusal.status, refusal.code, performance.now() - start), via)
    if (refusal.code === 'unavailable') deps.log.warn({ ...fields, reason: causeOf(err) }, 'Run-control request refused: the Kubernetes API is unavailable')
    else deps.log.info({ ...fields, ...(refusal.detail ? { reason: refusal.detail } : {}) }, 'Run-control request refused')
    const headers: Record<string, string> = {}
    if (refusal.code === 'unauthorized') headers['WWW-Authenticate'] = 'Bearer'
    if (refusal.code === 'unavailable') headers['Retry-After'] = '5'
    return c.json(refusal.body(), refusal.status, headers)
  }
}

function causeOf(err: unknown): string | undefined {
  const cause = (err as { cause?: unknown }).cause
  return cause instanceof Error ? cause.message : err instanceof Error ? err.message : undefined
}

/** TokenReview of the bearer token (with the configured audience); a token that does not authenticate is 401. */
async function authenticate(deps: RunControlDeps, header: string | undefined): Promise<TokenIdentity> {
  if (deps.config.auth === 'none') return ANONYMOUS
  const token = /^Bearer +([^\s]+) *$/i.exec(header ?? '')?.[1]
  const identity = token ? await deps.kube.reviewToken(token, deps.config.audience ? [deps.config.audience] : undefined) : null
  if (!identity) throw new RunControlError('unauthorized')
  return identity
}

/** Every SubjectAccessReview must allow, before anything is read or written for the caller; the first denied one is told. */
async function authorize(
  deps: RunControlDeps, caller: TokenIdentity, checks: AccessAttributes[],
  message: (user: string, denied: AccessAttributes) => string = forbiddenMessage,
): Promise<void> {
  if (deps.config.auth === 'none') return
  const answers = await Promise.all(checks.map((a) => deps.kube.reviewAccess(caller, a)))
  const denied = checks.find((_, i) => !answers[i])
  if (denied) throw new RunControlError('forbidden', message(caller.username, denied))
}

/**
 * With Impersonate-User, the authenticated caller acts as the person it names once it passes
 * the `impersonate` reviews (403 naming the first one denied); `via` is the caller, for the
 * records. With auth none the header is believed as it is (local development: everything is
 * allowed anyway), so records name the local admin; there is no verified caller to name as `via`.
 */
async function impersonate(deps: RunControlDeps, caller: TokenIdentity, headers: Headers): Promise<{ subject: TokenIdentity; via?: string }> {
  const request = impersonationOf(headers)
  if (!request) return { subject: caller }
  if (deps.config.auth === 'none') return { subject: impersonatedIdentity(request) }
  await authorize(deps, caller, impersonationAccess(request), impersonationForbiddenMessage)
  return { subject: impersonatedIdentity(request), via: caller.username }
}

const withVia = <T extends object>(fields: T, via: string | undefined): T => (via ? { ...fields, via } : fields)

/**
 * Reads the Workflow, lets `plan` check it and say what to write, and writes it guarded by the
 * resourceVersion read; a lost race is read and planned once more, a second one is 409.
 */
async function patchWorkflowOnce(
  call: Call, namespace: string, name: string,
  write: (wf: Workflow) => Promise<Workflow>,
): Promise<Workflow> {
  for (let attempt = 0; ; attempt++) {
    const wf = await call.deps.kube.getWorkflow(namespace, name)
    if (!wf) throw notFound(`Workflow ${namespace}/${name} not found`)
    try {
      return await write(wf)
    } catch (err) {
      if (!(err instanceof ConflictError) || attempt > 0) throw err
    }
  }
}

/** An Event is the audit trail beside the annotation, which already holds the identity: a failed Event is logged, not answered. */
async function recordEvent(call: Call, event: Parameters<Kube['createEvent']>[0]): Promise<void> {
  try {
    await call.deps.kube.createEvent(event)
  } catch (err) {
    call.deps.log.warn({ reason: event.reason, namespace: event.metadata?.namespace, name: event.involvedObject?.name, err: err instanceof Error ? err.message : String(err), transient: err instanceof TransientError }, 'Could not record the Event of a run-control request')
  }
}

async function decide(call: Call, action: Extract<Action, { kind: 'approve' | 'deny' }>): Promise<Answer> {
  const verdict = action.kind === 'approve' ? 'approved' : 'denied'
  const { namespace, workflow, step, reason } = action
  const written = await patchWorkflowOnce(call, namespace, workflow, (wf) => {
    checkDecision(wf, step)
    return call.deps.kube.patchWorkflowMetadata(namespace, workflow, wf.metadata.resourceVersion ?? '', {
      annotations: decisionAnnotations(wf, step, verdict, call.actor, reason),
    })
  })
  await recordEvent(call, decisionEvent(written, step, verdict, call.actor, reason))
  return { status: 200, body: { status: verdict, workflow, step, namespace, user: call.actor.user } }
}

async function cancel(call: Call, action: Extract<Action, { kind: 'cancel' }>): Promise<Answer> {
  const { namespace, workflow, reason } = action
  const written = await patchWorkflowOnce(call, namespace, workflow, (wf) => {
    checkCancel(wf)
    return call.deps.kube.patchWorkflowMetadata(namespace, workflow, wf.metadata.resourceVersion ?? '', { annotations: cancelAnnotations(call.actor, reason) })
  })
  await recordEvent(call, cancelEvent(written, call.actor, reason))
  return { status: 200, body: { status: 'cancelled', workflow, namespace, user: call.actor.user } }
}

async function rerun(call: Call, action: Extract<Action, { kind: 'rerun' }>): Promise<Answer> {
  const { namespace, workflow, parameters, reason } = action
  const written = await patchWorkflowOnce(call, namespace, workflow, (wf) => {
    checkRerun(wf)
    return call.deps.kube.patchWorkflow(namespace, workflow, wf.metadata.resourceVersion ?? '', rerunPatch(wf, parameters, call.actor, reason))
  })
  await recordEvent(call, rerunEvent(written, parameters, call.actor, reason))
  return {
    status: 200,
    body: { status: 'restarted', name: workflow, workflow, namespace, user: call.actor.user, parameters: written.spec.parameters ?? {} },
  }
}

async function run(call: Call, action: Extract<Action, { kind: 'run' }>): Promise<Answer> {
  const { kube } = call.deps
  const { namespace, template: name, parameters, idempotencyKey } = action
  const template = await kube.getWorkflow(namespace, name)
  if (!template) throw notFound(`Workflow ${namespace}/${name} not found`)
  const user = call.actor.user
  const random = call.deps.randomSuffix ?? randomSuffix
  // Without an Idempotency-Key a taken name is a random collision: one more try with another suffix.
  for (let attempt = 0; attempt < 2; attempt++) {
    const desired = manualRun(template, user, parameters, manualRunSuffix(template, user, idempotencyKey, random()))
    const runName = desired.metadata.name ?? ''
    const created = await kube.createWorkflow(desired)
    if (created !== 'exists') {
      await recordEvent(call, runEvent(template, runName, call.actor))
      return { status: 201, body: { status: 'triggered', run: runName, namespace, template: name, user } }
    }
    if (idempotencyKey !== undefined) {
      const existing = await kube.getWorkflow(namespace, runName)
      if (existing && templateOf(existing) !== name) throw conflict(`Workflow ${namespace}/${runName} exists and is not a run of ${name}`)
      return { status: 200, body: { status: 'duplicate', run: runName, namespace, template: name, user } }
    }
  }
  throw conflict(`Could not find a free run name for template ${namespace}/${name}; try again`)
}

async function logs(call: Call, action: Extract<Action, { kind: 'logs' }>): Promise<Answer> {
  const { kube } = call.deps
  const { namespace, workflow, step } = action
  const wf = await kube.getWorkflow(namespace, workflow)
  if (!wf) throw notFound(`Workflow ${namespace}/${workflow} not found`)
  if (!wf.spec.steps.some((s) => s.name === step)) throw notFound(`Workflow ${namespace}/${workflow} has no step "${step}"`)
  const status = currentRunStatus(wf)
  const phase = status ? decodeStepStates({ ...wf, status }).get(step)?.phase : undefined
  const stepStatus = status?.stepStatuses?.find((s) => s.name === step)
  const { job, pod: podName, waiting } = await findStepPod(kube, namespace, workflow, step, stepStatus?.jobName)
  const jobName = job?.metadata?.name
  if (!job || !jobName) return { status: 200, body: { ...statusLogView(phase, stepStatus, 'no job') } }
  if (!podName) return { status: 200, body: { ...statusLogView(phase, stepStatus, 'no pods') } }
  // A container the kubelet keeps waiting (an image it cannot pull, a crash loop) says why.
  const why = waiting ? `The pod is waiting: ${waiting}` : undefined
  let view: LogsView
  try {
    const text = await kube.readJobLog(namespace, jobName)
    view = { lines: tailLines(text ?? ''), status: jobState(job), pod: podName, ...(why ? { message: why } : {}) }
  } catch (err) {
    if (err instanceof TransientError) throw err
    // The kubelet refuses a log before the container starts (400): nothing to show yet.
    view = { lines: [], status: jobState(job), pod: podName, message: why ?? `The log of pod ${podName} cannot be read yet` }
  }
  return { status: 200, body: { ...view } }
}

async function promote(call: Call, action: Extract<Action, { kind: 'promote' }>): Promise<Answer> {
  const { kube } = call.deps
  const { namespace, agent: name, level, reason } = action
  const value = promotionValue(level, call.actor, reason)
  let written: Agent | undefined
  for (let attempt = 0; !written; attempt++) {
    const agent = await kube.getAgent(namespace, name)
    if (!agent) throw notFound(`Agent ${namespace}/${name} not found`)
    checkPromotion(agent, level, value)
    try {
      written = await kube.patchAgent(namespace, name, agent.metadata.resourceVersion ?? '', { metadata: { annotations: { [ANNOTATION_APPROVE_PROMOTION]: value } } })
    } catch (err) {
      if (!(err instanceof ConflictError) || attempt > 0) throw err
    }
  }
  await recordEvent(call, promotionEvent(written, level, call.actor, reason))
  return { status: 200, body: { status: 'approved', agent: name, namespace, level, user: call.actor.user } }
}

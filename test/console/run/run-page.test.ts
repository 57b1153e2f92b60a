import type { CoreV1Event } from '@kubernetes/client-node'
import { beforeAll, describe, expect, it } from 'vitest'
import type { Person } from '../../../shared/console/context.js'
import { runPage, stepPage, STEP_PAGE_ROWS } from '../../../shared/console/run/run-page.js'
import { ForbiddenError } from '../../../shared/core/errors.js'
import { currentRunId } from '../../../shared/workflow/plan/run-status.js'
import {
  ANNOTATION_CLOUDEVENT_ID, ANNOTATION_CLOUDEVENT_TYPE, ANNOTATION_TEMPLATE, LABEL_OUTPUTS, LABEL_RUN_ID, LABEL_STEP, LABEL_WORKFLOW,
} from '../../../shared/schemas/labels.js'
import type { StepStatus, Workflow, WorkflowStep } from '../../../shared/schemas/workflow.js'
import { EmbeddedKube } from '../../support/embedded-kube.js'
import { aStep, aWorkflow, NAMESPACE } from '../../fixtures/workflows.js'
import { requestFor, textOf } from '../pages/support.js'

const LOCAL_ADMIN: Person = { mode: 'local', name: 'kinetic-local-admin', groups: ['system:masters'], credential: { kind: 'own' } }

function aRun(steps: WorkflowStep[], statuses: StepStatus[], phase: 'Running' | 'Succeeded' = 'Running', name = 'wf'): Workflow {
  const wf = aWorkflow({ name, spec: { steps, parameters: { branch: 'main' } } })
  wf.status = { phase, runId: currentRunId(wf), startTime: '2026-12-01T11:50:00Z', stepStatuses: statuses, totalSteps: steps.length, completedSteps: 1 }
  return wf
}

const THREE = [aStep('build'), aStep('review', { dependsOn: ['build'] }), aStep('ship', { dependsOn: ['review'] })]
const WAITING: StepStatus[] = [
  { name: 'build', phase: 'Succeeded', startTime: '2026-12-01T11:50:00Z', completionTime: '2026-12-01T11:52:00Z', jobName: 'wf-build-1' },
  { name: 'review', phase: 'Pending', error: 'Waiting for human approval (set annotation purko.io/approve-review=true)' },
]

/** The elements of `markup` matching an opening-tag pattern. */
const count = (markup: string, pattern: RegExp) => [...markup.matchAll(pattern)].length

describe('the run page', () => {
  it('draws each step as a node with its phase in words, linked to its detail, beside the step table', async () => {
    const kube = new EmbeddedKube({ workflows: [aRun(THREE, WAITING)] })
    const page = await runPage(requestFor(kube, '/workflows/ai-agents/wf'), NAMESPACE, 'wf')
    const body = page.body.html
    expect(page.status).toBe(200)
    expect(body).toContain('<g class="node phase-Succeeded" data-step="build"')
    expect(body).toMatch(/<g class="node phase-Waiting" data-step="review"[^>]*><title>review: Waiting for approval<\/title>/)
    expect(body).toContain('href="/workflows/ai-agents/wf/steps/ship"')
    expect(count(body, /<path class="dag-edge"/g)).toBe(2)
    expect(body).toMatch(/<svg class="dag" role="img" aria-label="Dependency graph of 3 steps in 3 layers: 1 Waiting, 1 Pending, 1 Succeeded\./)
    expect(textOf(body)).toContain('review Waiting for approval')
    expect(body).toContain(`data-rv="${kube.workflows.get('ai-agents/wf')!.metadata.resourceVersion}"`)
    expect(page.scripts).toEqual(['run.js'])
  })

  it('is a 404 page for a Workflow that is not there', async () => {
    const page = await runPage(requestFor(new EmbeddedKube()), NAMESPACE, 'nope')
    expect(page.status).toBe(404)
    expect(textOf(page.body)).toContain('Workflow ai-agents/nope was not found')
  })

  it('escapes what the run reports: an error can never become markup', async () => {
    const kube = new EmbeddedKube({ workflows: [aRun(THREE, [{ name: 'build', phase: 'Failed', error: '<script>alert(1)</script>' }])] })
    const body = (await runPage(requestFor(kube), NAMESPACE, 'wf')).body.html
    expect(body).not.toContain('<script>alert')
    expect(body).toContain('&lt;script&gt;alert(1)&lt;/script&gt;')
  })

  it('lists the Kubernetes Events and the CloudEvents they stand for, newest first', async () => {
    const kube = new EmbeddedKube({ workflows: [aRun(THREE, WAITING)] })
    const event = (name: string, reason: string, time: string, annotations: Record<string, string> = {}): CoreV1Event => ({
      metadata: { name, namespace: NAMESPACE, annotations }, involvedObject: { kind: 'Workflow', name: 'wf', namespace: NAMESPACE },
      reason, message: `${reason} happened`, type: 'Normal', lastTimestamp: new Date(time),
    })
    kube.putEvents(event('e1', 'StepStarted', '2026-12-01T11:50:00Z', { [ANNOTATION_CLOUDEVENT_TYPE]: 'dev.kinetic.workflow.step.started', [ANNOTATION_CLOUDEVENT_ID]: 'ce-1' }))
    kube.putEvents(event('e2', 'ApprovalRequired', '2026-12-01T11:52:00Z'))
    const text = textOf((await runPage(requestFor(kube), NAMESPACE, 'wf')).body)
    expect(text.indexOf('ApprovalRequired happened')).toBeLessThan(text.indexOf('StepStarted happened'))
    expect(text).toContain('dev.kinetic.workflow.step.started ce-1')
    expect(text).toContain('dev.kinetic.workflow.event e2')
  })

  it('still shows the run when the person may not list its Events, and says so', async () => {
    const kube = new EmbeddedKube({ workflows: [aRun(THREE, WAITING)] }).failNext('listEvents', new ForbiddenError('forbidden'))
    const page = await runPage(requestFor(kube), NAMESPACE, 'wf')
    expect(page.status).toBe(200)
    expect(textOf(page.body)).toContain('You (alice) may not list Events in namespace ai-agents.')
  })

  it('shows parameters and conditions', async () => {
    const wf = aRun(THREE, WAITING)
    wf.status!.conditions = [{ type: 'Complete', status: 'False', reason: 'Waiting', message: 'review needs approval', lastTransitionTime: '2026-12-01T11:52:00Z' }]
    const text = textOf((await runPage(requestFor(new EmbeddedKube({ workflows: [wf] })), NAMESPACE, 'wf')).body)
    expect(text).toContain('Parameters branch main')
    expect(text).toContain('Complete False Waiting review needs approval')
  })

  it('offers no actions in a read-only console', async () => {
    const kube = new EmbeddedKube({ workflows: [aRun(THREE, WAITING)] })
    const body = (await runPage(requestFor(kube, '/', { person: LOCAL_ADMIN }), NAMESPACE, 'wf')).body.html
    expect(body).not.toContain('/actions/approve/')
    expect(body).toMatch(/data-action="cancel" hidden/)
    expect(body).toMatch(/data-action="rerun" hidden/)
  })

  it('offers approve and deny on the step that waits for approval, cancel and rerun with its parameters', async () => {
    const kube = new EmbeddedKube({ workflows: [aRun(THREE, WAITING)] })
    const body = (await runPage(requestFor(kube, '/', { person: LOCAL_ADMIN, config: { actions: true } }), NAMESPACE, 'wf')).body.html
    expect(body).toContain('action="/actions/approve/ai-agents/wf/review"')
    expect(body).toContain('action="/actions/deny/ai-agents/wf/review"')
    expect(body).not.toContain('/actions/approve/ai-agents/wf/ship')
    expect(body).toMatch(/data-action="cancel"><details><summary>Cancel run…<\/summary><form[^>]*action="\/actions\/cancel\/ai-agents\/wf"/)
    expect(body).toMatch(/data-action="rerun"><details><summary>Rerun…<\/summary><form[^>]*action="\/actions\/rerun\/ai-agents\/wf"[\s\S]*data-parameter="branch" type="text" value="main"/)
  })

  it('shows only the actions the person may take, as the API server answers for them', async () => {
    const kube = new EmbeddedKube({ workflows: [aRun(THREE, WAITING)] })
    kube.identity = { username: 'alice', groups: ['team-a'] }
    kube.allow('alice', 'approve', 'workflows', NAMESPACE)
    const body = (await runPage(requestFor(kube, '/', { config: { actions: true } }), NAMESPACE, 'wf')).body.html
    expect(body).toContain('action="/actions/approve/ai-agents/wf/review"')
    expect(body).toMatch(/data-action="cancel" hidden/)
  })

  it('serves the actions area alone, as decided now, for the live page to swap in', async () => {
    const kube = new EmbeddedKube({ workflows: [aRun(THREE, WAITING)] })
    const page = await runPage(requestFor(kube, '/workflows/ai-agents/wf?fragment=1&section=actions', { person: LOCAL_ADMIN, config: { actions: true } }), NAMESPACE, 'wf')
    const body = page.body.html
    expect(page.status).toBe(200)
    expect(body).toMatch(/^<section class="run-actions"/)
    expect(body).toContain('data-action="decide" data-step="review"')
    expect(body).toContain('action="/actions/approve/ai-agents/wf/review"')
    expect(body).toMatch(/data-action="cancel"><details><summary>Cancel run…<\/summary><form/)
    // Nothing else of the page: no DAG, no Events.
    expect(body).not.toContain('<svg')
    expect(body).not.toContain('Kubernetes Events')
    // The full page says where its script finds this fragment.
    const full = (await runPage(requestFor(kube, '/workflows/ai-agents/wf', { person: LOCAL_ADMIN, config: { actions: true } }), NAMESPACE, 'wf')).body.html
    expect(full).toContain('data-actions-href="/workflows/ai-agents/wf?fragment=1&amp;section=actions"')
  })

  it('offers in the actions area only what the person may do: a reader gets no approve form', async () => {
    const kube = new EmbeddedKube({ workflows: [aRun(THREE, WAITING)] })
    kube.identity = { username: 'bob', groups: [] }
    const body = (await runPage(requestFor(kube, '/workflows/ai-agents/wf?fragment=1&section=actions', { config: { actions: true } }), NAMESPACE, 'wf')).body.html
    expect(body).toMatch(/^<section class="run-actions"/)
    expect(body).not.toContain('/actions/approve/')
    expect(body).toMatch(/data-action="cancel" hidden/)
  })

  it('marks the durations still counting with their start, and only those', async () => {
    const kube = new EmbeddedKube({ workflows: [aRun(THREE, [WAITING[0]!, { name: 'review', phase: 'Running', startTime: '2026-12-01T11:58:00Z' }])] })
    const body = (await runPage(requestFor(kube), NAMESPACE, 'wf')).body.html
    expect(body).toContain('<dd data-run-duration data-started="2026-12-01T11:50:00Z">10 min</dd>')
    expect(body).toMatch(/<tr data-step="review">.*<td class="step-duration" data-started="2026-12-01T11:58:00Z">2 min<\/td>/)
    expect(body).toMatch(/<tr data-step="build">.*<td class="step-duration">2 min<\/td>/)
  })

  it('keeps unseen room for approval forms while a step has yet to start, so they arrive without moving the page', async () => {
    const kube = new EmbeddedKube({ workflows: [aRun(THREE, [WAITING[0]!])] })
    const body = (await runPage(requestFor(kube, '/', { person: LOCAL_ADMIN, config: { actions: true } }), NAMESPACE, 'wf')).body.html
    expect(body).toContain('<div class="action action-slot" data-action="slot" aria-hidden="true" inert><h2>Step review waits for approval</h2>')
    expect(body).not.toContain('data-action="decide"')
    // Nobody who may not decide, and no finished run, gets the room.
    const reader = (await runPage(requestFor(kube, '/', { person: LOCAL_ADMIN }), NAMESPACE, 'wf')).body.html
    expect(reader).not.toContain('action-slot')
  })

  it('offers no cancel on a finished run', async () => {
    const kube = new EmbeddedKube({ workflows: [aRun(THREE, [], 'Succeeded')] })
    const body = (await runPage(requestFor(kube, '/', { person: LOCAL_ADMIN, config: { actions: true } }), NAMESPACE, 'wf')).body.html
    expect(body).toMatch(/data-action="cancel" hidden/)
    expect(body).toMatch(/data-action="rerun">/)
  })

  it('links a template to its runs instead of drawing a DAG', async () => {
    const wf = aWorkflow({ name: 'nightly', annotations: { [ANNOTATION_TEMPLATE]: 'true' }, spec: { trigger: { schedule: { cron: '0 2 * * *' } } } })
    wf.status = { recentRuns: [{ name: 'nightly-abc', phase: 'Failed', trigger: 'schedule' }] }
    const page = await runPage(requestFor(new EmbeddedKube({ workflows: [wf] })), NAMESPACE, 'nightly')
    expect(page.body.html).not.toContain('<svg')
    expect(page.body.html).toContain('href="/workflows/ai-agents/nightly-abc"')
    expect(page.body.html).toContain('href="/workflows?namespace=ai-agents&amp;template=nightly"')
    expect(textOf(page.body)).toContain('Schedule 0 2 * * *')
  })
})

describe('a 2,000-step fan-out', () => {
  const fan = [aStep('start'), ...Array.from({ length: 1998 }, (_, i) => aStep(`worker-${i}`, { dependsOn: ['start'] })), aStep('join', { dependsOn: ['worker-0', 'worker-1'] })]
  const statuses: StepStatus[] = [
    { name: 'start', phase: 'Succeeded' },
    ...Array.from({ length: 1998 }, (_, i): StepStatus => ({ name: `worker-${i}`, phase: i < 1800 ? 'Succeeded' : 'Running', startTime: '2026-12-01T11:59:00Z' })),
  ]
  // Made when this block starts: one cluster at a time, and earlier blocks make their own.
  let kube: EmbeddedKube
  beforeAll(() => { kube = new EmbeddedKube({ workflows: [aRun(fan, statuses)] }) })

  it('is drawn as one node per layer with the counts in words, and a table of 100 rows', async () => {
    const body = (await runPage(requestFor(kube, '/workflows/ai-agents/wf'), NAMESPACE, 'wf')).body.html
    expect(count(body, /<g class="node /g)).toBe(3)
    expect(textOf(body)).toContain('layer 2: 1998 steps \u2014 198 Running, 1800 Succeeded')
    expect(body).toContain('<text class="node-phase group-counts" x="10" y="55">198 Running, 1800 Succeeded</text>')
    expect(count(body, /<tr data-step=/g)).toBe(STEP_PAGE_ROWS)
    expect(textOf(body)).toContain('Page 1 of 20 (2000 steps)')
    // A drawing of every step would be > 2,000 x 400 bytes; grouped, the page is 100 table rows
    // (under 1 KB each) plus a constant-size drawing and at most 100 Events.
    expect(Buffer.byteLength(body)).toBeLessThan(150_000)
  })

  it('filters the table by phase and pages through it', async () => {
    const body = (await runPage(requestFor(kube, '/workflows/ai-agents/wf?phase=Running&page=2'), NAMESPACE, 'wf')).body.html
    const rows = [...body.matchAll(/<tr data-step="([^"]+)"/g)].map((m) => m[1])
    expect(rows).toHaveLength(98)
    expect(rows[0]).toBe('worker-1900')
    expect(textOf(body)).toContain('Page 2 of 2 (198 steps)')
    expect(body).toContain('rel="prev" href="/workflows/ai-agents/wf?phase=Running#steps"')
  })

  it('lists one group\'s steps when a group node is chosen', async () => {
    const body = (await runPage(requestFor(kube, '/workflows/ai-agents/wf?group=2'), NAMESPACE, 'wf')).body.html
    expect([...body.matchAll(/<tr data-step="([^"]+)"/g)].map((m) => m[1])).toEqual(['join'])
  })
})

describe('the step page', () => {
  function withJob(kube: EmbeddedKube, log: string, running = true) {
    kube.jobs.set('ai-agents/wf-build-1', {
      metadata: { name: 'wf-build-1', namespace: NAMESPACE, labels: { [LABEL_WORKFLOW]: 'wf', [LABEL_STEP]: 'build' } },
      status: running ? {} : { conditions: [{ type: 'Complete', status: 'True' }] },
    })
    kube.pods.set('ai-agents/wf-build-1-x', { metadata: { name: 'wf-build-1-x', namespace: NAMESPACE, labels: { 'job-name': 'wf-build-1' } }, spec: { nodeName: 'node-1', containers: [{ name: 'step', image: 'agent:9' }] }, status: { phase: running ? 'Running' : 'Succeeded' } })
    kube.logs.set('ai-agents/wf-build-1', log)
  }

  it('shows timings, attempts, the Job and the last 200 lines of its log, followed live while it runs', async () => {
    const kube = new EmbeddedKube({ workflows: [aRun(THREE, [{ name: 'build', phase: 'Running', startTime: '2026-12-01T11:58:00Z', jobName: 'wf-build-1', retryCount: 1 }])] })
    withJob(kube, Array.from({ length: 250 }, (_, i) => `line ${i}\n`).join(''))
    const page = await stepPage(requestFor(kube), NAMESPACE, 'wf', 'build')
    const text = textOf(page.body)
    expect(text).toContain('Attempts 2 (1 retry)')
    expect(text).toContain('Job wf-build-1 (running)')
    expect(text).toContain('Duration 2 min')
    const log = /<pre class="log"[^>]*>([\s\S]*?)<\/pre>/.exec(page.body.html)![1]!.split('\n')
    expect([log.length, log[0], log.at(-1)]).toEqual([200, 'line 50', 'line 249'])
    expect(page.body.html).toContain('data-log-live="/live/logs/ai-agents/wf/build"')
  })

  it('shows the output from its ConfigMap, pretty-printed and cut with a note', async () => {
    const wf = aRun(THREE, [{ name: 'build', phase: 'Succeeded', outputRef: 'wf-outputs', completionTime: '2026-12-01T11:52:00Z' }], 'Succeeded')
    const kube = new EmbeddedKube({ workflows: [wf] })
    kube.configMaps.set('ai-agents/wf-outputs', {
      metadata: { name: 'wf-outputs', namespace: NAMESPACE, labels: { [LABEL_OUTPUTS]: 'true', [LABEL_RUN_ID]: currentRunId(wf) } },
      data: { build: JSON.stringify({ image: 'x', notes: 'n'.repeat(20_000) }) },
    })
    const page = await stepPage(requestFor(kube), NAMESPACE, 'wf', 'build')
    expect(page.body.html).toContain('{\n  &quot;image&quot;: &quot;x&quot;,')
    expect(textOf(page.body)).toMatch(/truncated, \d+ bytes not shown/)
    expect(page.body.html).not.toContain('data-log-live')
  })

  it('says why the step\'s pod has not started when the kubelet keeps its container waiting', async () => {
    const kube = new EmbeddedKube({ workflows: [aRun(THREE, [{ name: 'build', phase: 'Running', startTime: '2026-12-01T11:58:00Z', jobName: 'wf-build-1' }])] })
    withJob(kube, '')
    kube.pods.set('ai-agents/wf-build-1-x', {
      // On a node: the kubelet there reports its container.
      metadata: { name: 'wf-build-1-x', namespace: NAMESPACE, labels: { 'job-name': 'wf-build-1' } }, spec: { nodeName: 'node-1', containers: [{ name: 'step', image: 'agent:9' }] },
      status: { phase: 'Pending', containerStatuses: [{ name: 'step', image: 'agent:9', imageID: '', ready: false, restartCount: 0, state: { waiting: { reason: 'ImagePullBackOff', message: 'Back-off pulling image "agent:9"' } } }] },
    })
    expect(textOf((await stepPage(requestFor(kube), NAMESPACE, 'wf', 'build')).body))
      .toContain('The pod is waiting: pod wf-build-1-x container step: ImagePullBackOff: Back-off pulling image "agent:9"')
    // A pod that runs says nothing of the kind.
    withJob(kube, 'line 1\n')
    expect(textOf((await stepPage(requestFor(kube), NAMESPACE, 'wf', 'build')).body)).not.toContain('The pod is waiting')
  })

  it('says the error of a failed step and that no Job ran for one not started', async () => {
    const kube = new EmbeddedKube({ workflows: [aRun(THREE, [{ name: 'build', phase: 'Failed', error: 'exit 3\nat main' }])] })
    expect(textOf((await stepPage(requestFor(kube), NAMESPACE, 'wf', 'build')).body)).toContain('Error exit 3 at main')
    expect(textOf((await stepPage(requestFor(kube), NAMESPACE, 'wf', 'ship')).body)).toContain('No Job has run this step yet.')
  })

  it('offers approve and deny on a step waiting for approval', async () => {
    const kube = new EmbeddedKube({ workflows: [aRun(THREE, WAITING)] })
    const body = (await stepPage(requestFor(kube, '/', { person: LOCAL_ADMIN, config: { actions: true } }), NAMESPACE, 'wf', 'review')).body.html
    expect(body).toContain('action="/actions/approve/ai-agents/wf/review"')
  })

  it('is a 404 page for a step the Workflow does not have', async () => {
    const kube = new EmbeddedKube({ workflows: [aRun(THREE, WAITING)] })
    const page = await stepPage(requestFor(kube), NAMESPACE, 'wf', 'deploy')
    expect(page.status).toBe(404)
    expect(textOf(page.body)).toContain('Step deploy of Workflow ai-agents/wf was not found')
  })
})

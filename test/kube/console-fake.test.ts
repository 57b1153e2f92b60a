// EmbeddedKube's console verbs: the real adapter on the embedded API server (console-port.test.ts),
// plus the stand-ins and injected faults the page and endpoint tests rely on.
import { describe, expect, it } from 'vitest'
import { WorkflowSchema, type Workflow } from '../../shared/schemas/workflow.js'
import { EmbeddedKube } from '../support/embedded-kube.js'
import { eventually } from '../support/eventually.js'

const NS = 'team'
const wf = (name: string): Workflow => WorkflowSchema.parse({
  apiVersion: 'purko.io/v1alpha1', kind: 'Workflow', metadata: { name, namespace: NS }, spec: { steps: [{ name: 'a', agentRef: { name: 'x' } }] },
})

describe('EmbeddedKube for the console', () => {
  it('answers self access reviews for its identity from the allow rules, and whoAmI names that identity', async () => {
    const kube = new EmbeddedKube().allow('alice', 'approve', 'workflows', NS)
    kube.identity = { username: 'alice', groups: ['team-a'] }
    expect(await kube.reviewSelfAccess([
      { verb: 'approve', group: 'purko.io', resource: 'workflows', namespace: NS, name: 'wf' },
      { verb: 'approve', group: 'purko.io', resource: 'workflows', namespace: 'other', name: 'wf' },
    ])).toEqual([true, false])
    expect(kube.selfAccessReviews.map((r) => r.allowed)).toEqual([true, false])
    expect(await kube.whoAmI()).toEqual({ username: 'alice', groups: ['team-a'] })
  })

  it('a watch replays a version newer than the one shown, then gets the fake\'s own writes of that Workflow only, and null on delete', async () => {
    const kube = new EmbeddedKube({ workflows: [wf('watched'), wf('other')] })
    const shown = kube.workflow(NS, 'watched')
    await kube.patchWorkflowStatus(NS, 'watched', String(shown.metadata.resourceVersion), { phase: 'Running' } as never)
    const seen: Array<string | null> = []
    const handle = await kube.watchWorkflow(NS, 'watched', String(shown.metadata.resourceVersion), (w) => seen.push(w ? String(w.status?.phase) : null))
    const other = kube.workflow(NS, 'other')
    await kube.patchWorkflowStatus(NS, 'other', String(other.metadata.resourceVersion), { phase: 'Failed' } as never)
    const running = kube.workflow(NS, 'watched')
    await kube.patchWorkflowStatus(NS, 'watched', String(running.metadata.resourceVersion), { phase: 'Succeeded' } as never)
    await kube.deleteWorkflow(NS, 'watched')
    // Watch events arrive over HTTP after the write returned.
    await eventually('the delete on the watch', () => seen.length >= 3, 2000, 5)
    expect(seen).toEqual(['Running', 'Succeeded', null])
    expect(kube.openWatches).toBe(1)
    handle.stop()
    await handle.done
    expect(kube.openWatches).toBe(0)
  })

  it('the server ending the watches settles done: resolved on a close, rejected with the error given', async () => {
    const kube = new EmbeddedKube({ workflows: [wf('a')] })
    const at = (await kube.getWorkflow(NS, 'a'))!.metadata.resourceVersion!
    const closed = await kube.watchWorkflow(NS, 'a', at, () => {})
    kube.endWatches()
    await expect(closed.done).resolves.toBeUndefined()
    const gone = await kube.watchWorkflow(NS, 'a', at, () => {})
    kube.endWatches(new Error('410 Gone'))
    await expect(gone.done).rejects.toThrow('410 Gone')
  })

  it('follows a running pod\'s log from its last lines until the pod ends; a finished pod\'s log ends at once', async () => {
    const kube = new EmbeddedKube()
    kube.pods.set(`${NS}/step`, { metadata: { name: 'step', namespace: NS }, status: { phase: 'Running' } })
    kube.appendPodLog(NS, 'step', 'one\ntwo\n')
    let text = ''
    const handle = await kube.followPodLog(NS, 'step', { tailLines: 1 }, (chunk) => { text += chunk })
    kube.appendPodLog(NS, 'step', 'three\n')
    kube.endPodLog(NS, 'step')
    await handle.done
    expect(text).toBe('two\nthree\n')
    kube.pods.set(`${NS}/done`, { metadata: { name: 'done', namespace: NS }, status: { phase: 'Succeeded' } })
    kube.logs.set(`${NS}/done`, 'all of it\n')
    let finished = ''
    await (await kube.followPodLog(NS, 'done', { limitBytes: 3 }, (chunk) => { finished += chunk })).done
    expect(finished).toBe('all')
    // The adapter's words for the API server's 404.
    await expect(kube.followPodLog(NS, 'missing', {}, () => {})).rejects.toThrow('Could not follow log of pod team/missing')
  })
})

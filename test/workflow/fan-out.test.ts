import { describe, expect, it } from 'vitest'
import { createApp as stepJobFinished } from '../../functions/step-job-finished/index.js'
import { createApp as workflowChanged } from '../../functions/workflow-changed/index.js'
import type { Kube } from '../../shared/kube/port.js'
import { EmbeddedKube } from '../support/embedded-kube.js'
import { deliver, RESOURCE_ADD, RESOURCE_UPDATE } from '../support/deliver.js'
import { testDeps } from '../support/engine-deps.js'
import { agentOf, workflowOf } from '../support/objects.js'

/** The Kube port whose Job creations take a moment each, counting how many are in flight at once. */
function slowJobCreates(kube: EmbeddedKube): { kube: Kube; most: () => number } {
  let inFlight = 0
  let most = 0
  const proxy = new Proxy(kube, {
    get(target, prop, receiver) {
      const value = Reflect.get(target, prop, receiver)
      if (prop !== 'createJob') return typeof value === 'function' ? value.bind(target) : value
      return async (...args: Parameters<Kube['createJob']>) => {
        inFlight++
        most = Math.max(most, inFlight)
        try {
          await new Promise((r) => setTimeout(r, 2))
          return await target.createJob(...args)
        } finally {
          inFlight--
        }
      }
    },
  })
  return { kube: proxy, most: () => most }
}

describe('a fan-out', () => {
  it('creates the Jobs of 200 steps that start together side by side, a bounded number at a time', async () => {
    const kube = new EmbeddedKube({
      workflows: [workflowOf('fan', [{ name: 'root' }, ...Array.from({ length: 200 }, (_, i) => ({ name: `b${i}`, dependsOn: ['root'] }))], { parallelism: 200 })],
      agents: [agentOf('helper')],
    })
    await deliver(workflowChanged(testDeps(kube)), RESOURCE_ADD, kube.workflow('team', 'fan'))
    const slow = slowJobCreates(kube)
    const root = kube.finishJob(kube.createdJobs[0]!, 'Succeeded', 'OUTPUT:{"ok":true}')

    expect((await deliver(stepJobFinished(testDeps(slow.kube)), RESOURCE_UPDATE, root)).status).toBe(202)

    expect(new Set(kube.createdJobs).size).toBe(201)
    expect(slow.most()).toBeGreaterThan(1)
    expect(slow.most()).toBeLessThanOrEqual(16)
    expect(kube.workflow('team', 'fan').status?.stepStatuses?.filter((s) => s.phase === 'Running')).toHaveLength(200)
  })
})

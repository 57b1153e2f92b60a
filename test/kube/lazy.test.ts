import { describe, expect, it } from 'vitest'
import { lazyKube } from '../../shared/kube/lazy.js'
import { FakeKube } from '../fakes/kube.js'

describe('lazyKube', () => {
  it('loads the real adapter only on the first call, once, and forwards every call to it', async () => {
    let loads = 0
    const fake = new FakeKube()
    const kube = lazyKube(async () => {
      loads++
      return fake
    })
    expect(loads).toBe(0)

    const [a, b] = await Promise.all([kube.getWorkflow('team', 'none'), kube.listWorkflows()])

    expect(a).toBeNull()
    expect(b).toEqual([])
    expect(loads).toBe(1)
    expect(fake.calls).toBe(2)
  })

  it('passes failures through unchanged', async () => {
    const fake = new FakeKube().failNext('listWorkflows', new Error('boom'))
    await expect(lazyKube(async () => fake).listWorkflows()).rejects.toThrow('boom')
  })
})

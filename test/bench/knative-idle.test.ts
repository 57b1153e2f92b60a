// bench/knative-idle.ts reads the API server's audit log to count Kinetic's API requests at idle:
// only kinetic-system's ServiceAccounts, only requests that completed inside the window.
import { describe, expect, it } from 'vitest'
import { kineticApiCalls, podOwner } from '../../bench/knative-idle.js'

const line = (username: string, verb: string, at: string, stage = 'ResponseComplete') =>
  JSON.stringify({ kind: 'Event', stage, verb, user: { username }, stageTimestamp: at, requestURI: '/api/v1/pods' })

describe('knative-idle', () => {
  it('counts the requests of kinetic-system identities completed in the window, per identity and verb', () => {
    const from = Date.parse('2026-12-03T10:00:00Z')
    const to = Date.parse('2026-12-03T11:00:00Z')
    const calls = kineticApiCalls([
      line('system:serviceaccount:kinetic-system:resync-tick', 'list', '2026-12-03T10:03:01.5Z'),
      line('system:serviceaccount:kinetic-system:resync-tick', 'list', '2026-12-03T10:03:01.6Z'),
      line('system:serviceaccount:kinetic-system:resync-tick', 'patch', '2026-12-03T10:03:02Z'),
      line('system:serviceaccount:kinetic-system:resources-source', 'watch', '2026-12-03T10:30:00Z'),
      // Outside the window, another namespace's identity, a stage that is not the last, and noise.
      line('system:serviceaccount:kinetic-system:resync-tick', 'list', '2026-12-03T09:59:59Z'),
      line('system:serviceaccount:kinetic-system:resync-tick', 'list', '2026-12-03T11:00:00Z'),
      line('system:serviceaccount:knative-eventing:controller', 'list', '2026-12-03T10:10:00Z'),
      line('system:serviceaccount:kinetic-system:resync-tick', 'list', '2026-12-03T10:10:00Z', 'ResponseStarted'),
      'not json system:serviceaccount:kinetic-system:x',
      '',
    ], from, to)
    expect([...calls.keys()].sort()).toEqual(['resources-source', 'resync-tick'])
    expect(Object.fromEntries(calls.get('resync-tick')!)).toEqual({ list: 2, patch: 1 })
    expect(Object.fromEntries(calls.get('resources-source')!)).toEqual({ watch: 1 })
  })

  it('names a pod by the Knative Service or source that owns it', () => {
    const pod = (labels: Record<string, string>) => ({ metadata: { name: 'p-1', labels }, spec: {}, status: {} })
    expect(podOwner(pod({ 'serving.knative.dev/service': 'resync-tick' }))).toBe('function resync-tick')
    expect(podOwner(pod({ 'eventing.knative.dev/sourceName': 'resources' }))).toBe('adapter resources')
    expect(podOwner(pod({}))).toBe('other p-1')
  })
})

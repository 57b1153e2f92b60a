// spec §6 readiness per kind (fixed table), terminating children, and ReadinessTimeout.
import { describe, expect, it } from 'vitest'
import { readinessOf, readinessTimeout, workloadReadiness, type ObservedObject } from '../../shared/recipe/plan/readiness.js'

const NOW = '2026-01-01T00:10:00Z'
const obj = (spec: ObservedObject['spec'], status: ObservedObject['status'], generation = 2): ObservedObject =>
  ({ metadata: { name: 'x', namespace: 'n', generation, annotations: { 'purko.io/manifest-digest': 'd1' } }, spec, status })

describe('readiness per kind (spec §6)', () => {
  it.each([
    ['Deployment ready', 'Deployment', obj({ replicas: 2 }, { observedGeneration: 2, replicas: 2, updatedReplicas: 2, availableReplicas: 2 }), true],
    ['Deployment: generation not observed', 'Deployment', obj({ replicas: 2 }, { observedGeneration: 1, replicas: 2, updatedReplicas: 2, availableReplicas: 2 }), false],
    ['Deployment: one unavailable', 'Deployment', obj({ replicas: 2 }, { observedGeneration: 2, replicas: 2, updatedReplicas: 2, availableReplicas: 1 }), false],
    ['Deployment: old replica still there', 'Deployment', obj({ replicas: 2 }, { observedGeneration: 2, replicas: 3, updatedReplicas: 2, availableReplicas: 2 }), false],
    ['Deployment: 0 desired, only the generation', 'Deployment', obj({ replicas: 0 }, { observedGeneration: 2 }), true],
    ['Deployment: replicas unset uses the object (API default 1)', 'Deployment', obj({}, { observedGeneration: 2, replicas: 1, updatedReplicas: 1, availableReplicas: 1 }), true],
    ['StatefulSet ready', 'StatefulSet', obj({ replicas: 1 }, { observedGeneration: 2, readyReplicas: 1, updatedReplicas: 1, currentRevision: 'a', updateRevision: 'a' }), true],
    ['StatefulSet rolling', 'StatefulSet', obj({ replicas: 1 }, { observedGeneration: 2, readyReplicas: 1, updatedReplicas: 1, currentRevision: 'a', updateRevision: 'b' }), false],
    ['StatefulSet not ready', 'StatefulSet', obj({ replicas: 2 }, { observedGeneration: 2, readyReplicas: 1, updatedReplicas: 2, currentRevision: 'a', updateRevision: 'a' }), false],
    ['DaemonSet ready', 'DaemonSet', obj({}, { observedGeneration: 2, desiredNumberScheduled: 3, numberReady: 3, updatedNumberScheduled: 3 }), true],
    ['DaemonSet on no node', 'DaemonSet', obj({}, { observedGeneration: 2, desiredNumberScheduled: 0, numberReady: 0, updatedNumberScheduled: 0 }), false],
    ['DaemonSet updating', 'DaemonSet', obj({}, { observedGeneration: 2, desiredNumberScheduled: 3, numberReady: 3, updatedNumberScheduled: 2 }), false],
    ['Job complete', 'Job', obj({}, { conditions: [{ type: 'Complete', status: 'True' }] }), true],
    ['Job running', 'Job', obj({}, {}), false],
    ['CronJob exists', 'CronJob', obj({}, {}), true],
    ['Service exists', 'Service', obj({}, {}), true],
    ['MCPServer Ready', 'MCPServer', obj({}, { phase: 'Ready' }), true],
    ['MCPServer Pending', 'MCPServer', obj({}, { phase: 'Pending' }), false],
  ] as const)('%s', (_label, kind, o, ready) => {
    expect(readinessOf(kind, o, NOW).ready).toBe(ready)
  })

  it('an absent object, a terminating one (whatever its deletionTimestamp) and a stale digest are never Ready', () => {
    const good = obj({ replicas: 1 }, { observedGeneration: 2, replicas: 1, updatedReplicas: 1, availableReplicas: 1 })
    expect(readinessOf('Deployment', undefined, NOW).ready).toBe(false)
    for (const ts of ['2026-01-01T00:00:00Z', '2099-01-01T00:00:00Z']) {
      const r = readinessOf('Deployment', { ...good, metadata: { ...good.metadata, deletionTimestamp: ts, finalizers: ['example.com/hold'] } }, NOW)
      expect(r).toMatchObject({ ready: false, message: 'Deployment n/x is terminating (finalizers: example.com/hold)' })
    }
    expect(readinessOf('Service', { metadata: { deletionTimestamp: NOW } }, NOW).ready).toBe(false)
    expect(readinessOf('Deployment', good, NOW, 'd1').ready).toBe(true)
    expect(readinessOf('Deployment', good, NOW, 'd2').ready).toBe(false)
  })

  it('a failed Job fails the workload at once with JobFailed and the condition copied', () => {
    const r = readinessOf('Job', obj({}, { conditions: [{ type: 'Failed', status: 'True', reason: 'BackoffLimitExceeded', message: 'Job has reached the specified backoff limit' }] }), NOW)
    expect(r.failed).toEqual({ reason: 'JobFailed', jobReason: 'BackoffLimitExceeded', message: 'BackoffLimitExceeded: Job has reached the specified backoff limit' })
  })

  it('details: ReplicaFailure message, counts, CronJob times', () => {
    const failing = obj({ replicas: 2 }, { observedGeneration: 2, replicas: 0, conditions: [{ type: 'ReplicaFailure', status: 'True', message: 'pods "x" is forbidden: violates PodSecurity' }] })
    expect(readinessOf('Deployment', failing, NOW).message).toBe('pods "x" is forbidden: violates PodSecurity')
    expect(readinessOf('Deployment', obj({ replicas: 2 }, { observedGeneration: 2, replicas: 2, updatedReplicas: 2, availableReplicas: 1 }), NOW).message).toBe('1/2 replicas available')
    expect(readinessOf('CronJob', obj({}, { lastScheduleTime: '2026-01-01T03:00:00Z', lastSuccessfulTime: '2026-01-01T03:00:05Z' }), NOW))
      .toMatchObject({ ready: true, lastScheduleTime: '2026-01-01T03:00:00Z', lastSuccessfulTime: '2026-01-01T03:00:05Z' })
  })
})

describe('workload readiness with Services and MCP (spec §6)', () => {
  const dep = obj({ replicas: 1 }, { observedGeneration: 2, replicas: 1, updatedReplicas: 1, availableReplicas: 1 })
  const svc = obj({}, {})
  it.each([
    ['plain with Service', { kind: 'Deployment', hasService: true }, { workload: dep, service: svc }, true, true],
    ['Service missing', { kind: 'Deployment', hasService: true }, { workload: dep }, false, false],
    ['http: MCPServer not written yet (write it now)', { kind: 'Deployment', transport: 'http', hasService: true }, { workload: dep, service: svc }, false, true],
    ['http: MCPServer written, phase not awaited', { kind: 'Deployment', transport: 'http', hasService: true }, { workload: dep, service: svc, mcpServer: obj({}, { phase: 'Pending' }) }, true, true],
    ['stdio: MCPServer Ready', { kind: 'Deployment', transport: 'stdio', hasService: false }, { mcpServer: obj({}, { phase: 'Ready' }) }, true, true],
    ['stdio: MCPServer Pending', { kind: 'Deployment', transport: 'stdio', hasService: false }, { mcpServer: obj({}, { phase: 'Pending' }) }, false, false],
  ] as const)('%s', (_label, w, observed, ready, mainReady) => {
    const r = workloadReadiness(w, observed, NOW)
    expect([r.ready, r.mainReady]).toEqual([ready, mainReady])
  })

  it('reports the MCPServer phase of an http workload', () => {
    expect(workloadReadiness({ kind: 'Deployment', transport: 'http', hasService: true }, { workload: dep, service: svc, mcpServer: obj({}, { phase: 'Error' }) }, NOW).phase).toBe('Error')
  })
})

describe('ReadinessTimeout (spec §6)', () => {
  const since = '2026-01-01T00:00:00Z'
  it('names the first not-Ready workload in order when the progress deadline expires', () => {
    const r = readinessTimeout([
      { name: 'db', kind: 'StatefulSet', detail: '0/1 replicas ready' },
      { name: 'web', kind: 'Deployment', detail: '0/2 replicas available' },
    ], since, 600, '2026-01-01T00:10:00Z')
    expect(r.expired).toEqual({ workload: 'db', reason: 'ReadinessTimeout', message: 'workload "db" (StatefulSet) was not ready within 600s: 0/1 replicas ready' })
  })

  it('a workload deadline counts from its first apply and may expire first', () => {
    const r = readinessTimeout([
      { name: 'db', kind: 'StatefulSet', detail: 'a' },
      { name: 'web', kind: 'Deployment', detail: '0/2 replicas available', firstAppliedAt: '2026-01-01T00:01:00Z', readinessTimeoutSeconds: 60 },
    ], since, 600, '2026-01-01T00:02:30Z')
    expect(r.expired?.message).toBe('workload "web" (Deployment) was not ready within 60s: 0/2 replicas available')
  })

  it('before any deadline: the earliest pending one for nextCheckAt', () => {
    expect(readinessTimeout([{ name: 'web', kind: 'Deployment', detail: '', firstAppliedAt: '2026-01-01T00:01:00Z', readinessTimeoutSeconds: 60 }], since, 600, '2026-01-01T00:01:30Z'))
      .toEqual({ nextCheckAt: '2026-01-01T00:02:00.000Z' })
    expect(readinessTimeout([], since, 600, NOW)).toEqual({})
  })
})

// spec §5.7 Services; sessionAffinity per §2.7 and §2.11.
import { describe, expect, it } from 'vitest'
import { hasService, serviceManifest } from '../../shared/recipe/plan/services.js'
import { RECIPE, rendered } from './manifest-fixtures.js'

type Obj = Record<string, any>
const svc = (fields: Record<string, unknown>): Obj | undefined => serviceManifest(RECIPE, rendered({ name: 'w', image: 'i', ...fields }), 2) as Obj | undefined
const ports = [{ name: 'http', port: 80, targetPort: 8080 }]

describe('which workloads get a Service (spec §5.7)', () => {
  it.each([
    ['Deployment with ports', { kind: 'Deployment', ports }, true],
    ['Deployment without ports', { kind: 'Deployment' }, false],
    ['DaemonSet with ports', { kind: 'DaemonSet', ports }, true],
    ['StatefulSet without ports (governing Service)', { kind: 'StatefulSet' }, true],
    ['Job', { kind: 'Job' }, false],
    ['CronJob', { kind: 'CronJob', schedule: '* * * * *' }, false],
    ['stdio', { kind: 'Deployment', transport: 'stdio' }, false],
  ])('%s', (_label, fields, expected) => {
    expect(hasService(rendered({ name: 'w', image: 'i', ...fields }))).toBe(expected)
    expect(svc(fields) !== undefined).toBe(expected)
  })
})

describe('Service spec (spec §5.7)', () => {
  it('ClusterIP, selector on the instance, one port per entry with targetPort and protocol', () => {
    const s = svc({ kind: 'Deployment', ports: [...ports, { name: 'dns', port: 53, protocol: 'UDP' }] })!
    expect(s.metadata.name).toBe('recipes-demo-shop-w-81f5be35')
    expect(s.metadata.namespace).toBe('sandbox-recipes')
    expect(s.metadata.labels['purko.io/component']).toBe('service')
    expect(s.spec).toEqual({
      type: 'ClusterIP',
      selector: { 'app.kubernetes.io/instance': 'recipes-demo-shop-w-81f5be35' },
      ports: [{ name: 'http', port: 80, targetPort: 8080, protocol: 'TCP' }, { name: 'dns', port: 53, targetPort: 53, protocol: 'UDP' }],
      sessionAffinity: 'None',
    })
  })

  it('a StatefulSet Service is headless, with or without ports', () => {
    expect(svc({ kind: 'StatefulSet' })!.spec).toEqual({
      type: 'ClusterIP', clusterIP: 'None', selector: { 'app.kubernetes.io/instance': 'recipes-demo-shop-w-81f5be35' }, sessionAffinity: 'None',
    })
    expect(svc({ kind: 'StatefulSet', ports })!.spec.clusterIP).toBe('None')
  })

  it('internalTrafficPolicy Local is copied (node-local DaemonSet agents)', () => {
    expect(svc({ kind: 'DaemonSet', ports, service: { internalTrafficPolicy: 'Local' } })!.spec.internalTrafficPolicy).toBe('Local')
  })
})

describe('sessionAffinity (spec §2.7, §2.11)', () => {
  it.each([
    ['plain workload', {}, 'None'],
    ['plain workload with ClientIP', { service: { sessionAffinity: 'ClientIP' } }, 'ClientIP'],
    ['MCP http, stateful (default)', { transport: 'http' }, 'ClientIP'],
    ['MCP http, stateless', { transport: 'http', mcp: { stateless: true } }, 'None'],
    ['MCP http, stateful, overridden', { transport: 'http', service: { sessionAffinity: 'None' } }, 'None'],
    ['MCP http, stateless, overridden', { transport: 'http', mcp: { stateless: true }, service: { sessionAffinity: 'ClientIP' } }, 'ClientIP'],
  ])('%s → %s', (_label, fields, expected) => {
    expect(svc({ kind: 'Deployment', ports, ...fields })!.spec.sessionAffinity).toBe(expected)
  })
})

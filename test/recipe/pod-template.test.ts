// spec §5.4 pod template (all kinds, tests included), §2.6 security overrides on the fixed
// hardening, spec §2.8 volume filtering rule.
import { describe, expect, it } from 'vitest'
import { podTemplateOf } from '../../shared/recipe/plan/pod-template.js'
import { rendered } from './manifest-fixtures.js'

const labels = { 'app.kubernetes.io/instance': 'x' }
type Spec = Record<string, any>
const specOf = (fields: Record<string, unknown>, restart: 'Always' | 'Never' = 'Always'): Spec =>
  (podTemplateOf(rendered({ name: 'web', kind: 'Deployment', image: 'nginx:1.27', ...fields }), labels, restart, 'B-env') as { spec: Spec }).spec

describe('fixed hardening (spec §5.4)', () => {
  const spec = specOf({})
  it.each([
    ['automountServiceAccountToken', spec.automountServiceAccountToken, false],
    ['enableServiceLinks', spec.enableServiceLinks, false],
    ['restartPolicy', spec.restartPolicy, 'Always'],
    ['pod securityContext', spec.securityContext, { runAsNonRoot: true, seccompProfile: { type: 'RuntimeDefault' } }],
    ['container securityContext', spec.containers[0].securityContext,
      { runAsNonRoot: true, allowPrivilegeEscalation: false, readOnlyRootFilesystem: false, capabilities: { drop: ['ALL'] } }],
    ['container name is the workload', spec.containers[0].name, 'web'],
    ['no host namespaces, ports or paths', [spec.hostNetwork, spec.hostPID, spec.hostIPC, spec.volumes], [undefined, undefined, undefined, undefined]],
  ])('%s', (_label, actual, expected) => {
    expect(actual).toEqual(expected)
  })

  it('Never for Job, CronJob and tests', () => {
    expect(specOf({}, 'Never').restartPolicy).toBe('Never')
  })
})

describe('security overrides (spec §2.6)', () => {
  it.each([
    ['runAsUser', { runAsUser: 70 }, { runAsNonRoot: true, runAsUser: 70, seccompProfile: { type: 'RuntimeDefault' } }],
    ['runAsGroup', { runAsGroup: 0 }, { runAsNonRoot: true, runAsGroup: 0, seccompProfile: { type: 'RuntimeDefault' } }],
    ['fsGroup adds OnRootMismatch', { fsGroup: 999 }, { runAsNonRoot: true, fsGroup: 999, fsGroupChangePolicy: 'OnRootMismatch', seccompProfile: { type: 'RuntimeDefault' } }],
  ])('pod %s', (_label, security, expected) => {
    expect(specOf({ security }).securityContext).toEqual(expected)
  })

  it('capabilities are added after dropping ALL, and readOnlyRootFilesystem is copied', () => {
    expect(specOf({ security: { addCapabilities: ['NET_BIND_SERVICE', 'CHOWN'], readOnlyRootFilesystem: true } }).containers[0].securityContext).toEqual({
      runAsNonRoot: true, allowPrivilegeEscalation: false, readOnlyRootFilesystem: true, capabilities: { drop: ['ALL'], add: ['NET_BIND_SERVICE', 'CHOWN'] },
    })
  })
})

describe('container fields (spec §5.4)', () => {
  it('env in order, then envSecret as secretKeyRef to base(w)-env keyed by the variable name', () => {
    const c = specOf({
      env: [{ name: 'B', value: '2' }, { name: 'A', value: '1' }],
      envSecret: [{ name: 'PW', secretName: 'creds', key: 'password' }, { name: 'TOKEN', secretName: 'creds', key: 'tok', optional: true }],
    }).containers[0]
    expect(c.env).toEqual([
      { name: 'B', value: '2' },
      { name: 'A', value: '1' },
      { name: 'PW', valueFrom: { secretKeyRef: { name: 'B-env', key: 'PW', optional: false } } },
      { name: 'TOKEN', valueFrom: { secretKeyRef: { name: 'B-env', key: 'TOKEN', optional: true } } },
    ])
  })

  it('ports use targetPort as containerPort; command, args, pull policy, resources, probes, scheduling copied', () => {
    const spec = specOf({
      imagePullPolicy: 'IfNotPresent', command: ['nginx'], args: ['-g', 'daemon off;'],
      ports: [{ name: 'http', port: 80, targetPort: 8080 }, { name: 'dns', port: 53, protocol: 'UDP' }],
      resources: { requests: { cpu: '50m' }, limits: { memory: '128Mi' } },
      readinessProbe: { httpGet: { path: '/healthz', port: 'http' }, periodSeconds: 5 },
      livenessProbe: { tcpSocket: { port: 8080 }, failureThreshold: 3 },
      nodeSelector: { 'kubernetes.io/os': 'linux' }, tolerations: [{ operator: 'Exists' }],
    })
    const c = spec.containers[0]
    expect(c.ports).toEqual([{ name: 'http', containerPort: 8080, protocol: 'TCP' }, { name: 'dns', containerPort: 53, protocol: 'UDP' }])
    expect([c.imagePullPolicy, c.command, c.args]).toEqual(['IfNotPresent', ['nginx'], ['-g', 'daemon off;']])
    expect(c.resources).toEqual({ requests: { cpu: '50m' }, limits: { memory: '128Mi' } })
    expect(c.readinessProbe).toEqual({ httpGet: { path: '/healthz', port: 'http' }, periodSeconds: 5 })
    expect(c.livenessProbe).toEqual({ tcpSocket: { port: 8080 }, failureThreshold: 3 })
    expect(spec.nodeSelector).toEqual({ 'kubernetes.io/os': 'linux' })
    expect(spec.tolerations).toEqual([{ operator: 'Exists' }])
  })

  it('leaves unset fields out', () => {
    const c = specOf({}).containers[0]
    expect(Object.keys(c)).toEqual(['name', 'image', 'securityContext'])
  })
})

describe('volumes and the filtering rule (spec §2.8)', () => {
  it('a volume with a same-named claim loses its emptyDir but keeps its mount; others stay emptyDirs; claims without a volume mount last', () => {
    const spec = specOf({
      kind: 'StatefulSet',
      volumes: [
        { name: 'data', mountPath: '/var/lib/postgresql/data' },
        { name: 'run', mountPath: '/var/run/postgresql', readOnly: true, emptyDir: { medium: 'Memory', sizeLimit: '64Mi' } },
      ],
      volumeClaimTemplates: [{ name: 'data', storage: '1Gi' }, { name: 'wal', storage: '1Gi', mountPath: '/wal' }],
    })
    expect(spec.containers[0].volumeMounts).toEqual([
      { name: 'data', mountPath: '/var/lib/postgresql/data', readOnly: false },
      { name: 'run', mountPath: '/var/run/postgresql', readOnly: true },
      { name: 'wal', mountPath: '/wal', readOnly: false },
    ])
    expect(spec.volumes).toEqual([{ name: 'run', emptyDir: { medium: 'Memory', sizeLimit: '64Mi' } }])
  })
})

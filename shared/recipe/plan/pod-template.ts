/**
 * The pod template of every recipe workload and test Job (spec §5.4), with the security
 * overrides of spec §2.6 applied on top of the fixed hardening, and the volume filtering rule of §2.8.
 * Pure. The input types are structural so both rendered workloads and rendered tests fit.
 *
 * Fixed hardening (never changed by overrides): no ServiceAccount token, no service links,
 * `runAsNonRoot: true` on pod and container, seccomp `RuntimeDefault`,
 * `allowPrivilegeEscalation: false`, `capabilities.drop: [ALL]`; no privileged mode, host
 * namespaces, host ports or hostPath (never emitted).
 */

export interface EnvVarSource { name: string; value: string }
export interface EnvSecretSource { name: string; secretName: string; key: string; optional?: boolean }
export interface PortSource { name: string; port: number; targetPort?: number; protocol?: 'TCP' | 'UDP' }
export interface ResourcesSource { requests?: Record<string, string | undefined>; limits?: Record<string, string | undefined> }
export interface SecuritySource {
  runAsUser?: number
  runAsGroup?: number
  fsGroup?: number
  addCapabilities?: string[]
  readOnlyRootFilesystem?: boolean
}
export interface ProbeSource {
  httpGet?: { path?: string; port: number | string }
  tcpSocket?: { port: number | string }
  exec?: { command: string[] }
  initialDelaySeconds?: number
  periodSeconds?: number
  timeoutSeconds?: number
  failureThreshold?: number
}
export interface VolumeSource {
  name: string
  mountPath: string
  readOnly?: boolean
  emptyDir?: { medium?: string; sizeLimit?: string }
}
export interface ClaimSource {
  name: string
  storage: string
  accessModes?: string[]
  storageClassName?: string
  mountPath?: string
}
export interface TolerationSource {
  key?: string
  operator?: string
  value?: string
  effect?: string
  tolerationSeconds?: number
}

/** What a pod template is built from: a rendered workload or a rendered test. */
export interface PodSource {
  name: string
  image: string
  imagePullPolicy?: string
  command?: string[]
  args?: string[]
  env?: EnvVarSource[]
  envSecret?: EnvSecretSource[]
  ports?: PortSource[]
  resources?: ResourcesSource
  security?: SecuritySource
  readinessProbe?: ProbeSource
  livenessProbe?: ProbeSource
  volumes?: VolumeSource[]
  volumeClaimTemplates?: ClaimSource[]
  nodeSelector?: Record<string, string>
  tolerations?: TolerationSource[]
}

export type Json = Record<string, unknown>

/** Copy of `obj` with `undefined` members removed (for fixed key order with optional fields). */
export function compact<T extends Json>(obj: T): T {
  const out: Json = {}
  for (const [k, v] of Object.entries(obj)) if (v !== undefined) out[k] = v
  return out as T
}

function nonEmptyMap(map: Record<string, string | undefined> | undefined): Record<string, string> | undefined {
  if (!map) return undefined
  const out: Record<string, string> = {}
  for (const [k, v] of Object.entries(map)) if (v !== undefined) out[k] = v
  return Object.keys(out).length > 0 ? out : undefined
}

/** Rendered `resources`, with empty request/limit maps left out; undefined when nothing is set. */
export function resourcesOf(resources: ResourcesSource | undefined): Json | undefined {
  if (!resources) return undefined
  const out = compact({ requests: nonEmptyMap(resources.requests), limits: nonEmptyMap(resources.limits) })
  return Object.keys(out).length > 0 ? out : undefined
}

function probeOf(probe: ProbeSource | undefined): Json | undefined {
  if (!probe) return undefined
  return compact({
    httpGet: probe.httpGet ? compact({ path: probe.httpGet.path, port: probe.httpGet.port }) : undefined,
    tcpSocket: probe.tcpSocket ? { port: probe.tcpSocket.port } : undefined,
    exec: probe.exec ? { command: [...probe.exec.command] } : undefined,
    initialDelaySeconds: probe.initialDelaySeconds,
    periodSeconds: probe.periodSeconds,
    timeoutSeconds: probe.timeoutSeconds,
    failureThreshold: probe.failureThreshold,
  })
}

/**
 * Env of the container: `env[]` in order, then `envSecret[]` in order as `secretKeyRef` to the
 * copied Secret (whose keys are the variable names).
 */
export function containerEnv(source: Pick<PodSource, 'env' | 'envSecret'>, copiedSecretName: string): Json[] {
  return [
    ...(source.env ?? []).map((e) => ({ name: e.name, value: e.value })),
    ...(source.envSecret ?? []).map((e) => ({
      name: e.name,
      valueFrom: { secretKeyRef: { name: copiedSecretName, key: e.name, optional: e.optional ?? false } },
    })),
  ]
}

/**
 * Volume mounts (volumes in order, then claims without a same-named volume) and the pod's
 * emptyDir volumes after the spec §2.8 filtering rule: a volume that has a same-named claim is not
 * emitted (its mount then refers to the claim). A claim's mount path is the same-named volume's
 * `mountPath`, else the claim's own.
 */
export function volumesOf(source: Pick<PodSource, 'volumes' | 'volumeClaimTemplates'>): { mounts: Json[]; volumes: Json[] } {
  const volumes = source.volumes ?? []
  const claims = source.volumeClaimTemplates ?? []
  const claimNames = new Set(claims.map((c) => c.name))
  const volumeNames = new Set(volumes.map((v) => v.name))
  const mounts: Json[] = [
    ...volumes.map((v) => ({ name: v.name, mountPath: v.mountPath, readOnly: v.readOnly ?? false })),
    ...claims.filter((c) => !volumeNames.has(c.name))
      .map((c) => ({ name: c.name, mountPath: c.mountPath ?? '', readOnly: false })),
  ]
  const podVolumes: Json[] = volumes.filter((v) => !claimNames.has(v.name)).map((v) => ({
    name: v.name,
    emptyDir: compact({
      medium: v.emptyDir?.medium ? v.emptyDir.medium : undefined,
      sizeLimit: v.emptyDir?.sizeLimit,
    }),
  }))
  return { mounts, volumes: podVolumes }
}

/** Pod `securityContext`: the fixed hardening plus `runAsUser`, `runAsGroup`, `fsGroup` when set. */
export function podSecurityContext(security: SecuritySource | undefined): Json {
  const s = security ?? {}
  return compact({
    runAsNonRoot: true,
    runAsUser: s.runAsUser,
    runAsGroup: s.runAsGroup,
    fsGroup: s.fsGroup,
    fsGroupChangePolicy: s.fsGroup !== undefined ? 'OnRootMismatch' : undefined,
    seccompProfile: { type: 'RuntimeDefault' },
  })
}

/** Container `securityContext`: the fixed hardening plus `readOnlyRootFilesystem` and added capabilities. */
export function containerSecurityContext(security: SecuritySource | undefined): Json {
  const s = security ?? {}
  const add = s.addCapabilities ?? []
  return {
    runAsNonRoot: true,
    allowPrivilegeEscalation: false,
    readOnlyRootFilesystem: s.readOnlyRootFilesystem ?? false,
    capabilities: compact({ drop: ['ALL'], add: add.length > 0 ? [...add] : undefined }),
  }
}

/** The single container of a workload or test; `copiedSecretName` is the target of `envSecret`. */
export function containerOf(source: PodSource, copiedSecretName: string): Json {
  const { mounts } = volumesOf(source)
  const env = containerEnv(source, copiedSecretName)
  const ports = (source.ports ?? []).map((p) => ({
    name: p.name,
    containerPort: p.targetPort ?? p.port,
    protocol: p.protocol ?? 'TCP',
  }))
  return compact({
    name: source.name,
    image: source.image,
    imagePullPolicy: source.imagePullPolicy,
    command: source.command && source.command.length > 0 ? [...source.command] : undefined,
    args: source.args && source.args.length > 0 ? [...source.args] : undefined,
    env: env.length > 0 ? env : undefined,
    ports: ports.length > 0 ? ports : undefined,
    resources: resourcesOf(source.resources),
    readinessProbe: probeOf(source.readinessProbe),
    livenessProbe: probeOf(source.livenessProbe),
    volumeMounts: mounts.length > 0 ? mounts : undefined,
    securityContext: containerSecurityContext(source.security),
  })
}

/**
 * spec §5.4 pod template: `{metadata: {labels}, spec}`. `restartPolicy` is `Always` for
 * long-running kinds and `Never` for Job, CronJob and tests.
 */
export function podTemplateOf(source: PodSource, labels: Record<string, string>, restartPolicy: 'Always' | 'Never', copiedSecretName: string): Json {
  const { volumes } = volumesOf(source)
  const tolerations = (source.tolerations ?? []).map((t) => compact({
    key: t.key, operator: t.operator, value: t.value, effect: t.effect, tolerationSeconds: t.tolerationSeconds,
  }))
  return {
    metadata: { labels: { ...labels } },
    spec: compact({
      automountServiceAccountToken: false,
      enableServiceLinks: false,
      restartPolicy,
      securityContext: podSecurityContext(source.security),
      nodeSelector: nonEmptyMap(source.nodeSelector),
      tolerations: tolerations.length > 0 ? tolerations : undefined,
      containers: [containerOf(source, copiedSecretName)],
      volumes: volumes.length > 0 ? volumes : undefined,
    }),
  }
}

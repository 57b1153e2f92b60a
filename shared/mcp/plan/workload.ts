import { isQuantity } from '../../quantity.js'
import type {
  V1Container, V1Deployment, V1EnvVar, V1OwnerReference, V1PodSecurityContext, V1ResourceRequirements, V1RoleBinding,
  V1Service, V1ServiceAccount, V1Volume,
} from '@kubernetes/client-node'
import { API_VERSION } from '../../schemas/labels.js'
import { LABEL_MCP_SERVER, type MCPServer } from '../../schemas/mcpserver.js'
import { REGISTRY_CONFIGMAP, type RegistryEntry } from './registry.js'

/**
 * What an MCPServer runs (purko's shape, hardened): its Deployment and Service, the identity of
 * a stdio bridge, and the entry it gets in the `mcp-servers` registry. Pure builders: no I/O,
 * no clock, nothing time- or random-based in a spec.
 */

/** Name of the one container that runs the server image (purko's). */
export const SERVER_CONTAINER = 'mcp-server'
/** Name of the sidecar that bridges a stdio server to Streamable HTTP. */
export const BRIDGE_CONTAINER = 'mcp-bridge'
/** ServiceAccount (per namespace), RoleBinding and shipped ClusterRole of stdio pods: pods/attach. */
export const BRIDGE_IDENTITY = 'kinetic-mcp-bridge'
/** The bridge program inside the Kinetic image. */
export const BRIDGE_ENTRY = 'dist/mcp-bridge/main.js'
/** Volume with the bridge ServiceAccount's token, mounted into the `mcp-bridge` container only. */
export const BRIDGE_TOKEN_VOLUME = 'kinetic-mcp-bridge-token'
/** Where the Kubernetes client looks for an in-cluster token, CA and namespace. */
export const SERVICE_ACCOUNT_DIR = '/var/run/secrets/kubernetes.io/serviceaccount'
/** Lifetime the kubelet asks for (what it uses for automounted tokens); it rotates the file before expiry. */
const BRIDGE_TOKEN_SECONDS = 3607
/** User the Kinetic image runs as (distroless nonroot). */
const KINETIC_IMAGE_USER = 65532
/** Annotation on the Deployment: hash of the spec last applied, so an unchanged spec is not written again. */
export const ANNOTATION_SPEC_HASH = 'kinetic.dev/spec-hash'
/** Kinetic's own label on objects it creates. */
const MANAGED_BY = { 'app.kubernetes.io/managed-by': 'kinetic' }

/** Pure: the ownerReference of every child: the MCPServer, as controller, blocking its deletion. */
export function serverOwnerReference(server: MCPServer): V1OwnerReference {
  return {
    apiVersion: API_VERSION, kind: 'MCPServer', name: server.metadata.name ?? '', uid: server.metadata.uid ?? '',
    controller: true, blockOwnerDeletion: true,
  }
}

/**
 * Pure: the URL the registry gets: `spec.url` for an unmanaged server, `http://localhost:<port>`
 * with host networking, else the Service's cluster DNS name.
 */
export function registryUrl(server: MCPServer): string {
  const { spec, metadata } = server
  if (!spec.managed) return spec.url ?? ''
  if (spec.hostNetwork) return `http://localhost:${spec.port}`
  return `http://${metadata.name}.${metadata.namespace}.svc.cluster.local:${spec.port}`
}

/**
 * Pure: where discovery connects from inside the cluster. The same as the registry URL, except
 * that a host-network server is reached on its pod's IP (`localhost` is the function's own pod).
 */
export function discoveryUrl(server: MCPServer, podIP: string | undefined): string | null {
  if (server.spec.managed && server.spec.hostNetwork) return podIP ? `http://${podIP}:${server.spec.port}` : null
  return registryUrl(server)
}

/**
 * Pure: the server's registry entry, fields in purko's order (`secretRef` only when set), then
 * `namespace`, which makes the MCPServer its owner (shared/mcp/plan/registry.ts).
 */
export function registryEntry(server: MCPServer): RegistryEntry {
  const { spec } = server
  return {
    name: server.metadata.name ?? '',
    url: registryUrl(server),
    auth: spec.auth,
    icon: spec.icon ?? '',
    category: spec.category ?? '',
    ...(spec.secretRef ? { secretRef: spec.secretRef } : {}),
    namespace: server.metadata.namespace ?? '',
  }
}

/**
 * Pure: whether an entry without an owner is this server's own, written before entries named
 * their owner: it has the server's name and points at the server's own Service in the server's
 * namespace (`http://<name>.<namespace>.svc[.cluster.local]...`), which only that namespace
 * controls. Such an entry is taken over (and so seen only where the server's namespace is); any
 * other entry without an owner stays the agent namespace's.
 */
export function isOwnUnownedEntry(server: MCPServer, entry: RegistryEntry): boolean {
  const name = server.metadata.name ?? ''
  const namespace = server.metadata.namespace ?? ''
  if (entry.name !== name || (typeof entry.namespace === 'string' && entry.namespace !== '')) return false
  let host: string
  try {
    host = new URL(entry.url).hostname
  } catch {
    return false
  }
  return host === `${name}.${namespace}.svc` || host === `${name}.${namespace}.svc.cluster.local`
}

/** Name of the registry ConfigMap, re-exported for the shell. */
export const REGISTRY_NAME = REGISTRY_CONFIGMAP

/** Pure: the resource entries that are not Kubernetes quantities, as `requests.cpu: "lots"`; empty when all are. */
export function invalidQuantities(server: MCPServer): string[] {
  const bad: string[] = []
  for (const part of ['requests', 'limits'] as const) {
    for (const [resource, value] of Object.entries(server.spec.resources?.[part] ?? {})) {
      if (!isQuantity(value)) bad.push(`${part}.${resource}: ${JSON.stringify(value)}`)
    }
  }
  return bad
}

/**
 * Pure: the server container's environment: `AUTH_TOKEN` from `<secretRef>` key `token` for a
 * bearer server, then each item of `spec.env` in order: a value as given, an empty value while
 * `secretRef` is set as that Secret's `token`, a `valueFrom` passed through as `secretKeyRef`.
 * A secret never becomes a plain value here.
 */
export function serverEnv(server: MCPServer): V1EnvVar[] {
  const { spec } = server
  const tokenRef = (name: string): V1EnvVar => ({ name, valueFrom: { secretKeyRef: { name: spec.secretRef ?? '', key: 'token', optional: true } } })
  const env: V1EnvVar[] = []
  if (spec.auth === 'bearer' && spec.secretRef) env.push(tokenRef('AUTH_TOKEN'))
  for (const item of spec.env ?? []) {
    if (item.valueFrom) {
      const ref = item.valueFrom.secretKeyRef
      env.push({ name: item.name, valueFrom: { secretKeyRef: { name: ref.name, key: ref.key, ...(ref.optional !== undefined ? { optional: ref.optional } : {}) } } })
    } else if ((item.value ?? '') === '' && spec.secretRef) {
      env.push(tokenRef(item.name))
    } else {
      env.push({ name: item.name, value: item.value ?? '' })
    }
  }
  return env
}

function resources(server: MCPServer): V1ResourceRequirements | undefined {
  const r = server.spec.resources
  if (!r || (!r.requests && !r.limits)) return undefined
  return { ...(r.requests ? { requests: { ...r.requests } } : {}), ...(r.limits ? { limits: { ...r.limits } } : {}) }
}

function podSecurityContext(server: MCPServer): V1PodSecurityContext {
  const sc = server.spec.securityContext ?? {}
  return {
    runAsNonRoot: true,
    ...(sc.runAsUser !== undefined ? { runAsUser: sc.runAsUser } : {}),
    ...(sc.runAsGroup !== undefined ? { runAsGroup: sc.runAsGroup } : {}),
    ...(sc.fsGroup !== undefined ? { fsGroup: sc.fsGroup, fsGroupChangePolicy: 'OnRootMismatch' } : {}),
    seccompProfile: { type: 'RuntimeDefault' },
  }
}

function containerSecurityContext(add: readonly string[] = []): V1Container['securityContext'] {
  return {
    allowPrivilegeEscalation: false,
    capabilities: { drop: ['ALL'], ...(add.length > 0 ? { add: [...add] } : {}) },
  }
}

/** Pure: the labels of the Deployment (purko's three). */
export function deploymentLabels(name: string): Record<string, string> {
  return { 'app.kubernetes.io/name': name, 'app.kubernetes.io/part-of': 'purko', [LABEL_MCP_SERVER]: name }
}

function serverContainer(server: MCPServer): V1Container {
  const { spec } = server
  const stdio = spec.transport === 'stdio'
  const res = resources(server)
  const env = serverEnv(server)
  return {
    name: SERVER_CONTAINER,
    image: spec.image,
    imagePullPolicy: 'IfNotPresent',
    ...(spec.command && spec.command.length > 0 ? { command: [...spec.command] } : {}),
    ...(spec.args && spec.args.length > 0 ? { args: [...spec.args] } : {}),
    ...(!stdio && !spec.hostNetwork ? { ports: [{ containerPort: spec.port }] } : {}),
    ...(env.length > 0 ? { env } : {}),
    ...(res ? { resources: res } : {}),
    // The bridge writes MCP requests to this stdin and reads replies from stdout (pods/attach).
    ...(stdio ? { stdin: true, stdinOnce: false, tty: false } : {}),
    securityContext: containerSecurityContext(spec.securityContext?.addCapabilities),
  }
}

function bridgeContainer(server: MCPServer, bridgeImage: string): V1Container {
  const { spec } = server
  const fieldRef = (fieldPath: string) => ({ valueFrom: { fieldRef: { fieldPath } } })
  return {
    name: BRIDGE_CONTAINER,
    image: bridgeImage,
    imagePullPolicy: 'IfNotPresent',
    command: ['node'],
    args: [BRIDGE_ENTRY],
    env: [
      { name: 'MCP_BRIDGE_PORT', value: String(spec.port) },
      { name: 'MCP_BRIDGE_CONTAINER', value: SERVER_CONTAINER },
      { name: 'POD_NAME', ...fieldRef('metadata.name') },
      { name: 'POD_NAMESPACE', ...fieldRef('metadata.namespace') },
      ...(spec.auth === 'bearer' && spec.secretRef
        ? [{ name: 'AUTH_TOKEN', valueFrom: { secretKeyRef: { name: spec.secretRef, key: 'token', optional: true } } }]
        : []),
    ],
    ...(!spec.hostNetwork ? { ports: [{ containerPort: spec.port }] } : {}),
    volumeMounts: [{ name: BRIDGE_TOKEN_VOLUME, mountPath: SERVICE_ACCOUNT_DIR, readOnly: true }],
    resources: { requests: { cpu: '10m', memory: '32Mi' }, limits: { memory: '128Mi' } },
    securityContext: { ...containerSecurityContext(), runAsUser: KINETIC_IMAGE_USER, runAsGroup: KINETIC_IMAGE_USER },
  }
}

/**
 * Pure: the projected volume the bridge reads as its in-cluster config: the bridge
 * ServiceAccount's token, the cluster CA and the namespace, in the layout of an automounted token.
 */
export function bridgeTokenVolume(): V1Volume {
  return {
    name: BRIDGE_TOKEN_VOLUME,
    projected: {
      sources: [
        { serviceAccountToken: { path: 'token', expirationSeconds: BRIDGE_TOKEN_SECONDS } },
        { configMap: { name: 'kube-root-ca.crt', items: [{ key: 'ca.crt', path: 'ca.crt' }] } },
        { downwardAPI: { items: [{ path: 'namespace', fieldRef: { apiVersion: 'v1', fieldPath: 'metadata.namespace' } }] } },
      ],
    },
  }
}

/**
 * Pure: the Deployment `<name>` as purko makes it: purko's labels and selector, replicas, the
 * `mcp-server` container, host networking with `dnsPolicy: Default` and no container ports, and
 * the fixed hardening (non-root, RuntimeDefault seccomp, no privilege escalation, ALL
 * capabilities dropped, no service links, no automounted ServiceAccount token) with
 * `spec.securityContext` on top. A stdio server gets the bridge sidecar and runs as the bridge
 * ServiceAccount, whose token is mounted into the sidecar only: the server image never sees it.
 */
export function deploymentManifest(server: MCPServer, bridgeImage: string): V1Deployment {
  const name = server.metadata.name ?? ''
  const { spec } = server
  const stdio = spec.transport === 'stdio'
  const selector = { [LABEL_MCP_SERVER]: name }
  return {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { name, namespace: server.metadata.namespace, labels: deploymentLabels(name), ownerReferences: [serverOwnerReference(server)] },
    spec: {
      replicas: spec.replicas,
      selector: { matchLabels: selector },
      template: {
        metadata: { labels: { ...selector } },
        spec: {
          ...(stdio ? { serviceAccountName: BRIDGE_IDENTITY } : {}),
          // Never automount: an automounted token reaches every container, the server image included.
          automountServiceAccountToken: false,
          enableServiceLinks: false,
          ...(spec.hostNetwork ? { hostNetwork: true, dnsPolicy: 'Default' } : {}),
          securityContext: podSecurityContext(server),
          containers: stdio ? [serverContainer(server), bridgeContainer(server, bridgeImage)] : [serverContainer(server)],
          ...(stdio ? { volumes: [bridgeTokenVolume()] } : {}),
        },
      },
    },
  }
}

/** Pure: the Service `<name>`: purko's label and selector, one unnamed TCP port `port` → `port`, ClusterIP. */
export function serviceManifest(server: MCPServer): V1Service {
  const name = server.metadata.name ?? ''
  return {
    apiVersion: 'v1',
    kind: 'Service',
    metadata: { name, namespace: server.metadata.namespace, labels: { [LABEL_MCP_SERVER]: name }, ownerReferences: [serverOwnerReference(server)] },
    spec: {
      type: 'ClusterIP',
      selector: { [LABEL_MCP_SERVER]: name },
      ports: [{ port: server.spec.port, targetPort: server.spec.port, protocol: 'TCP' }],
    },
  }
}

/** Pure: the bridge ServiceAccount of a namespace (shared by its stdio servers, so no owner). */
export function bridgeServiceAccountManifest(namespace: string): V1ServiceAccount {
  return { apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name: BRIDGE_IDENTITY, namespace, labels: { ...MANAGED_BY } } }
}

/** Pure: the RoleBinding of the bridge ServiceAccount to the shipped ClusterRole (pods/attach). */
export function bridgeRoleBindingManifest(namespace: string): V1RoleBinding {
  return {
    apiVersion: 'rbac.authorization.k8s.io/v1',
    kind: 'RoleBinding',
    metadata: { name: BRIDGE_IDENTITY, namespace, labels: { ...MANAGED_BY } },
    roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: BRIDGE_IDENTITY },
    subjects: [{ kind: 'ServiceAccount', name: BRIDGE_IDENTITY, namespace }],
  }
}

/** Pure: whether a live Service already has the selector and ports we want (the parts purko replaces). */
export function serviceMatches(live: V1Service, desired: V1Service): boolean {
  const norm = (s: V1Service) => JSON.stringify({
    selector: Object.entries(s.spec?.selector ?? {}).sort(),
    ports: (s.spec?.ports ?? []).map((p) => [p.port, String(p.targetPort ?? p.port), p.protocol ?? 'TCP', p.name ?? '']),
  })
  return norm(live) === norm(desired)
}

/** Pure: the live Service with our selector and ports (clusterIP and the rest kept, as purko does) and our ownerReference. */
export function serviceReplacement(live: V1Service, desired: V1Service, owner: V1OwnerReference): V1Service {
  return {
    ...live,
    metadata: { ...live.metadata, ownerReferences: withOwner(live.metadata?.ownerReferences, owner) },
    spec: { ...live.spec, selector: desired.spec?.selector ?? {}, ports: desired.spec?.ports ?? [] },
  }
}

/** Pure: the live Deployment with the desired spec (metadata kept, plus our ownerReference and spec hash). */
export function deploymentReplacement(live: V1Deployment, desired: V1Deployment, hash: string, owner: V1OwnerReference): V1Deployment {
  return {
    ...live,
    metadata: {
      ...live.metadata,
      annotations: { ...live.metadata?.annotations, [ANNOTATION_SPEC_HASH]: hash },
      ownerReferences: withOwner(live.metadata?.ownerReferences, owner),
    },
    spec: desired.spec!,
  }
}

/** Pure: the desired Deployment with its spec hash annotation, for creation. */
export function withSpecHash(desired: V1Deployment, hash: string): V1Deployment {
  return { ...desired, metadata: { ...desired.metadata, annotations: { ...desired.metadata?.annotations, [ANNOTATION_SPEC_HASH]: hash } } }
}

/** Pure: whether an object already carries this owner. */
export function hasOwner(refs: readonly V1OwnerReference[] | undefined, owner: V1OwnerReference): boolean {
  return (refs ?? []).some((r) => r.uid === owner.uid)
}

function withOwner(refs: readonly V1OwnerReference[] | undefined, owner: V1OwnerReference): V1OwnerReference[] {
  // One controller per object: an old controller reference (a deleted and re-created MCPServer) gives way.
  const rest = (refs ?? []).filter((r) => r.uid !== owner.uid && !(r.controller && r.kind === owner.kind))
  return [...rest, owner]
}

/** One entry of a container's `env`. */
export interface EnvVar {
  name: string
  value?: string
  valueFrom?: {
    secretKeyRef?: { name: string; key: string; optional?: boolean }
    configMapKeyRef?: { name: string; key: string; optional?: boolean }
    fieldRef?: { fieldPath: string }
    resourceFieldRef?: { resource: string }
  }
}

/** One entry of a container's `envFrom`. */
export interface EnvFromSource {
  prefix?: string
  secretRef?: { name: string; optional?: boolean }
  configMapRef?: { name: string; optional?: boolean }
}

/** Reads Secrets and ConfigMaps (`data` already decoded to text); null when absent. */
export interface EnvSources {
  secret(name: string): Promise<Record<string, string> | null>
  configMap(name: string): Promise<Record<string, string> | null>
}

/** The pod fields a `fieldRef` may name. */
export interface PodFields {
  name: string
  namespace: string
  uid: string
  labels: Record<string, string>
  annotations: Record<string, string>
  nodeName: string
  serviceAccountName: string
}

/** Why a container cannot start, as the kubelet reports it. */
export interface EnvError {
  reason: 'CreateContainerConfigError'
  message: string
}

/**
 * Resolves a container's environment the way the kubelet does: `envFrom` first, then `env`
 * in order (later wins), `$(VAR)` references to earlier variables expanded, Secret and
 * ConfigMap keys read from the API server. A missing optional reference leaves the variable
 * unset; a missing required one is a CreateContainerConfigError naming what is missing.
 */
export async function resolveContainerEnv(
  container: { env?: EnvVar[]; envFrom?: EnvFromSource[] },
  sources: EnvSources,
  pod: PodFields,
): Promise<{ env: Record<string, string> } | { error: EnvError }> {
  const env: Record<string, string> = {}
  const fail = (message: string) => ({ error: { reason: 'CreateContainerConfigError' as const, message } })
  for (const from of container.envFrom ?? []) {
    const ref = from.secretRef ?? from.configMapRef
    if (!ref) continue
    const kind = from.secretRef ? 'secret' : 'configmap'
    const data = from.secretRef ? await sources.secret(ref.name) : await sources.configMap(ref.name)
    if (!data) {
      if (ref.optional) continue
      return fail(`${kind} "${ref.name}" not found`)
    }
    for (const [k, v] of Object.entries(data)) env[`${from.prefix ?? ''}${k}`] = v
  }
  for (const v of container.env ?? []) {
    if (v.valueFrom === undefined) {
      env[v.name] = expand(v.value ?? '', env)
      continue
    }
    const { secretKeyRef, configMapKeyRef, fieldRef } = v.valueFrom
    if (secretKeyRef || configMapKeyRef) {
      const ref = (secretKeyRef ?? configMapKeyRef) as { name: string; key: string; optional?: boolean }
      const kind = secretKeyRef ? 'secret' : 'configmap'
      const data = secretKeyRef ? await sources.secret(ref.name) : await sources.configMap(ref.name)
      if (!data) {
        if (ref.optional) continue
        return fail(`${kind} "${ref.name}" not found`)
      }
      const value = data[ref.key]
      if (value === undefined) {
        if (ref.optional) continue
        return fail(`couldn't find key ${ref.key} in ${kind === 'secret' ? 'Secret' : 'ConfigMap'} ${pod.namespace}/${ref.name}`)
      }
      env[v.name] = value
    } else if (fieldRef) {
      const value = fieldValue(fieldRef.fieldPath, pod)
      if (value === undefined) return fail(`unsupported fieldPath ${fieldRef.fieldPath} for ${v.name}`)
      env[v.name] = value
    } else {
      return fail(`${v.name}: only value, secretKeyRef, configMapKeyRef and fieldRef are supported locally`)
    }
  }
  return { env }
}

function fieldValue(path: string, pod: PodFields): string | undefined {
  const keyed = /^metadata\.(labels|annotations)\['(.+)'\]$/.exec(path)
  if (keyed) return (keyed[1] === 'labels' ? pod.labels : pod.annotations)[keyed[2] as string] ?? ''
  switch (path) {
    case 'metadata.name': return pod.name
    case 'metadata.namespace': return pod.namespace
    case 'metadata.uid': return pod.uid
    case 'spec.nodeName': return pod.nodeName
    case 'spec.serviceAccountName': return pod.serviceAccountName
    case 'status.podIP':
    case 'status.hostIP': return '127.0.0.1'
    default: return undefined
  }
}

// $(VAR) refers to a variable defined earlier; $$(VAR) is the escape for a literal $(VAR).
function expand(value: string, env: Record<string, string>): string {
  return value.replace(/\$\$\(|\$\(([A-Za-z_][A-Za-z0-9_.-]*)\)/g, (whole, name: string | undefined) => {
    if (name === undefined) return '$('
    return Object.hasOwn(env, name) ? (env[name] as string) : whole
  })
}

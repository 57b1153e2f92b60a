import { chmodSync, mkdirSync, renameSync, rmdirSync, rmSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { KubeConfig } from '@kubernetes/client-node'
import { stringify } from 'yaml'
import type { Logger } from '../shared/log.js'
import type { KubeHttp } from './knative/kube-http.js'

/** A ServiceAccount's credentials on disk: a kubeconfig whose token file is kept fresh. */
export interface ServiceAccountIdentity {
  namespace: string
  name: string
  /** `system:serviceaccount:<ns>:<name>` */
  username: string
  kubeconfigPath: string
  kubeConfig(): KubeConfig
}

/** Every identity handed out, refreshed before its token expires. */
export interface Identities {
  get(namespace: string, serviceAccount: string): Promise<ServiceAccountIdentity>
  /** Stops refreshing and removes the files (and the folder, when that leaves it empty). */
  close(): void
}

/** Lifetime asked of each token; the API server may shorten it. Renewed at 80 %. */
const TOKEN_SECONDS = 3600

/**
 * Hands out ServiceAccount identities on the cluster `admin` talks to: a token from the
 * TokenRequest API (`serviceaccounts/<sa>/token`), written to `<dir>/<ns>.<sa>.token`, and a
 * kubeconfig with the same server, CA and TLS settings as `base` whose user reads that file
 * (client-node re-reads it every minute), so RBAC applies to the process exactly as to a pod
 * of the account. The token is renewed before it expires. The ServiceAccount must exist.
 */
export function serviceAccountIdentities(admin: KubeHttp, base: KubeConfig, dir: string, log: Logger): Identities {
  mkdirSync(dir, { recursive: true, mode: 0o700 })
  const cluster = base.getCurrentCluster()
  if (!cluster) throw new Error('The kubeconfig has no current cluster')
  const made = new Map<string, Promise<ServiceAccountIdentity>>()
  const timers: NodeJS.Timeout[] = []
  const files: string[] = []
  let closed = false

  const requestToken = async (namespace: string, name: string, file: string): Promise<number> => {
    const res = await admin.request<{ status: { token: string; expirationTimestamp?: string } }>(
      'POST', `/api/v1/namespaces/${encodeURIComponent(namespace)}/serviceaccounts/${encodeURIComponent(name)}/token`,
      { apiVersion: 'authentication.k8s.io/v1', kind: 'TokenRequest', spec: { expirationSeconds: TOKEN_SECONDS } },
    )
    // Replace atomically: a reader never sees half a token.
    writeFileSync(`${file}.next`, res.status.token, { mode: 0o600 })
    renameSync(`${file}.next`, file)
    const expires = res.status.expirationTimestamp ? Date.parse(res.status.expirationTimestamp) : Date.now() + TOKEN_SECONDS * 1000
    return Math.max(60_000, (expires - Date.now()) * 0.8)
  }

  const make = async (namespace: string, name: string): Promise<ServiceAccountIdentity> => {
    const stem = join(dir, `${namespace}.${name}`)
    const tokenFile = `${stem}.token`
    const kubeconfigPath = `${stem}.kubeconfig`
    files.push(tokenFile, kubeconfigPath)
    const renewIn = await requestToken(namespace, name, tokenFile)
    const username = `system:serviceaccount:${namespace}:${name}`
    const clusterEntry: Record<string, unknown> = { server: cluster.server }
    if (cluster.caData) clusterEntry['certificate-authority-data'] = cluster.caData
    if (cluster.caFile) clusterEntry['certificate-authority'] = cluster.caFile
    if (cluster.skipTLSVerify) clusterEntry['insecure-skip-tls-verify'] = true
    if (cluster.tlsServerName) clusterEntry['tls-server-name'] = cluster.tlsServerName
    const doc = {
      apiVersion: 'v1', kind: 'Config', 'current-context': username,
      clusters: [{ name: 'kinetic', cluster: clusterEntry }],
      users: [{ name: username, user: { 'auth-provider': { name: 'tokenFile', config: { tokenFile } } } }],
      contexts: [{ name: username, context: { cluster: 'kinetic', user: username, namespace } }],
    }
    writeFileSync(kubeconfigPath, stringify(doc), { mode: 0o600 })
    chmodSync(kubeconfigPath, 0o600)
    const renew = (ms: number) => {
      const t = setTimeout(() => {
        if (closed) return
        requestToken(namespace, name, tokenFile).then(renew, (err: unknown) => {
          log.warn({ namespace, serviceAccount: name, err: String(err) }, 'Could not renew the ServiceAccount token; retrying in a minute')
          renew(60_000)
        })
      }, ms)
      t.unref()
      timers.push(t)
    }
    renew(renewIn)
    log.info({ namespace, serviceAccount: name, kubeconfig: kubeconfigPath }, 'Issued a ServiceAccount token')
    return {
      namespace, name, username, kubeconfigPath,
      kubeConfig: () => {
        const kc = new KubeConfig()
        kc.loadFromFile(kubeconfigPath)
        return kc
      },
    }
  }

  return {
    get(namespace, name) {
      const key = `${namespace}/${name}`
      let p = made.get(key)
      if (!p) {
        p = make(namespace, name)
        made.set(key, p)
      }
      return p
    },
    close() {
      closed = true
      for (const t of timers) clearTimeout(t)
      for (const f of files) rmSync(f, { force: true })
      try {
        rmdirSync(dir)
      } catch {
        // not empty (someone else's files) or already gone
      }
    },
  }
}

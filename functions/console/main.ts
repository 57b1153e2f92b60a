// Process entry point of the console: real dependencies, HTTP on $PORT.
import { existsSync } from 'node:fs'
import { readFile } from 'node:fs/promises'
import type { KubeConfig } from '@kubernetes/client-node'
import { consoleConfig } from '../../shared/console/auth/config.js'
import type { ConsoleConfig } from '../../shared/console/context.js'
import type { Credential } from '../../shared/kube/port.js'
import { lazyKube } from '../../shared/kube/lazy.js'
import { serveFunction } from '../../shared/http/serve.js'
import { createLogger } from '../../shared/log.js'
import { createApp } from './index.js'

const SERVICE_ACCOUNT_TOKEN = '/var/run/secrets/kubernetes.io/serviceaccount/token'

const log = createLogger('console')
let config: ConsoleConfig
try {
  config = consoleConfig(process.env)
} catch (err) {
  log.error({ reason: err instanceof Error ? err.message : String(err) }, 'The console is misconfigured')
  process.exit(1)
}

// The client is loaded on the first Kubernetes call, so the sign-in page and assets answer at once.
let base: Promise<{ kubeAs: typeof import('../../shared/kube/client.js').kubeAs; kubeConfig: KubeConfig }> | undefined
const client = () => (base ??= import('../../shared/kube/client.js').then((m) => ({ kubeAs: m.kubeAs, kubeConfig: m.loadKubeConfig() })).catch((err: unknown) => {
  base = undefined // a kubeconfig that appears later is read on the next call
  throw err
}))
const kubeFor = (credential: Credential) => lazyKube(async () => {
  const { kubeAs, kubeConfig } = await client()
  return kubeAs(kubeConfig, credential)
})

// Read on each use: the kubelet rotates the projected token.
const ownToken = async () => (existsSync(SERVICE_ACCOUNT_TOKEN) ? (await readFile(SERVICE_ACCOUNT_TOKEN, 'utf8')).trim() : undefined)

serveFunction(createApp({ config, log, now: () => new Date(), kubeFor, ownToken }), log)
// Once listening, load the client in the background: the first page then rarely waits for it.
setTimeout(() => client().catch(() => {}), 0)

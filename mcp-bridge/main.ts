/**
 * The stdio MCP bridge (sidecar `mcp-bridge` of an MCPServer with `transport: stdio`): attaches
 * to the stdin/stdout of container MCP_BRIDGE_CONTAINER of this pod through the API server and
 * serves that MCP server as Streamable HTTP at `/mcp` on MCP_BRIDGE_PORT
 * (`GET /health/readiness` is 200 once the server answered initialize).
 *
 * Exit codes: 0 on SIGTERM/SIGINT; 1 when the attach fails or its stream ends (the kubelet
 * restarts the container, which attaches again); 2 when the configuration is invalid.
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http'
import { KubeConfig } from '@kubernetes/client-node'
import { createLogger } from '../shared/log.js'
import { attachWithRetry, type Attached } from './attach.js'
import { createBridge, type Bridge } from './bridge.js'
import { parseBridgeConfig } from './config.js'

const log = createLogger('mcp-bridge')
const parsed = parseBridgeConfig(process.env)
if ('errors' in parsed) {
  for (const error of parsed.errors) log.error({ error }, 'Invalid configuration')
  process.exit(2)
}
const config = parsed.config
const target = { namespace: config.namespace, pod: config.pod, container: config.container }

let bridge: Bridge | undefined
let attached: Attached | undefined
// Probes get an answer while the bridge still attaches; MCP clients are told to come back.
const server = createServer((req: IncomingMessage, res: ServerResponse) => {
  if (bridge) return bridge.handle(req, res)
  res.writeHead(503, { 'content-type': 'application/json', 'retry-after': '1' }).end(JSON.stringify({ status: 'attaching' }))
})
server.listen(config.port, () => log.info({ port: config.port, ...target }, 'Listening; attaching to the MCP server container'))
server.on('error', (err) => {
  log.error({ err }, 'Could not serve HTTP')
  process.exit(1)
})

function stop(signal: string): void {
  log.info({ signal }, 'Stopping')
  attached?.close()
  server.close()
  process.exit(0)
}
process.on('SIGTERM', () => stop('SIGTERM'))
process.on('SIGINT', () => stop('SIGINT'))

const kc = new KubeConfig()
kc.loadFromDefault() // KUBECONFIG when set, else the pod's ServiceAccount (in-cluster)

try {
  attached = await attachWithRetry(kc, target, {
    timeoutMs: config.attachTimeoutMs,
    onRetry: (err, attempt) => log.warn({ attempt, error: err instanceof Error ? err.message : String(err) }, 'Could not attach yet; retrying'),
  })
} catch (err) {
  log.error({ ...target, error: err instanceof Error ? err.message : String(err) }, 'Could not attach to the MCP server container (is pods/attach allowed for this ServiceAccount?)')
  process.exit(1)
}
log.info({ ...target, protocol: attached.protocol }, 'Attached to the MCP server container')
bridge = createBridge({
  toServer: attached.stdin,
  fromServer: attached.stdout,
  log,
  maxLineBytes: config.maxLineBytes,
  requestTimeoutMs: config.requestTimeoutMs,
  ...(config.authToken ? { authToken: config.authToken } : {}),
})
const reason = await bridge.ended
const detail = await Promise.race([attached.closed, new Promise<string>((resolve) => setTimeout(() => resolve(reason), 1000).unref())])
log.error({ reason, detail }, 'The MCP server stream ended; exiting so the container restarts and attaches again')
process.exit(1)

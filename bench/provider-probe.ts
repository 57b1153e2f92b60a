// Provider-probe benchmark: one llmprovider-changed probe round over 10 / 100 / 1,000
// LLMProviders, with every provider sharing one endpoint and key ("shared") or each its own key
// ("distinct"); the first round (all new) and the steady state (a round every minute, each
// provider probed once per 5-minute interval at its own slot). Counts Kubernetes API calls by
// method (EmbeddedKube: the real client over HTTP to the embedded API server, in this process)
// and list-models requests that reached a real OpenAI-compatible HTTP server on 127.0.0.1.
// Run: node --import tsx bench/provider-probe.ts   (BENCH_PROVIDER_SIZES=10,100,1000)
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { newProbeRound, probeRound } from '../shared/llm/controller.js'
import { LLMProviderSchema } from '../shared/schemas/llmprovider.js'
import { countingKube } from '../test/support/counting-kube.js'
import { EmbeddedKube } from '../test/support/embedded-kube.js'
import { testDeps } from '../test/support/engine-deps.js'

const SIZES = (process.env.BENCH_PROVIDER_SIZES ?? '10,100,1000').split(',').map(Number)
const PLATFORM = 'purko-system'

let requests = 0
const server = createServer((req, res) => {
  requests++
  res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ object: 'list', data: [{ id: 'gpt-4o' }, { id: 'gpt-4o-mini' }] }))
})
await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
const endpoint = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`

/** A fresh cluster (each EmbeddedKube empties the embedded server) with n providers. */
function plane(n: number, shared: boolean): EmbeddedKube {
  const kube = new EmbeddedKube()
  for (let i = 0; i < n; i++) {
    const secretRef = shared ? 'shared-key' : `key-${i}`
    kube.providers.set(`${PLATFORM}/p-${i}`, LLMProviderSchema.parse({
      metadata: { name: `p-${i}`, namespace: PLATFORM, uid: `uid-${i}`, generation: 1, resourceVersion: '1' },
      spec: { type: 'custom', endpoint, model: 'gpt-4o', credentials: { secretRef } },
    }))
    if (!shared || i === 0) {
      kube.secrets.set(`${PLATFORM}/${secretRef}`, { metadata: { name: secretRef, namespace: PLATFORM, resourceVersion: '1' }, data: { 'api-key': Buffer.from(`sk-${secretRef}`).toString('base64') } })
    }
  }
  return kube
}

const fmt = (calls: Map<string, number>) => [...calls].sort().map(([k, v]) => `${k} ${v}`).join(', ')

interface Round { ms: number; due: number; probes: number; api: number; calls: Map<string, number> }

for (const n of SIZES) {
  for (const shared of [true, false]) {
    const kube = plane(n, shared)
    const m = countingKube(kube)
    const clock = { now: new Date('2026-03-01T00:00:00Z') }
    const deps = testDeps(m.kube, clock)
    const round = async (): Promise<Round> => {
      m.reset()
      requests = 0
      const start = process.hrtime.bigint()
      const outcome = await probeRound(deps, newProbeRound())
      const ms = Number(process.hrtime.bigint() - start) / 1e6
      if (outcome.failed > 0 || outcome.deferred > 0) throw new Error(`round failed for ${outcome.failed}, deferred ${outcome.deferred}`)
      return { ms, due: outcome.due, probes: requests, api: [...m.calls.values()].reduce((a, b) => a + b, 0), calls: new Map(m.calls) }
    }
    const label = `${String(n).padStart(5)} ${(shared ? 'shared' : 'distinct').padEnd(8)}`
    const first = await round()
    console.log(`${label} first round (all new)   ${first.ms.toFixed(1).padStart(8)} ms  due ${String(first.due).padStart(5)}  probes ${String(first.probes).padStart(5)}  API calls ${String(first.api).padStart(5)} (${fmt(first.calls)})`)
    // Every provider is on its own slot by minute 8; then each minute's round serves about a fifth.
    const steady: Round[] = []
    for (let minute = 1; minute <= 17; minute++) {
      clock.now = new Date(clock.now.getTime() + 60_000)
      const r = await round()
      if (minute >= 8) steady.push(r)
    }
    const avg = (f: (r: Round) => number) => steady.reduce((a, r) => a + f(r), 0) / steady.length
    const max = (f: (r: Round) => number) => Math.max(...steady.map(f))
    console.log(`${label} steady, per minute       ${avg((r) => r.ms).toFixed(1).padStart(8)} ms  due ${avg((r) => r.due).toFixed(0).padStart(5)} (max ${max((r) => r.due)})  probes ${avg((r) => r.probes).toFixed(0).padStart(5)} (max ${max((r) => r.probes)})  API calls ${avg((r) => r.api).toFixed(0).padStart(5)} (max ${max((r) => r.api)})`)
  }
}
server.close()

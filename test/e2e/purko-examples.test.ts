// purko's example manifests, every kind, applied to the embedded plane as a purko user would
// bring them, and every example Workflow run to its end: the model behind the anthropic
// LLMProvider is test/fixtures/anthropic-stand-in.mjs on 127.0.0.1 (a real HTTP server in its own
// process, like the real API), the one step that needs a person is approved with the CLI. The
// same expectations hold on real Pods (test/knative/real/purko.ts).
import { spawn, type ChildProcess } from 'node:child_process'
import { mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, it } from 'vitest'
import { freePort } from '../../local/free-port.js'
import type { KubeObject } from '../../local/knative/kube-http.js'
import { startLocalPlane, type LocalPlane } from '../../local/plane.js'
import { eventually } from '../support/eventually.js'
import { expectPurkoRuns, purkoRunsOn, type PurkoRuns } from '../support/purko-runs.js'

const ROOT = join(import.meta.dirname, '../..')
const KEY = 'sk-ant-stand-in-embedded'

let plane: LocalPlane
let standIn: ChildProcess
let runs: PurkoRuns

beforeAll(async () => {
  const scratch = mkdtempSync(join(tmpdir(), 'kinetic-e2e-purko-'))
  const port = await freePort()
  standIn = spawn(process.execPath, [join(ROOT, 'test', 'fixtures', 'anthropic-stand-in.mjs')], { env: { ...process.env, PORT: String(port), KEY }, stdio: 'ignore' })
  const base = `http://127.0.0.1:${port}`
  await eventually('the stand-in model answering', async () => (await fetch(`${base}/requests`).catch(() => undefined))?.ok, 10_000, 100)
  plane = await startLocalPlane({ root: ROOT, kubeconfigPath: join(scratch, 'kubeconfig'), logDir: join(scratch, 'logs'), pingIntervalMs: 5000 })
  runs = await purkoRunsOn({
    kubeconfig: plane.kubeconfigPath,
    get: (path) => plane.kube.get(path),
    apply: (obj: KubeObject) => plane.kube.apply(obj),
    endpoint: `${base}/v1`,
    key: KEY,
    requests: async () => (await (await fetch(`${base}/requests`)).json()) as never,
    ms: 420_000,
  })
}, 480_000)

afterAll(async () => {
  await plane?.stop()
  standIn?.kill()
}, 30_000)

describe('purko\'s examples on the embedded plane', () => {
  it('applies every example and runs every example Workflow to Succeeded, each step through the anthropic provider, the approval granted with the CLI', () => {
    expectPurkoRuns(runs)
  })
})

import { readdirSync, readFileSync } from 'node:fs'
import { join, sep } from 'node:path'
import { defineConfig } from 'vitest/config'

// One vitest project per test tier (docs/architecture/test-tiers.md). A test file's tier is the
// folder it lives in or the suffix of its name (`x.local.test.ts`, `x.cluster.test.ts`,
// `x.browser.test.ts`); everything else is `unit`: nothing outside the test process (no child
// process, cluster or browser; the embedded API server in the same process is fine), the edit
// loop's tier (`npm run test:unit`). `npm test` runs every project; `vitest run --project <tier>`
// runs one.
const TIERS: Record<string, string[]> = {
  // The embedded API server, the local plane, child processes (functions, the executor, the MCP
  // bridge, the OpenTelemetry Collector) on 127.0.0.1.
  local: ['test/e2e/**/*.test.ts', 'test/local/**/*.test.ts', 'test/integration/**/*.test.ts', 'test/**/*.local.test.ts'],
  // A real etcd, kube-apiserver and kube-controller-manager (npm run cluster:build).
  cluster: ['test/cluster/**/*.test.ts', 'test/**/*.cluster.test.ts'],
  // A real one-node Kubernetes: root, containerd, CNI (npm run cluster).
  node: ['test/node/**/*.test.ts'],
  // Real Knative Serving and Eventing on that node (npm run knative:build).
  knative: ['test/knative/real/**/*.test.ts'],
  // Debian's chromium.
  browser: ['test/browser/**/*.test.ts', 'test/**/*.browser.test.ts'],
  // A real registry, skopeo and umoci.
  image: ['test/image/**/*.test.ts'],
}

/** Test files that intercept outbound HTTP with msw (a model or MCP endpoint): each runs in its own module graph. */
const INTERCEPTING = readdirSync('test', { recursive: true, encoding: 'utf8' })
  .filter((f) => f.endsWith('.test.ts') && /from 'msw/.test(readFileSync(join('test', f), 'utf8')))
  .map((f) => `test/${f.split(sep).join('/')}`)

export default defineConfig({
  test: {
    // Finds the cluster tier's binaries once per run (test/cluster/global-setup.ts).
    globalSetup: ['test/cluster/global-setup.ts'],
    // Some tests spawn processes (the executor, functions, the local plane); the machine may have 2 cores.
    testTimeout: 30_000,
    hookTimeout: 60_000,
    projects: [
      // Threads start faster than forks; unit tests change no process-wide state (no chdir, no exit).
      // Files share one module graph per worker (`isolate: false`): the embedded API server and the
      // CRDs load once per worker instead of once per file, which halves the tier's time. Files
      // that intercept outbound HTTP (msw) patch process-wide state, so they run isolated beside it.
      { extends: true, test: { name: 'unit', include: ['test/**/*.test.ts'], exclude: [...Object.values(TIERS).flat(), ...INTERCEPTING], pool: 'threads', isolate: false } },
      { extends: true, test: { name: 'unit-isolated', include: INTERCEPTING, exclude: Object.values(TIERS).flat(), pool: 'threads' } },
      ...Object.entries(TIERS).map(([name, include]) => ({ extends: true, test: { name, include } })),
    ],
  },
})

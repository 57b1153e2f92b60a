// `npm run bench`: every benchmark, one after another, each in its own process so one's memory
// and JIT state do not colour the next. `npm run bench -- engine cold-start` runs a subset.
import { spawnSync } from 'node:child_process'
import { existsSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'

const root = join(dirname(fileURLToPath(import.meta.url)), '..')
const all = ['engine', 'api-calls', 'cold-start', 'apiserver', 'broker', 'local-plane', 'control-plane', 'step-latency', 'autonomy-tick', 'provider-probe', 'mcpserver-event', 'recipes', 'recipes-mcp', 'webhook', 'console', 'image', 'idle-cost', 'memory', 'scale', 'user-patterns', 'telemetry', 'node']
const chosen = process.argv.slice(2).length > 0 ? process.argv.slice(2) : all
let failed = 0
for (const name of chosen) {
  const file = join(root, 'bench', `${name}.ts`)
  if (!existsSync(file)) {
    process.stderr.write(`unknown benchmark ${name}; choose from ${all.join(', ')}\n`)
    failed++
    continue
  }
  process.stdout.write(`\n== ${name} ==\n`)
  const result = spawnSync(process.execPath, ['--import', 'tsx', file], { cwd: root, stdio: 'inherit' })
  if (result.status !== 0) failed++
}
process.exit(failed === 0 ? 0 : 1)

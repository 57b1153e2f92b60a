import { readdirSync, readFileSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { describe, expect, it } from 'vitest'

/**
 * The pure core (schemas and planners) may not do I/O or read the clock: the time comes in as
 * an argument, so the same state always gives the same plan. This test is the boundary STYLE.md
 * asks for, over every file of those folders.
 */
const shared = join(dirname(fileURLToPath(import.meta.url)), '..', '..', 'shared')
const files = [
  ...['schemas', 'reconcile', 'agent', 'autonomy'].flatMap((folder) =>
    readdirSync(join(shared, folder)).filter((f) => f.endsWith('.ts')).map((f) => `${folder}/${f}`)),
  // The Workflow planner's folder (the line above lists only the files directly in reconcile/).
  ...readdirSync(join(shared, 'reconcile', 'workflow-plan')).filter((f) => f.endsWith('.ts')).map((f) => `reconcile/workflow-plan/${f}`),
  // The MCPServer planners (discovery.ts beside them is the network client, so not the whole folder).
  'mcp/registry.ts', 'mcp/workload.ts', 'mcp/plan.ts',
]
  // The provider planners; shared/llm/probe.ts is the I/O beside them.
  .concat(['llm/credentials.ts', 'llm/schedule.ts', 'llm/target.ts', 'llm/plan.ts'])
  // The recipe pipeline, spec §1 steps 1-5.
  .concat(['config.ts', 'cel.ts', 'inputs.ts', 'computed.ts', 'include.ts', 'graph.ts', 'template.ts', 'render.ts', 'rendered.ts'].map((f) => `recipes/${f}`))
  // Recipe policy evaluation (spec §10) and the quantity parser it compares bounds with.
  .concat(['recipes/policy.ts', 'recipes/pod-security.ts', 'quantity.ts'])
  // The recipe manifests (spec §1 step 6: §5 children, §7.9 snapshot) and readiness (§6).
  .concat(['names.ts', 'labels.ts', 'digest.ts', 'objects.ts', 'pod-template.ts', 'manifests.ts', 'services.ts', 'secrets.ts', 'mcp.ts', 'child-workflow.ts', 'snapshot.ts', 'readiness.ts'].map((f) => `recipes/${f}`))
  // The deploy, drift, rollback and deletion planners (spec §7.8, §7.9, §7.11, §11).
  .concat(['deploy-plan.ts', 'drift.ts', 'rollback.ts', 'deletion.ts'].map((f) => `recipes/${f}`))
  // The lifecycle planner (spec §7.1-§7.7, §7.10): every file of its folder, and the facts it is told.
  .concat(readdirSync(join(shared, 'recipes', 'lifecycle')).filter((f) => f.endsWith('.ts')).map((f) => `recipes/lifecycle/${f}`))
  .concat(['recipes/lifecycle-facts.ts'])
  // Template schedules and the template planner (run-builder.ts beside them draws random run names).
  .concat(['triggers/cron.ts', 'triggers/template-plan.ts'])
  // The console's views: markup, times, the run's view model and its DAG drawing, its configuration and address ranges.
  .concat(['html.ts', 'phase.ts', 'time.ts', 'action-form.ts', 'shell.ts', 'run/run-view.ts', 'run/dag-layout.ts', 'run/dag-svg.ts', 'auth/cidr.ts', 'auth/config.ts'].map((f) => `console/${f}`))

describe('the pure core', () => {
  it.each(files)('shared/%s imports no hono, no node:* module and no value from the Kubernetes client, and reads no clock, randomness or environment', (file) => {
    const source = readFileSync(join(shared, file), 'utf8')
    const imports = [...source.matchAll(/^import\s+(type\s+)?[^'"]*from\s+'([^']+)'/gm)]
    const bad = imports.filter(([, isType, from]) =>
      from === 'hono' || from!.startsWith('hono/') || from!.startsWith('node:')
      || (from === '@kubernetes/client-node' && !isType))
    expect(bad.map((m) => m[0])).toEqual([])
    expect(source).not.toMatch(/Date\.now\(|new Date\(\)|Math\.random|process\.env/)
  })
})

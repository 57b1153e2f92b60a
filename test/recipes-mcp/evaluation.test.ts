// deploy-recipe's in-process evaluation (spec §14.3): the controller's own render, manifest
// and policy functions, and spec §7.5's approve command.
import { describe, expect, it } from 'vitest'
import { recipeConfig } from '../../shared/recipe/plan/config.js'
import { evaluateDeployment, evaluationNamespaces } from '../../shared/recipes-mcp/evaluation.js'
import type { WorkflowRecipe } from '../../shared/schemas/workflowrecipe.js'
import { WorkflowRecipePolicySchema } from '../../shared/schemas/workflowrecipepolicy.js'

const config = recipeConfig({})
const written = (spec: unknown, meta: Record<string, unknown> = {}): WorkflowRecipe =>
  ({ apiVersion: 'purko.io/v1alpha1', kind: 'WorkflowRecipe', metadata: { name: 'shop', namespace: 'team-a', generation: 4, ...meta }, spec }) as never
const SPEC = {
  workloads: [
    { name: 'db', kind: 'StatefulSet', image: 'postgres:16', ports: [{ name: 'pg', port: 5432 }] },
    { name: 'web', kind: 'Deployment', image: 'nginx:1.27', dependsOn: ['db'], transport: 'http', ports: [{ name: 'http', port: 80 }] },
  ],
}

describe('evaluateDeployment', () => {
  it('lists the objects the revision will create, in deploy order and target namespaces, and needs no approval by default', () => {
    const e = evaluateDeployment(written(SPEC), config, [], {})
    expect(e).toMatchObject({ specValid: true, errors: [], approvalRequired: false, policy: { compliant: true, evaluated: [], violations: [] } })
    expect(e).not.toHaveProperty('approveCommand')
    expect(e.objects.map((o) => `${o.kind} ${o.namespace}/${o.name}`)).toEqual([
      'Service sandbox-recipes/team-a-shop-db-d306e21e', 'StatefulSet sandbox-recipes/team-a-shop-db-d306e21e',
      'Service mcp-server/team-a-shop-web-5101637e', 'Deployment mcp-server/team-a-shop-web-5101637e', 'MCPServer mcp-server/team-a-shop-web-5101637e',
    ])
  })

  it('requires approval for requireApproval or an Enforce policy asking it, with the command for this generation', () => {
    expect(evaluateDeployment(written({ ...SPEC, requireApproval: true }), config, [], {})).toMatchObject({
      approvalRequired: true, approveCommand: 'kubectl annotate -n team-a workflowrecipe/shop purko.io/approve=4',
    })
    const gate = WorkflowRecipePolicySchema.parse({ apiVersion: 'purko.io/v1alpha1', kind: 'WorkflowRecipePolicy', metadata: { name: 'gate' }, spec: { mode: 'Enforce', requireApproval: true } })
    expect(evaluateDeployment(written(SPEC), config, [gate], {})).toMatchObject({ approvalRequired: true, policy: { compliant: true, evaluated: ['gate'] } })
  })

  it('reports policy and Pod Security findings of the target namespaces', () => {
    const spec = { workloads: [{ name: 'web', kind: 'Deployment', image: 'nginx:1.27', security: { addCapabilities: ['CHOWN'] } }] }
    const e = evaluateDeployment(written(spec), config, [], { 'sandbox-recipes': { 'pod-security.kubernetes.io/enforce': 'restricted' } })
    expect(e.policy.compliant).toBe(false)
    expect(e.policy.violations).toEqual([expect.objectContaining({ policy: 'pod-security', mode: 'Enforce', rule: 'capabilities.podSecurity', workload: 'web' })])
  })

  it('a spec that does not render is invalid with its errors, and nothing else is evaluated', () => {
    const e = evaluateDeployment(written({ workloads: [{ name: 'web', kind: 'Deployment', image: 'nginx', dependsOn: ['nope'] }], requireApproval: true }), config, [], {})
    expect(e).toMatchObject({ specValid: false, objects: [], approvalRequired: false })
    expect(e.errors[0]).toMatchObject({ message: expect.stringContaining('nope') })
    const shape = evaluateDeployment(written({ workloads: [{ name: 'web', kind: 'Pod' }] }), config, [], {})
    expect(shape).toMatchObject({ specValid: false, objects: [] })
    expect(shape.errors).toEqual(expect.arrayContaining([{ reason: 'InvalidSpec', field: 'spec.workloads.0.kind', message: expect.any(String) }]))
  })

  it('a template is validated but creates nothing and is never approved', () => {
    const e = evaluateDeployment(written({ ...SPEC, requireApproval: true }, { annotations: { 'purko.io/template': 'true' } }), config, [], {})
    expect(e).toMatchObject({ specValid: true, objects: [], approvalRequired: false })
  })

  it('reads the labels of the recipe namespace and both target namespaces, with {namespace} placement', () => {
    expect(evaluationNamespaces('team-a', config)).toEqual(['team-a', 'mcp-server', 'sandbox-recipes'])
    expect(evaluationNamespaces('team-a', recipeConfig({ KINETIC_RECIPES_MCP_NAMESPACE: '{namespace}', KINETIC_RECIPES_SANDBOX_NAMESPACE: 'recipes-{namespace}' }))).toEqual(['team-a', 'recipes-team-a'])
  })
})

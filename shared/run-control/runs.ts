/**
 * A manual run of a template (POST /api/run): the run builder's `manual` run, started by the
 * verified user. Pure: the random suffix comes in as an argument.
 */
import type { Workflow } from '../schemas/workflow.js'
import { buildRun, deliverySuffix, isTemplate } from '../template/run-builder.js'
import { badRequest } from './errors.js'

/**
 * Pure: the run suffix. With an Idempotency-Key it is derived from the template's uid, the user
 * and the key, so the same request sent twice names the same run (the second create meets
 * AlreadyExists); without one it is the random suffix given.
 */
export function manualRunSuffix(template: Workflow, user: string, idempotencyKey: string | undefined, random: string): string {
  if (idempotencyKey === undefined) return random
  return deliverySuffix(template.metadata.uid ?? '', `manual|${user}|${idempotencyKey}`)
}

/** Pure: the run to create; 400 when the Workflow is not a template. */
export function manualRun(template: Workflow, user: string, parameters: Record<string, string>, suffix: string): Workflow {
  if (!isTemplate(template)) {
    throw badRequest(`Workflow ${template.metadata.namespace}/${template.metadata.name} is not a template (annotate it purko.io/template: "true", or give it spec.trigger.schedule); rerun it with POST /api/rerun/${template.metadata.namespace}/${template.metadata.name}`)
  }
  return buildRun({ template, type: 'manual', source: user, suffix, parameters })
}

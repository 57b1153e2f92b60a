// spec §8.1 (and §2, §10.1): invalid WorkflowRecipes and WorkflowRecipePolicies the
// CRD must refuse at kubectl apply, each with the message the spec fixes. Shared by the
// embedded API server test (test/integration/recipe-examples.test.ts) and the cluster tier
// (test/cluster/shipped.test.ts), so both servers are held to the same words.

type Json = Record<string, any>

export function recipe(name: string, spec: Json): Json {
  return {
    apiVersion: 'purko.io/v1alpha1', kind: 'WorkflowRecipe', metadata: { name, namespace: 'recipes-demo' },
    spec: { workloads: [{ name: 'web', kind: 'Deployment', image: 'nginx:1.27' }], ...spec },
  }
}
/** A recipe whose single workload is `w` merged over a Deployment. */
const withWorkload = (w: Json) => recipe('bad', { workloads: [{ name: 'web', kind: 'Deployment', image: 'nginx:1.27', ...w }] })
const stdio = { transport: 'stdio' }

export const INVALID: [string, Json, string][] = [
  ['a name of 41 characters', recipe('a'.repeat(41), {}), "WorkflowRecipe names are 1-40 characters: lowercase letters, digits and '-', starting with a letter"],
  ['a name starting with a digit', recipe('9lives', {}), "WorkflowRecipe names are 1-40 characters: lowercase letters, digits and '-', starting with a letter"],
  ['no workload and no step', recipe('bad', { workloads: [] }), 'a recipe needs at least one workload or one step'],
  ['an undeclared profile', recipe('bad', { profile: 'prod', profiles: [{ name: 'dev' }] }), 'profile "prod" is not declared in spec.profiles'],
  ['a profile with no profiles at all', recipe('bad', { profile: 'prod' }), 'profile "prod" is not declared in spec.profiles'],
  ['workflow settings without steps', recipe('bad', { workflow: { parallelism: 2 } }), 'spec.workflow requires spec.steps'],
  ['replicas on a Job', withWorkload({ kind: 'Job', replicas: 2 }), 'replicas is only allowed for kind Deployment and StatefulSet'],
  ['replicas on a DaemonSet', withWorkload({ kind: 'DaemonSet', replicas: '{{inputs.n}}' }), 'replicas is only allowed for kind Deployment and StatefulSet'],
  ['a CronJob without schedule', withWorkload({ kind: 'CronJob' }), 'schedule is required for kind CronJob and not allowed for other kinds'],
  ['a schedule on a Deployment', withWorkload({ schedule: '0 3 * * *' }), 'schedule is required for kind CronJob and not allowed for other kinds'],
  ['volumeClaimTemplates on a Deployment', withWorkload({ volumeClaimTemplates: [{ name: 'data', storage: '1Gi', mountPath: '/data' }] }), 'volumeClaimTemplates is only allowed for kind StatefulSet'],
  ['a claim with no mount', withWorkload({ kind: 'StatefulSet', volumes: [{ name: 'tmp', mountPath: '/tmp' }], volumeClaimTemplates: [{ name: 'data', storage: '1Gi' }] }), 'volumeClaimTemplate "data" needs a mountPath or a volume of the same name'],
  ['ports on a Job', withWorkload({ kind: 'Job', ports: [{ name: 'http', port: 80 }] }), 'ports are not allowed for kind Job and CronJob'],
  ['ports on a CronJob', withWorkload({ kind: 'CronJob', schedule: '* * * * *', ports: [{ name: 'http', port: 80 }] }), 'ports are not allowed for kind Job and CronJob'],
  ['strategy on a StatefulSet', withWorkload({ kind: 'StatefulSet', strategy: 'Recreate' }), 'strategy is only allowed for kind Deployment'],
  ['podManagementPolicy on a Deployment', withWorkload({ podManagementPolicy: 'Parallel' }), 'podManagementPolicy is only allowed for kind StatefulSet'],
  ['persistentVolumeClaimRetention on a Deployment', withWorkload({ persistentVolumeClaimRetention: 'Delete' }), 'persistentVolumeClaimRetention is only allowed for kind StatefulSet'],
  ['cronJob settings on a Job', withWorkload({ kind: 'Job', cronJob: { suspend: true } }), 'cronJob is only allowed for kind CronJob'],
  ['job settings on a Deployment', withWorkload({ job: { backoffLimit: 1 } }), 'job is only allowed for kind Job and CronJob'],
  ['transport on a DaemonSet', withWorkload({ kind: 'DaemonSet', transport: 'http', ports: [{ name: 'mcp', port: 80 }] }), 'transport is only allowed for kind Deployment (http or stdio) and StatefulSet (http)'],
  ['transport stdio on a StatefulSet', withWorkload({ kind: 'StatefulSet', ...stdio }), 'transport is only allowed for kind Deployment (http or stdio) and StatefulSet (http)'],
  ['transport http without ports', withWorkload({ transport: 'http' }), 'transport http requires at least one port'],
  ['transport stdio with ports', withWorkload({ ...stdio, ports: [{ name: 'mcp', port: 80 }] }), 'transport stdio workloads cannot declare ports, volumes, volumeClaimTemplates or probes, and run at most 10 replicas'],
  ['transport stdio with a volume', withWorkload({ ...stdio, volumes: [{ name: 'tmp', mountPath: '/tmp' }] }), 'transport stdio workloads cannot declare ports, volumes, volumeClaimTemplates or probes, and run at most 10 replicas'],
  ['transport stdio with a probe', withWorkload({ ...stdio, livenessProbe: { tcpSocket: { port: 8000 } } }), 'transport stdio workloads cannot declare ports, volumes, volumeClaimTemplates or probes, and run at most 10 replicas'],
  ['transport stdio with 11 replicas', withWorkload({ ...stdio, replicas: 11 }), 'transport stdio workloads cannot declare ports, volumes, volumeClaimTemplates or probes, and run at most 10 replicas'],
  ['transport stdio with templated replicas', withWorkload({ ...stdio, replicas: '{{inputs.n}}' }), 'transport stdio workloads cannot declare ports, volumes, volumeClaimTemplates or probes, and run at most 10 replicas'],
  ['mcp settings without transport', withWorkload({ mcp: { category: 'x' } }), 'mcp settings require transport'],
  ['an mcp.port that is not a port', withWorkload({ transport: 'http', ports: [{ name: 'mcp', port: 3001 }], mcp: { port: 3002 } }), "mcp.port must be one of the workload's ports"],
  ['bearer auth without a token Secret', withWorkload({ ...stdio, mcp: { auth: 'bearer' } }), 'mcp.auth bearer requires mcp.tokenSecret'],
  ['service settings without ports', withWorkload({ service: { internalTrafficPolicy: 'Local' } }), 'service settings require ports'],
  ['a workload depending on itself', withWorkload({ dependsOn: ['web'] }), 'workload "web" cannot depend on itself'],
  ['a step depending on itself', recipe('bad', { workloads: [], steps: [{ name: 'draft', agent: 'writer', dependsOn: ['draft'] }] }), 'step "draft" cannot depend on itself'],
  ['a cpu request that is not a quantity', withWorkload({ resources: { requests: { cpu: 'lots' } } }), 'resources.requests.cpu must be a Kubernetes quantity or a single {{...}} placeholder'],
  ['a memory limit with two placeholders', withWorkload({ resources: { limits: { memory: '{{inputs.a}}{{inputs.b}}' } } }), 'resources.limits.memory must be a Kubernetes quantity or a single {{...}} placeholder'],
  ['a claim size that is not a quantity', withWorkload({ kind: 'StatefulSet', volumeClaimTemplates: [{ name: 'data', storage: 'big', mountPath: '/data' }] }), 'volumeClaimTemplates[data].storage must be a Kubernetes quantity or a single {{...}} placeholder'],
  ['a probe with two handlers', withWorkload({ readinessProbe: { tcpSocket: { port: 80 }, exec: { command: ['true'] } } }), 'a probe needs exactly one of httpGet, tcpSocket, exec'],
  ['a probe with no handler', withWorkload({ livenessProbe: { periodSeconds: 5 } }), 'a probe needs exactly one of httpGet, tcpSocket, exec'],
  ['an enum on an integer input', recipe('bad', { inputs: [{ name: 'n', type: 'integer', enum: ['1'] }] }), 'enum and pattern are only allowed for type string'],
  ['a pattern on a boolean input', recipe('bad', { inputs: [{ name: 'b', type: 'boolean', pattern: '^t' }] }), 'enum and pattern are only allowed for type string'],
  ['a minimum on a string input', recipe('bad', { inputs: [{ name: 's', minimum: 1 }] }), 'minimum and maximum are only allowed for type integer and number'],
]

/** Refusals by schema keywords (spec §8.1 "Examples the API server refuses"): the field the server names. */
export const SCHEMA_REFUSALS: [string, Json, string][] = [
  ['runAsUser 0', withWorkload({ security: { runAsUser: 0 } }), 'spec.workloads[0].security.runAsUser'],
  ['capability SYS_ADMIN', withWorkload({ security: { addCapabilities: ['SYS_ADMIN'] } }), 'spec.workloads[0].security.addCapabilities[0]'],
  ['two workloads named web', recipe('bad', { workloads: [{ name: 'web', kind: 'Deployment', image: 'a' }, { name: 'web', kind: 'Job', image: 'b' }] }), 'spec.workloads[1]'],
  ['replicas abc', withWorkload({ replicas: 'abc' }), 'spec.workloads[0].replicas'],
  ['replicas 5000', withWorkload({ replicas: 5000 }), 'spec.workloads[0].replicas'],
]

const policy = (spec: Json): Json => ({ apiVersion: 'purko.io/v1alpha1', kind: 'WorkflowRecipePolicy', metadata: { name: 'bad' }, spec })
export const INVALID_POLICIES: [string, Json, string][] = [
  ['a capability both allowed and forbidden', policy({ security: { allowedCapabilities: ['CHOWN', 'KILL'], forbiddenCapabilities: ['KILL'] } }), 'security.allowedCapabilities and security.forbiddenCapabilities must not share a capability'],
  ['a user range with min above max', policy({ security: { allowedUserRanges: [{ min: 1000, max: 70 }] } }), 'min must not be greater than max'],
]


/** True when one of a refusal's cause messages carries the spec's message (after the server's `Invalid value: ...: ` prefix). */
export function carries(causes: { message?: string }[] | undefined, message: string): boolean {
  return (causes ?? []).some((c) => (c.message ?? '').endsWith(`: ${message}`))
}

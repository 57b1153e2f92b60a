/**
 * The Kubernetes Job that runs one attempt of one Workflow step (purko's job builder), with
 * Kinetic's fixes: credentials only through `secretKeyRef`, the agent's ServiceAccount, a
 * restricted pod security context, and labels that identify the run and the attempt. A step's
 * `model` (Kinetic extension, spec §5.10) overrides the Agent's provider, model
 * name, temperature and maxTokens for that step's Job.
 */
import type { V1Job, V1ResourceRequirements, V1Volume, V1VolumeMount } from '@kubernetes/client-node'
import type { Agent } from '../../schemas/agent.js'
import type { WorkflowStep } from '../../schemas/workflow.js'
import {
  API_VERSION, LABEL_AGENT, LABEL_ATTEMPT, LABEL_RUN_ID, LABEL_SHARD, LABEL_STEP, LABEL_WORKFLOW,
} from '../../schemas/labels.js'
import { agentServiceAccountName } from '../../agent/plan/names.js'
import { parseGoDuration } from '../../core/duration.js'
import { usesLegacyVectorVolume } from '../../memory/plan/memory-env.js'
import { stepJobShard } from './job-shard.js'
import { sha256Hex } from '../../core/sha256.js'
import { ownCredentials, stepEnv, type StepEnvInput } from './step-job-env.js'

/** Container name of every step Job (purko's executor contract). */
export const STEP_CONTAINER_NAME = 'step-executor'
/** Step deadline when neither the step nor the agent sets one (seconds). */
export const DEFAULT_STEP_TIMEOUT_SECONDS = 1800
/** Finished step Jobs are garbage-collected after this many seconds. */
export const JOB_TTL_SECONDS = 3600
/** UID and GID step containers run as (the conventional unprivileged "nonroot" user). */
export const STEP_RUN_AS_ID = 65532

const MAX_NAME = 63
const LABEL_VALUE = /^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$/

/** Everything the builder needs: what the container's environment is made of (step-job-env.ts), and the pod's own settings. */
export interface StepJobInput extends StepEnvInput {
  executorImage: string
  hostNetwork: boolean
  /** Computed by `stepTimeoutSeconds`. */
  activeDeadlineSeconds: number
}

/**
 * Pure: `<wf>-<step>-<runId>` (plus `-r<n>` for retry n), or `<12 hex of sha256("<wf>/<step>")>-<runId>[-r<n>]`
 * when that is longer than 63 characters; the same inputs always give the same name.
 */
export function stepJobName(workflowName: string, stepName: string, runId: string, attempt: number): string {
  const suffix = attempt > 0 ? `-r${attempt}` : ''
  const base = `${workflowName}-${stepName}-${runId}${suffix}`
  if (base.length <= MAX_NAME) return base
  return `${sha256Hex(`${workflowName}/${stepName}`).slice(0, 12)}-${runId}${suffix}`
}

/**
 * Pure: `value` when it is a valid label value, else a deterministic valid one (a prefix plus 12
 * hex of its SHA-256). Workflow and Agent names may be up to 253 characters but label values only
 * 63, so anything that must find a Job's Workflow should use the ownerReference, not this label.
 */
export function labelValue(value: string): string {
  if (value.length <= MAX_NAME && LABEL_VALUE.test(value)) return value
  const prefix = value.replace(/[^-A-Za-z0-9_.]/g, '-').slice(0, MAX_NAME - 13).replace(/^[^A-Za-z0-9]+|[^A-Za-z0-9]+$/g, '')
  const hash = sha256Hex(value).slice(0, 12)
  return prefix === '' ? hash : `${prefix}-${hash}`
}

/** Pure: a step's deadline in seconds: its `timeout.timeoutSeconds` > 0, else the agent's `guardrails.maxExecutionTime`, else 1800. */
export function stepTimeoutSeconds(step: WorkflowStep, agent: Agent): number {
  const own = step.timeout?.timeoutSeconds
  if (own !== undefined && own > 0) return own
  const raw = agent.spec.guardrails?.maxExecutionTime
  const parsed = typeof raw === 'string' ? parseGoDuration(raw) : null
  if (parsed !== null && Math.trunc(parsed) >= 1) return Math.trunc(parsed)
  return DEFAULT_STEP_TIMEOUT_SECONDS
}

function volumeName(raw: string): string {
  return raw.toLowerCase().replace(/[^a-z0-9-]/g, '-').slice(0, MAX_NAME).replace(/^-+|-+$/g, '') || 'tool-cfg'
}

function volumes(input: StepJobInput): { volumes: V1Volume[]; mounts: V1VolumeMount[] } {
  const { agent, provider } = input
  // The root filesystem is read-only; executors write scratch files (code execution) under /tmp.
  const podVolumes: V1Volume[] = [{ name: 'tmp', emptyDir: {} }]
  const mounts: V1VolumeMount[] = [{ name: 'tmp', mountPath: '/tmp' }]
  for (const tool of agent.spec.tools ?? []) {
    const configMap = (tool.config as { configMapName?: unknown } | undefined)?.configMapName
    if (typeof configMap !== 'string' || configMap === '') continue
    const name = volumeName(`tool-cfg-${tool.name.replaceAll('_', '-')}`)
    podVolumes.push({ name, configMap: { name: configMap, optional: true } })
    mounts.push({ name, mountPath: `/etc/tool-config/${tool.name}`, readOnly: true })
  }
  if (usesLegacyVectorVolume(agent)) {
    const claimName = agent.spec.memory?.persistentStorage?.volumeClaimRef || `${agent.metadata.name ?? ''}-memory`
    podVolumes.push({ name: 'agent-memory', persistentVolumeClaim: { claimName } })
    mounts.push({ name: 'agent-memory', mountPath: '/var/run/agent-memory' })
  }
  const gcp = provider ? (input.credentials ?? ownCredentials(provider)).gcp : undefined
  if (provider?.spec.type === 'vertex-ai' && gcp) {
    // A copy holds the key under the provider's name; the executor expects the file credentials.json.
    const items = gcp.key ? { items: [{ key: gcp.key, path: 'credentials.json' }] } : {}
    podVolumes.push({ name: 'gcp-creds', secret: { secretName: gcp.secret, ...items, optional: true } })
    mounts.push({ name: 'gcp-creds', mountPath: '/var/run/secrets/gcp', readOnly: true })
  }
  return { volumes: podVolumes, mounts }
}

function resources(agent: Agent): V1ResourceRequirements | undefined {
  const declared = agent.spec.runtime?.resources
  const pick = (list: Record<string, unknown> | undefined) => {
    const out: Record<string, string> = {}
    for (const key of ['cpu', 'memory']) {
      const quantity = list?.[key]
      if (typeof quantity === 'string' && quantity !== '') out[key] = quantity
    }
    return Object.keys(out).length > 0 ? out : undefined
  }
  const requests = pick(declared?.requests)
  const limits = pick(declared?.limits)
  if (!requests && !limits) return undefined
  return { ...(requests ? { requests } : {}), ...(limits ? { limits } : {}) }
}

/** Pure: the step Job manifest; identical input always yields an identical manifest (nothing time- or random-based). */
export function stepJobManifest(input: StepJobInput): V1Job {
  const { workflow, step, agent, runId, attempt } = input
  const workflowName = workflow.metadata.name ?? ''
  const labels: Record<string, string> = {
    [LABEL_WORKFLOW]: labelValue(workflowName),
    [LABEL_STEP]: labelValue(step.name),
    [LABEL_AGENT]: labelValue(agent.metadata.name ?? step.agentRef?.name ?? ''),
    [LABEL_RUN_ID]: labelValue(runId),
    [LABEL_ATTEMPT]: String(attempt),
    [LABEL_SHARD]: stepJobShard(workflow.metadata.namespace ?? '', workflowName),
  }
  const { volumes: podVolumes, mounts } = volumes(input)
  const containerResources = resources(agent)
  return {
    apiVersion: 'batch/v1',
    kind: 'Job',
    metadata: {
      name: stepJobName(workflowName, step.name, runId, attempt),
      namespace: workflow.metadata.namespace ?? '',
      labels,
      ownerReferences: [{
        apiVersion: API_VERSION,
        kind: 'Workflow',
        name: workflowName,
        uid: workflow.metadata.uid ?? '',
        controller: true,
        blockOwnerDeletion: true,
      }],
    },
    spec: {
      backoffLimit: 0,
      activeDeadlineSeconds: input.activeDeadlineSeconds,
      ttlSecondsAfterFinished: JOB_TTL_SECONDS,
      template: {
        metadata: { labels: { ...labels } },
        spec: {
          restartPolicy: 'Never',
          // Steps run as the agent's own identity (purko uses the namespace default); the planner
          // starts no step before that ServiceAccount exists. Its token is not mounted because
          // executors talk to models and MCP servers, not to the API server.
          serviceAccountName: agentServiceAccountName(agent),
          automountServiceAccountToken: false,
          hostNetwork: input.hostNetwork,
          dnsPolicy: input.hostNetwork ? 'Default' : 'ClusterFirst',
          securityContext: {
            runAsNonRoot: true,
            runAsUser: STEP_RUN_AS_ID,
            runAsGroup: STEP_RUN_AS_ID,
            fsGroup: STEP_RUN_AS_ID,
            seccompProfile: { type: 'RuntimeDefault' },
          },
          containers: [{
            name: STEP_CONTAINER_NAME,
            image: agent.spec.runtime?.image || input.executorImage,
            imagePullPolicy: 'IfNotPresent',
            env: stepEnv(input),
            ...(containerResources ? { resources: containerResources } : {}),
            securityContext: {
              allowPrivilegeEscalation: false,
              readOnlyRootFilesystem: true,
              runAsNonRoot: true,
              capabilities: { drop: ['ALL'] },
            },
            volumeMounts: mounts,
          }],
          volumes: podVolumes,
        },
      },
    },
  }
}

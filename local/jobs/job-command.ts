import { tmpdir } from 'node:os'
import type { KubeObject } from '../knative/kube-http.js'
import { executorCommand, type StepCommand } from './step-process.js'

/** What a Job's pod runs locally: a process, or why none can run. */
export type LocalCommand = StepCommand | { unavailable: string }

type Container = { name?: string; image?: string; command?: string[]; args?: string[] }

/**
 * Pure: the local runner's program for a Job's pod. No image is ever pulled locally.
 * - A Job not made by a WorkflowRecipe (a workflow step Job) runs the project's executor,
 *   whatever its image, so purko-compatible step Jobs run unchanged.
 * - A recipe's Job (label `purko.io/recipe`: a Job workload or a test Job) is the recipe
 *   author's program, which the executor is not. It runs when its container's command is
 *   `node` (`node:*` images, the Kinetic image): host Node.js with the container's remaining
 *   command and args and its env, in the temp directory. Kubernetes' `$(VAR)` expansion of
 *   command and args is not done. Any other command cannot run here: the pod fails with reason
 *   `ImageNotRunnableLocally`, said in the pod log, so the Job fails rather than pretending.
 */
export function localJobCommand(job: KubeObject): LocalCommand {
  const labels = (job.metadata?.labels ?? {}) as Record<string, string>
  if (labels['purko.io/recipe'] === undefined) return executorCommand()
  const spec = job.spec as { template?: { spec?: { containers?: Container[] } } } | undefined
  const c = spec?.template?.spec?.containers?.[0]
  const command = c?.command ?? []
  if (command[0] === 'node') return { command: process.execPath, args: [...command.slice(1), ...(c?.args ?? [])], cwd: tmpdir() }
  const shown = command.length > 0 ? `command ${JSON.stringify(command)}` : 'the image\'s own entrypoint'
  return {
    unavailable: `The local plane runs no container images: recipe Job ${String(job.metadata?.namespace)}/${String(job.metadata?.name)} (image ${c?.image ?? '?'}, ${shown}) `
      + 'runs locally only when its container command is node. Run it on a cluster (npm start -- --kubeconfig <file>).',
  }
}

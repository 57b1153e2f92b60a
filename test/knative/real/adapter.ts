// Kinetic's one ApiServerSource receive adapter on the tier's cluster. Knative writes the list of
// namespaces the source watches into the adapter's Deployment, so a new namespace rolls the
// adapter, and a restarted adapter sends nothing for objects that already exist: a test that
// makes a namespace waits for the new adapter before making the objects in it.
import type { KubeHttp } from '../../../local/knative/kube-http.js'
import { eventually } from '../../support/eventually.js'

interface Condition { type: string; status: string }
interface AdapterDeployment { metadata: { generation: number }; status?: { observedGeneration?: number; updatedReplicas?: number } }

const SELECTOR = encodeURIComponent('eventing.knative.dev/sourceName=resources')

async function adapterDeployment(admin: KubeHttp): Promise<AdapterDeployment | undefined> {
  return (await admin.get<{ items: AdapterDeployment[] }>(`/apis/apps/v1/namespaces/kinetic-system/deployments?labelSelector=${SELECTOR}`))?.items[0]
}

/** The adapter Deployment's generation now (pass it to `adapterRolled` after making a namespace). */
export async function adapterGeneration(admin: KubeHttp): Promise<number> {
  return (await adapterDeployment(admin))?.metadata.generation ?? 0
}

/**
 * Waits until the adapter Deployment has moved past `generation` (at most `rollWithinMs`: a
 * namespace the source already watched rolls nothing) and then until its one pod, of the newest
 * generation, is Ready and no old pod is left.
 */
export async function adapterRolled(admin: KubeHttp, generation: number, rollWithinMs = 60_000): Promise<void> {
  await eventually('the receive adapter Deployment updated for the new namespace', async () => ((await adapterDeployment(admin))?.metadata.generation ?? 0) > generation, rollWithinMs, 1000)
    .catch(() => undefined)
  await eventually('the receive adapter restarted, one Ready pod', async () => {
    const pods = (await admin.get<{ items: Array<{ metadata: { deletionTimestamp?: string }; status?: { conditions?: Condition[] } }> }>(
      `/api/v1/namespaces/kinetic-system/pods?labelSelector=${SELECTOR}`))?.items ?? []
    const d = await adapterDeployment(admin)
    return pods.length === 1 && !pods[0]!.metadata.deletionTimestamp && pods[0]!.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True')
      && d?.status?.observedGeneration === d?.metadata.generation && d?.status?.updatedReplicas === 1
  }, 180_000, 1000)
}

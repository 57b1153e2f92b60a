// purko's example manifests on real Pods, on the install of kinetic.ts: every kind applied as a
// purko user brings them, every example Workflow run to its end by step Jobs of the released
// image, the one step that needs a person approved with the CLI. The model behind the anthropic
// LLMProvider is test/fixtures/anthropic-stand-in.mjs in a Pod of its own (the released image
// has node), reached by the probe and by the step pods over the cluster network. The
// expectations are the embedded plane's (test/e2e/purko-examples.test.ts, test/support/purko-runs.ts).
import { execFile } from 'node:child_process'
import { join } from 'node:path'
import { promisify } from 'node:util'
import { it } from 'vitest'
import { REPO_ROOT } from '../../../local/jobs/step-process.js'
import { AGENTS_NS, expectPurkoRuns, purkoRunsOn, STAND_IN_SCRIPT, type SeenRequest } from '../../support/purko-runs.js'
import type { KineticTier } from './kinetic.js'
import { adapterGeneration, adapterRolled } from './adapter.js'
import { releasedImage, serveNodeScript } from './cluster-ip.js'

const run = promisify(execFile)
const MODEL_NS = 'model-stand-in'
const KEY = 'sk-ant-stand-in-knative'

/** Registers the test; `tier()` is called once it runs (after Kinetic's install test). */
export function purkoOnKinetic(tier: () => KineticTier): void {
  it('runs purko\'s examples on real Pods: every example Workflow Succeeded through the anthropic provider, the approval granted with the CLI', async () => {
    const { admin, kubeconfig } = tier()
    // purko's code-executor Agent runs its steps in `runtime.image: localhost/purko-executor:codeact`,
    // an executor image its users build themselves. Here that image is Kinetic's executor image
    // (the entrypoint is the executor, and the step contract is the same), built the same way and
    // pushed under that name; the node pulls `localhost/<repo>` from its registry.
    const base = (await run(process.execPath, [join(REPO_ROOT, 'scripts', 'build-base-image.mjs'), '--to', `${tier().registry}/kinetic-base`, '--insecure'], { cwd: REPO_ROOT })).stdout.trim()
    await run(process.execPath, [join(REPO_ROOT, 'scripts', 'build-image.mjs'), '--base', base, '--to', `${tier().registry}/purko-executor:codeact`, '--dist', join(tier().work, 'dist'), '--insecure'], { cwd: REPO_ROOT })
    const generation = await adapterGeneration(admin)
    const standIn = await serveNodeScript(admin, {
      namespace: MODEL_NS, name: 'anthropic', image: await releasedImage(admin), script: STAND_IN_SCRIPT,
      env: [{ name: 'KEY', value: KEY }], readyPath: '/requests',
    })
    // The stand-in's namespace rolled the receive adapter: purko's objects come after the new one watches.
    await adapterRolled(admin, generation)
    // knowledge-retriever's vector memory is the example's PersistentVolumeClaim; this node has no
    // provisioner, so a volume is made for that claim, as a platform team's storage class would.
    await admin.apply({
      apiVersion: 'v1', kind: 'PersistentVolume', metadata: { name: 'knowledge-retriever-memory' },
      spec: {
        capacity: { storage: '1Gi' }, accessModes: ['ReadWriteOnce'], storageClassName: '',
        hostPath: { path: `${tier().work}/knowledge-retriever-memory`, type: 'DirectoryOrCreate' },
        claimRef: { namespace: AGENTS_NS, name: 'knowledge-retriever-memory' },
      },
    })

    const runs = await purkoRunsOn({
      kubeconfig,
      get: (path) => admin.get(path),
      apply: (obj) => admin.apply(obj, AGENTS_NS),
      endpoint: `http://anthropic.${MODEL_NS}.svc.cluster.local/v1`,
      key: KEY,
      requests: () => standIn.get('/requests') as Promise<SeenRequest[]>,
      ms: 900_000,
    })
    console.log(`kinetic: purko's examples on real Pods: ${runs.finals.size} Workflows, ${runs.requests.length} step Jobs, approvals ${runs.approved.join(', ')}`)
    expectPurkoRuns(runs)
  }, 1_200_000)
}

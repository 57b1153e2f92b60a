import { readdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { afterAll, beforeAll, expect, it } from 'vitest'
import { parseAllDocuments } from 'yaml'
import { startApiServer, type ApiServer } from '../../local/apiserver/index.js'
import { KubeHttp, KubeHttpError } from '../../local/knative/kube-http.js'
import { referenceDir } from '../support/reference.js'
import { ADVICE, CEL_COST_CASES, celCostCrd, type ExpectedCause } from './cel-cost-corpus.js'
import { describeCluster, useControlPlane } from './tier.js'

/** What a client sees of a CRD creation: the status code and, on failure, the Status. */
interface Verdict {
  code: number
  reason?: string
  message?: string
  causes: ExpectedCause[]
}

async function createDryRun(client: KubeHttp, crd: unknown): Promise<Verdict> {
  try {
    await client.request('POST', '/apis/apiextensions.k8s.io/v1/customresourcedefinitions?dryRun=All', crd)
    return { code: 201, causes: [] }
  } catch (err) {
    if (!(err instanceof KubeHttpError)) throw err
    const body = err.body as { reason?: string; message?: string; details?: { causes?: ExpectedCause[] } }
    return { code: err.status, ...(body.reason ? { reason: body.reason } : {}), ...(body.message ? { message: body.message } : {}), causes: body.details?.causes ?? [] }
  }
}

const line = (c: ExpectedCause) => `${c.field}: ${c.message}`
const asSet = (causes: ExpectedCause[]) => causes.map((c) => `${c.reason} ${line(c)}`).sort()
const aggregate = (name: string, causes: ExpectedCause[]) => {
  const listed = causes.map(line)
  return `CustomResourceDefinition.apiextensions.k8s.io "${name}" is invalid: ${listed.length === 1 ? listed[0] : `[${listed.join(', ')}]`}`
}
// On a mismatch, the real verdict in corpus syntax, ready to record.
const recordable = (causes: ExpectedCause[]) => JSON.stringify(causes.map((c) => ({ ...c, message: c.message.replace(ADVICE, '${ADVICE}') })), null, 2)

describeCluster('CEL cost budget: kube-apiserver v1.34 and the embedded API server give every CRD the same verdict', () => {
  const cp = useControlPlane()
  let local: ApiServer
  let localClient: KubeHttp
  beforeAll(async () => {
    local = await startApiServer()
    localClient = new KubeHttp(local.kubeConfigObject())
  })
  afterAll(() => local?.close())

  it.each(CEL_COST_CASES.map((c, i) => [c.name, c, i] as const))('%s', async (_, c, i) => {
    const crd = celCostCrd(c, i)
    const real = await createDryRun(cp.current.admin, crd)
    expect(asSet(real.causes), `the real server's verdict changed; it now is ${recordable(real.causes)}`).toEqual(asSet(c.expected))
    const mine = await createDryRun(localClient, crd)
    expect({ code: mine.code, reason: mine.reason }).toEqual({ code: real.code, reason: real.reason })
    expect(asSet(mine.causes)).toEqual(asSet(real.causes))
    // Both list the same causes in their message, each in the order of its own causes.
    if (real.code !== 201) {
      expect(real.message).toBe(aggregate(crd.metadata.name, real.causes))
      expect(mine.message).toBe(aggregate(crd.metadata.name, mine.causes))
    }
  })

  const here = fileURLToPath(new URL('.', import.meta.url))
  const folders = [join(here, '..', '..', 'crds'), join(referenceDir(), 'purko', 'crds'), join(referenceDir(), 'knative', 'crds')]
  const shipped = folders.flatMap((dir) => readdirSync(dir).filter((f) => f.endsWith('.yaml')).flatMap((f) =>
    parseAllDocuments(readFileSync(join(dir, f), 'utf8')).map((d) => d.toJS() as { kind?: string; metadata: { name: string } })
      .filter((o) => o?.kind === 'CustomResourceDefinition').map((o) => [`${dir.split('/').slice(-2).join('/')}/${f}: ${o.metadata.name}`, o] as const)))

  it('finds the CRDs Kinetic ships and those of purko and Knative', () => {
    expect(shipped.length).toBeGreaterThanOrEqual(17)
  })

  it.each(shipped)('%s gets the same verdict from both servers', async (_, crd) => {
    const real = await createDryRun(cp.current.admin, crd)
    const mine = await createDryRun(localClient, crd)
    expect({ code: mine.code, reason: mine.reason, causes: asSet(mine.causes) }).toEqual({ code: real.code, reason: real.reason, causes: asSet(real.causes) })
  })
})

// The CRDs installed the two ways people do it, with the real kubectl against a real API server:
// `kubectl apply -f crds/` (by habit) and `kubectl apply -k crds/` (as knative/'s `../crds` does).
import { expect, it } from 'vitest'
import { allCrds } from '../../shared/crd/definitions.js'
import { ROOT } from '../knative/manifests.js'
import { kubectl } from './kubectl-run.js'
import { describeCluster, useControlPlane } from './tier.js'

const NAMES = allCrds().map((c) => c.metadata.name).sort()

describeCluster('the CRDs of crds/ with the real kubectl', () => {
  const cp = useControlPlane()
  const run = (...args: string[]) => kubectl(cp.current.adminKubeconfigPath, args, ROOT)
  const installed = () => run('get', 'crd', '-o', 'name').stdout.split('\n').filter((l) => l.endsWith('.purko.io')).map((l) => l.replace('customresourcedefinition.apiextensions.k8s.io/', '')).sort()

  it('`kubectl apply -f crds/` creates every CRD and nothing else, without an error', () => {
    const applied = run('apply', '-f', 'crds/')
    expect(applied.stderr).toBe('')
    expect(applied.status).toBe(0)
    expect(applied.stdout.trim().split('\n').sort()).toEqual(NAMES.map((n) => `customresourcedefinition.apiextensions.k8s.io/${n} created`))
    expect(installed()).toEqual(NAMES)
  }, 60_000)

  it('`kubectl apply -k crds/` applies the same CRDs (unchanged after -f), and knative/ renders them through ../crds', () => {
    const applied = run('apply', '-k', 'crds/')
    expect(applied.stderr).toBe('')
    expect(applied.status).toBe(0)
    expect(applied.stdout.trim().split('\n').sort()).toEqual(NAMES.map((n) => `customresourcedefinition.apiextensions.k8s.io/${n} unchanged`))
    const knative = run('kustomize', 'knative/')
    expect(knative.status).toBe(0)
    const crdsInKnative = [...knative.stdout.matchAll(/^kind: CustomResourceDefinition\nmetadata:\n(?:  .*\n)*?  name: (\S+)$/gm)].map((m) => m[1]).sort()
    expect(crdsInKnative).toEqual(NAMES)
  }, 60_000)
})

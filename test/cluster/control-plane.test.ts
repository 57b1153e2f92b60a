import { spawn } from 'node:child_process'
import { mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs'
import { createServer } from 'node:net'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { expect, it } from 'vitest'
import { KubeHttp, KubeHttpError } from '../../local/knative/kube-http.js'
import { startControlPlane } from '../../cluster/control-plane.js'
import { ControlPlaneError, processesUsing } from '../../cluster/processes.js'
import { KUBE_VERSIONS } from '../../cluster/versions.mjs'
import { eventually } from '../support/eventually.js'
import { describeCluster, kubeBinDir, useControlPlane } from './tier.js'

const here = dirname(fileURLToPath(import.meta.url))
const binDir = kubeBinDir


describeCluster('the cluster test tier (real kube-apiserver v1.34 and kube-controller-manager)', () => {
  const cp = useControlPlane({ controllerManager: true })

  it('serves the real Kubernetes API with an admin identity', async () => {
    const version = await cp.current.admin.request<{ gitVersion: string }>('GET', '/version')
    // The version cluster/build.mjs stamps with -ldflags -X, as upstream's build does.
    expect(version.gitVersion).toBe(KUBE_VERSIONS.kubernetes)
    const ns = await cp.current.admin.request('POST', '/api/v1/namespaces', { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'tier-admin' } })
    expect(ns.metadata?.uid).toBeTruthy()
  })

  it('hands out ServiceAccount kubeconfigs that RBAC really applies to', async () => {
    const { kubeConfig } = await cp.current.serviceAccountKubeconfig('tier-rbac', 'reader')
    const asReader = new KubeHttp(kubeConfig)
    const denied = await asReader.request('GET', '/api/v1/namespaces/tier-rbac/configmaps').catch((e: unknown) => e)
    expect(denied).toBeInstanceOf(KubeHttpError)
    expect((denied as KubeHttpError).status).toBe(403)
    expect((denied as KubeHttpError).message).toContain('system:serviceaccount:tier-rbac:reader')

    await cp.current.admin.request('POST', '/apis/rbac.authorization.k8s.io/v1/namespaces/tier-rbac/roles', {
      apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'Role', metadata: { name: 'read-configmaps' },
      rules: [{ apiGroups: [''], resources: ['configmaps'], verbs: ['list'] }],
    })
    await cp.current.admin.request('POST', '/apis/rbac.authorization.k8s.io/v1/namespaces/tier-rbac/rolebindings', {
      apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'RoleBinding', metadata: { name: 'reader' },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'read-configmaps' },
      subjects: [{ kind: 'ServiceAccount', name: 'reader', namespace: 'tier-rbac' }],
    })
    await cp.current.admin.request('POST', '/api/v1/namespaces/tier-rbac/configmaps', { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'seen' } })
    const list = await asReader.request<{ items: Array<{ metadata: { name: string } }> }>('GET', '/api/v1/namespaces/tier-rbac/configmaps')
    expect(list.items.map((c) => c.metadata.name)).toContain('seen')
    // list only: the binding grants nothing else.
    const write = await asReader.request('POST', '/api/v1/namespaces/tier-rbac/configmaps', { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'x' } }).catch((e: unknown) => e)
    expect((write as KubeHttpError).status).toBe(403)
  })

  it('runs the controller manager: a Job gets its Pod from the real Job controller', async () => {
    const admin = cp.current.admin
    await admin.request('POST', '/api/v1/namespaces', { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'tier-jobs' } })
    await admin.request('POST', '/apis/batch/v1/namespaces/tier-jobs/jobs', {
      apiVersion: 'batch/v1', kind: 'Job', metadata: { name: 'hello' },
      spec: { template: { spec: { restartPolicy: 'Never', containers: [{ name: 'main', image: 'busybox' }] } } },
    })
    let pods: Array<{ metadata: { labels: Record<string, string> } }> = []
    const deadline = Date.now() + 30_000
    while (pods.length === 0 && Date.now() < deadline) {
      pods = (await admin.request<{ items: typeof pods }>('GET', '/api/v1/namespaces/tier-jobs/pods')).items
      if (pods.length === 0) await new Promise((r) => setTimeout(r, 250))
    }
    expect(pods).toHaveLength(1)
    expect(pods[0]?.metadata.labels['job-name']).toBe('hello')
  })
})

describeCluster('the cluster test tier fails clearly and leaves nothing behind', () => {
  it('stops exactly what it started and removes its folder', async () => {
    const cp = await startControlPlane({ binDir: binDir() })
    expect(processesUsing(cp.dir).length).toBeGreaterThanOrEqual(2)
    await cp.stop()
    expect(processesUsing(cp.dir)).toEqual([])
  }, 90_000)

  it('names the missing binary of an incomplete folder', async () => {
    const partial = mkdtempSync(join(tmpdir(), 'kinetic-partial-bin-'))
    try {
      symlinkSync(join(binDir(), 'etcd'), join(partial, 'etcd'))
      const err = await startControlPlane({ binDir: partial }).catch((e: unknown) => e)
      expect(err).toBeInstanceOf(ControlPlaneError)
      expect((err as Error).message).toBe(`kube-apiserver is missing from ${partial}`)
    } finally {
      rmSync(partial, { recursive: true, force: true })
    }
  })

  it('gives up on a component that is not ready in time, naming it and quoting its log', async () => {
    // An API server that starts but never becomes ready.
    const stuck = mkdtempSync(join(tmpdir(), 'kinetic-stuck-bin-'))
    try {
      for (const b of ['etcd', 'kube-controller-manager']) symlinkSync(join(binDir(), b), join(stuck, b))
      writeFileSync(join(stuck, 'kube-apiserver'), `#!${process.execPath}\nconsole.error('waiting for nothing')\nsetInterval(() => {}, 1000)\n`, { mode: 0o755 })
      const err = await startControlPlane({ binDir: stuck, readyTimeoutMs: 5_000 }).catch((e: unknown) => e)
      expect(err).toBeInstanceOf(ControlPlaneError)
      expect((err as Error).message).toMatch(/^kube-apiserver was not ready within 5 s \(https:\/\/127\.0\.0\.1:\d+\/readyz\); last lines of (\S+)\/logs\/kube-apiserver\.log:\nwaiting for nothing$/)
      const dir = /of (\S+)\/logs\/kube-apiserver\.log/.exec((err as Error).message)?.[1] as string
      expect(processesUsing(dir)).toEqual([])
    } finally {
      rmSync(stuck, { recursive: true, force: true })
    }
  }, 90_000)

  it('reports a port in use with the API server log tail, and stops etcd again', async () => {
    const blocker = createServer()
    await new Promise<void>((r) => blocker.listen(0, '127.0.0.1', r))
    const port = (blocker.address() as { port: number }).port
    try {
      const err = await startControlPlane({ binDir: binDir(), apiServerPort: port }).catch((e: unknown) => e)
      expect(err).toBeInstanceOf(ControlPlaneError)
      expect((err as Error).message).toMatch(/kube-apiserver exited .* before/)
      expect((err as Error).message).toMatch(/address already in use/)
      const dir = /of (\S+)\/logs\/kube-apiserver\.log/.exec((err as Error).message)?.[1] as string
      expect(processesUsing(dir)).toEqual([])
    } finally {
      blocker.close()
    }
  }, 90_000)

  it('stops the servers by itself when the test process is killed', async () => {
    const child = spawn(process.execPath, ['--import', 'tsx', join(here, 'fixtures', 'start-and-hang.ts'), binDir()], { stdio: ['ignore', 'pipe', 'inherit'] })
    const dir = await new Promise<string>((resolve, reject) => {
      let out = ''
      child.stdout.on('data', (c: Buffer) => {
        out += c.toString()
        if (out.includes('\n')) resolve(out.trim())
      })
      child.once('exit', (code) => reject(new Error(`start-and-hang exited ${code} before it was ready`)))
    })
    expect(processesUsing(dir).length).toBeGreaterThanOrEqual(2)
    child.kill('SIGKILL')
    await eventually('the servers to stop', () => processesUsing(dir).length === 0, 20_000)
    rmSync(dir, { recursive: true, force: true })
  }, 90_000)
})

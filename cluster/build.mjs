#!/usr/bin/env node
// Builds the Kubernetes control plane, the node's Kubernetes parts, etcd and CoreDNS from the Go
// module registry, as an ordinary Go consumer of each module: a small module of ours that
// requires the upstream module by version, and for k8s.io/kubernetes pins each of its staging
// modules to the matching v0.x.y with `replace` (the published module leaves them out). The
// version is stamped with -ldflags -X as upstream's build does. Output goes to a cache outside
// the clone, keyed by versions, so a second run takes seconds:
//   ${XDG_CACHE_HOME:-$HOME/.cache}/kinetic/kube/<kube>-etcd<etcd>-coredns<coredns>/bin
// Usage: npm run cluster:build [-- --only control-plane]
import { mkdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { readOptions } from '../scripts/script-cli.mjs'
import { goModDownload, goModuleBuild, isExecutable, takeLock } from './go-build.mjs'
import { KUBE_VERSIONS, kubeCacheDir, CONTROL_PLANE_BINARIES, NODE_BINARIES } from './versions.mjs'

const USAGE = `usage: npm run cluster:build [-- --only control-plane|all]
Builds etcd, kube-apiserver, kube-controller-manager, kube-scheduler, kubelet, kube-proxy,
kubectl and coredns from the Go module registry into
  ${kubeCacheDir()}/bin
and prints that folder. A second run reuses what is there.`

function main(argv) {
  const parsed = readOptions(argv, { only: { type: 'string', default: 'all' } }, USAGE)
  if (parsed.exit !== undefined) return parsed.exit
  const wanted = parsed.values.only === 'control-plane' ? CONTROL_PLANE_BINARIES : [...CONTROL_PLANE_BINARIES, ...NODE_BINARIES]
  const root = kubeCacheDir()
  const bin = join(root, 'bin')
  const logs = join(root, 'logs')
  mkdirSync(bin, { recursive: true })
  mkdirSync(logs, { recursive: true })
  const release = takeLock(join(root, 'build.lock'))
  try {
    const started = Date.now()
    for (const group of buildGroups()) {
      const missing = group.binaries.filter((b) => wanted.includes(b) && !isExecutable(join(bin, b)))
      if (missing.length === 0) continue
      const t0 = Date.now()
      const log = join(logs, `${group.name}.log`)
      process.stderr.write(`kube-build: building ${missing.join(', ')} (${group.module}@${group.version}); log: ${log}\n`)
      const failure = group.build({ root, bin, log, binaries: missing })
      if (failure) {
        process.stderr.write(`kube-build: ${group.name} failed: ${failure} (log: ${log})\n`)
        return 1
      }
      process.stderr.write(`kube-build: ${missing.join(', ')} built in ${((Date.now() - t0) / 1000).toFixed(0)} s\n`)
    }
    const absent = wanted.filter((b) => !isExecutable(join(bin, b)))
    if (absent.length > 0) {
      process.stderr.write(`kube-build: ${absent.join(', ')} missing after the build (logs: ${logs})\n`)
      return 1
    }
    process.stderr.write(`kube-build: ready in ${((Date.now() - started) / 1000).toFixed(1)} s\n`)
    process.stdout.write(`${bin}\n`)
    return 0
  } finally {
    release()
  }
}

/** The three Go modules of ours, each building one upstream module's commands. */
function buildGroups() {
  const v = KUBE_VERSIONS
  return [
    {
      name: 'etcd',
      module: 'go.etcd.io/etcd/server/v3',
      version: v.etcd,
      binaries: ['etcd'],
      build: (ctx) =>
        goModuleBuild(ctx, {
          dir: 'etcd',
          goMod: `module kinetic.local/etcd\n\ngo 1.24\n\nrequire go.etcd.io/etcd/server/v3 ${v.etcd}\n`,
          files: { 'main.go': ETCD_MAIN },
          packages: [{ pkg: '.', out: 'etcd' }],
          ldflags: '-s -w',
        }),
    },
    {
      name: 'kubernetes',
      module: 'k8s.io/kubernetes',
      version: v.kubernetes,
      binaries: [...CONTROL_PLANE_BINARIES, ...NODE_BINARIES].filter((b) => b.startsWith('kube')),
      build: (ctx) => buildKubernetes(ctx),
    },
    {
      name: 'coredns',
      module: 'github.com/coredns/coredns',
      version: v.coredns,
      binaries: ['coredns'],
      build: (ctx) =>
        goModuleBuild(ctx, {
          dir: 'coredns',
          goMod: null,
          upstream: { module: 'github.com/coredns/coredns', version: v.coredns },
          files: { 'tools.go': '//go:build tools\n\npackage tools\n\nimport _ "github.com/coredns/coredns"\n' },
          packages: [{ pkg: 'github.com/coredns/coredns', out: 'coredns' }],
          ldflags: '-s -w',
        }),
    },
  ]
}

const ETCD_MAIN = `// The etcd server, as etcd's own main package starts it.
package main

import (
\t"os"

\t"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() { etcdmain.Main(os.Args) }
`

function buildKubernetes(ctx) {
  const v = KUBE_VERSIONS.kubernetes
  const [major, minor, patch] = v.slice(1).split('.')
  const staging = `v0.${minor}.${patch}`
  const upstream = goModDownload(ctx, 'k8s.io/kubernetes', v)
  if (upstream.error) return upstream.error
  const upstreamMod = readFileSync(upstream.GoMod, 'utf8')
  // Each `k8s.io/x => ./staging/src/k8s.io/x` becomes `k8s.io/x => k8s.io/x v0.<minor>.<patch>`.
  const stagingModules = [...upstreamMod.matchAll(/^\s*(k8s\.io\/[\w.-]+)\s+=>\s+\.\/staging\/src\/\1\s*$/gm)].map((m) => m[1])
  if (stagingModules.length === 0) return `no staging modules found in k8s.io/kubernetes@${v}'s go.mod`
  const goLine = /^go\s+(\S+)$/m.exec(upstreamMod)?.[1] ?? '1.24.0'
  const godebug = [...upstreamMod.matchAll(/^godebug\s+.*$/gm)].map((m) => m[0]).join('\n')
  const goMod = [
    'module kinetic.local/kubernetes',
    '',
    `go ${goLine}`,
    godebug,
    '',
    `require k8s.io/kubernetes ${v}`,
    '',
    'replace (',
    ...stagingModules.map((m) => `\t${m} => ${m} ${staging}`),
    ')',
    '',
  ].join('\n')
  const commands = ctx.binaries
  const tools = ['//go:build tools', '', 'package tools', '', 'import (', ...commands.map((c) => `\t_ "k8s.io/kubernetes/cmd/${c}"`), ')', ''].join('\n')
  const buildDate = '1970-01-01T00:00:00Z'
  const stamp = (pkg) =>
    [
      `-X ${pkg}.gitVersion=${v}`,
      `-X ${pkg}.gitMajor=${major}`,
      `-X ${pkg}.gitMinor=${minor}`,
      `-X ${pkg}.gitTreeState=clean`,
      `-X ${pkg}.buildDate=${buildDate}`,
    ].join(' ')
  return goModuleBuild(ctx, {
    dir: 'kubernetes',
    goMod,
    files: { 'tools.go': tools },
    packages: commands.map((c) => ({ pkg: `k8s.io/kubernetes/cmd/${c}`, out: c })),
    ldflags: `-s -w ${stamp('k8s.io/component-base/version')} ${stamp('k8s.io/client-go/pkg/version')}`,
  })
}

process.exitCode = main(process.argv.slice(2))

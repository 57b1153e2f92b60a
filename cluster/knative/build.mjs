#!/usr/bin/env node
// Builds Knative Serving's and Eventing's commands, and `kn`, from the Go module registry, each as
// an ordinary Go consumer does: a small module of ours that requires knative.dev/serving (or
// knative.dev/eventing, knative.dev/client) by version and builds its cmd packages. Each is a
// module of ours, so each resolves its dependencies as its own release does. Output goes to
// caches outside the clone, keyed by versions:
//   ${XDG_CACHE_HOME:-$HOME/.cache}/kinetic/knative/serving<v>-eventing<v>/bin
//   ${XDG_CACHE_HOME:-$HOME/.cache}/kinetic/kn/<v>/bin/kn
// Usage: npm run knative:build
import { mkdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { readOptions } from '../../scripts/script-cli.mjs'
import { goModDownload, goModuleBuild, isExecutable, takeLock } from '../go-build.mjs'
import { KNATIVE_COMMANDS, KNATIVE_VERSIONS, KN_PACKAGE, KN_VERSION, knCacheDir, knativeCacheDir } from '../versions.mjs'

const USAGE = `usage: npm run knative:build
Builds Knative Serving ${KNATIVE_VERSIONS.serving} and Eventing ${KNATIVE_VERSIONS.eventing} commands from the Go module
registry into
  ${knativeCacheDir()}/bin
and kn (knative.dev/client ${KN_VERSION}) into
  ${knCacheDir()}/bin
and prints the first folder. A second run reuses what is there.`

function main(argv) {
  const parsed = readOptions(argv, {}, USAGE)
  if (parsed.exit !== undefined) return parsed.exit
  const root = knativeCacheDir()
  const bin = join(root, 'bin')
  const logs = join(root, 'logs')
  mkdirSync(join(root, 'src'), { recursive: true })
  mkdirSync(bin, { recursive: true })
  mkdirSync(logs, { recursive: true })
  const started = Date.now()
  const release = takeLock(join(root, 'build.lock'))
  try {
    for (const part of /** @type {const} */ (['serving', 'eventing'])) {
      const commands = KNATIVE_COMMANDS[part]
      const missing = commands.filter((c) => !isExecutable(join(bin, c.name)))
      if (missing.length === 0) continue
      const module = `knative.dev/${part}`
      const version = KNATIVE_VERSIONS[part]
      const log = join(logs, `${part}.log`)
      const t0 = Date.now()
      process.stderr.write(`knative-build: building ${missing.map((c) => c.name).join(', ')} (${module}@${version}); log: ${log}\n`)
      const failure = buildModule({ root, bin, log }, `kinetic.local/knative-${part}`, module, version, part, missing, '-s -w')
      if (failure) {
        process.stderr.write(`knative-build: ${module}@${version} failed: ${failure} (log: ${log})\n`)
        return 1
      }
      process.stderr.write(`knative-build: ${part} built in ${((Date.now() - t0) / 1000).toFixed(0)} s\n`)
    }
    const absent = [...KNATIVE_COMMANDS.serving, ...KNATIVE_COMMANDS.eventing].filter((c) => !isExecutable(join(bin, c.name)))
    if (absent.length > 0) {
      process.stderr.write(`knative-build: ${absent.map((c) => c.name).join(', ')} missing after the build (logs: ${logs})\n`)
      return 1
    }
  } finally {
    release()
  }
  if (buildKn() !== 0) return 1
  process.stderr.write(`knative-build: ready in ${((Date.now() - started) / 1000).toFixed(1)} s\n`)
  process.stdout.write(`${bin}\n`)
  return 0
}

/** kn into its own cache (keyed by its version, own lock and log); 0 when it is there. */
function buildKn() {
  const root = knCacheDir()
  const bin = join(root, 'bin')
  if (isExecutable(join(bin, 'kn'))) return 0
  const logs = join(root, 'logs')
  mkdirSync(join(root, 'src'), { recursive: true })
  mkdirSync(bin, { recursive: true })
  mkdirSync(logs, { recursive: true })
  const release = takeLock(join(root, 'build.lock'))
  try {
    if (isExecutable(join(bin, 'kn'))) return 0
    const module = 'knative.dev/client'
    const log = join(logs, 'kn.log')
    const t0 = Date.now()
    process.stderr.write(`knative-build: building kn (${module}@${KN_VERSION}); log: ${log}\n`)
    const failure = buildModule({ root, bin, log }, 'kinetic.local/kn', module, KN_VERSION, 'kn', [{ pkg: KN_PACKAGE, name: 'kn' }],
      // What kn's own release stamps, so `kn version` names it.
      `-s -w -X knative.dev/client/pkg/kn/commands/version.Version=${KN_VERSION}`)
    if (failure) {
      process.stderr.write(`knative-build: ${module}@${KN_VERSION} failed: ${failure} (log: ${log})\n`)
      return 1
    }
    process.stderr.write(`knative-build: kn built in ${((Date.now() - t0) / 1000).toFixed(0)} s\n`)
    return 0
  } finally {
    release()
  }
}

/** Our module `ours` requiring `module@version`, its `commands` built into ctx.bin; an error line, or undefined. */
function buildModule(ctx, ours, module, version, part, commands, ldflags) {
  const upstream = goModDownload(ctx, module, version)
  if (upstream.error) return `download: ${upstream.error}`
  const upstreamMod = readFileSync(upstream.GoMod, 'utf8')
  // Our module must be at least upstream's Go line, or `go mod tidy` refuses its requirements.
  const goLine = /^go\s+(\S+)$/m.exec(upstreamMod)?.[1] ?? '1.25.0'
  const tools = ['//go:build tools', '', 'package tools', '', 'import (', ...commands.map((c) => `\t_ "${c.pkg}"`), ')', ''].join('\n')
  return goModuleBuild(ctx, {
    dir: part,
    goMod: `module ${ours}\n\ngo ${goLine}\n\nrequire ${module} ${version}\n`,
    files: { 'tools.go': tools },
    packages: commands.map((c) => ({ pkg: c.pkg, out: c.name })),
    ldflags,
  })
}

process.exitCode = main(process.argv.slice(2))

#!/usr/bin/env node
// Builds the OpenTelemetry Collector the telemetry tests start: a small Go module of ours
// (cluster/otelcol/main.go, the collector's main written by us) that requires the collector's
// modules by version and builds one binary with the OTLP receiver, the debug exporter and an
// exporter of ours that writes OTLP JSON lines to a file. The contrib file exporter is not used:
// its module needs github.com/open-telemetry/opentelemetry-collector-contrib/extension/encoding/
// otlpencodingextension, which the registry refuses (403 Forbidden, "This module version is not
// available") at v0.165.0 and at its neighbours v0.164.0 and v0.166.0. Output goes to a cache outside the clone, keyed by version:
//   ${XDG_CACHE_HOME:-$HOME/.cache}/kinetic/otelcol/<version>/bin/kinetic-otelcol
// Usage: npm run otelcol:build
import { mkdirSync, readFileSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { readOptions } from '../../scripts/script-cli.mjs'
import { goModuleBuild, isExecutable, takeLock } from '../go-build.mjs'
import { OTELCOL_BINARY, OTELCOL_VERSIONS, otelcolCacheDir } from '../versions.mjs'

const USAGE = `usage: npm run otelcol:build
Builds the OpenTelemetry Collector ${OTELCOL_VERSIONS.core} (OTLP receiver, debug exporter, a JSON file exporter of ours)
from the Go module registry into
  ${otelcolCacheDir()}/bin
and prints the binary's path. A second run reuses what is there.`

const { core, stable } = OTELCOL_VERSIONS

// What main.go imports; `go mod tidy` resolves the rest at the versions these require.
const REQUIRES = [
  ['go.opentelemetry.io/collector/otelcol', core],
  ['go.opentelemetry.io/collector/service', core],
  ['go.opentelemetry.io/collector/receiver/otlpreceiver', core],
  ['go.opentelemetry.io/collector/exporter/debugexporter', core],
  ['go.opentelemetry.io/collector/exporter/exporterhelper', core],
  ['go.opentelemetry.io/collector/component', stable],
  ['go.opentelemetry.io/collector/confmap', stable],
  ['go.opentelemetry.io/collector/confmap/provider/envprovider', stable],
  ['go.opentelemetry.io/collector/confmap/provider/fileprovider', stable],
  ['go.opentelemetry.io/collector/exporter', stable],
  ['go.opentelemetry.io/collector/pdata', stable],
  ['go.opentelemetry.io/collector/receiver', stable],
]

function main(argv) {
  const parsed = readOptions(argv, {}, USAGE)
  if (parsed.exit !== undefined) return parsed.exit
  const root = otelcolCacheDir()
  const bin = join(root, 'bin')
  const logs = join(root, 'logs')
  for (const dir of [join(root, 'src'), bin, logs]) mkdirSync(dir, { recursive: true })
  const binary = join(bin, OTELCOL_BINARY)
  const release = takeLock(join(root, 'build.lock'))
  try {
    if (!isExecutable(binary)) {
      const log = join(logs, 'otelcol.log')
      const t0 = Date.now()
      process.stderr.write(`otelcol-build: building ${OTELCOL_BINARY} (collector ${core}, ${stable}); log: ${log}\n`)
      const mainGo = readFileSync(join(dirname(fileURLToPath(import.meta.url)), 'main.go'), 'utf8')
      const goMod = `module kinetic.local/otelcol\n\ngo 1.26.0\n\nrequire (\n${REQUIRES.map(([m, v]) => `\t${m} ${v}\n`).join('')})\n`
      const failure = goModuleBuild({ root, bin, log }, {
        dir: 'otelcol',
        goMod,
        files: { 'main.go': mainGo },
        packages: [{ pkg: '.', out: OTELCOL_BINARY }],
        ldflags: '-s -w',
      })
      if (failure) {
        process.stderr.write(`otelcol-build: failed: ${failure} (log: ${log})\n`)
        return 1
      }
      process.stderr.write(`otelcol-build: built in ${((Date.now() - t0) / 1000).toFixed(0)} s\n`)
    }
    process.stdout.write(`${binary}\n`)
    return 0
  } finally {
    release()
  }
}

process.exitCode = main(process.argv.slice(2))

#!/usr/bin/env node
// Runs a command under another Node.js major version, for proving Kinetic on every Node it
// supports (20, 22 and 24): `node scripts/with-node.mjs 22 -- npm run -s test:unit`. The Node
// binary comes from the npm registry's per-platform package (`node-<platform>-<arch>`, the newest
// of that major), unpacked once into ${XDG_CACHE_HOME:-~/.cache}/kinetic/node/<version>; the
// command runs with that `node` first on PATH.
import { spawnSync } from 'node:child_process'
import { existsSync, mkdirSync, renameSync, rmSync } from 'node:fs'
import { homedir } from 'node:os'
import { join } from 'node:path'

const USAGE = 'usage: node scripts/with-node.mjs <major> -- <command> [args...]'

function fail(message) {
  console.error(`with-node: ${message}`)
  process.exit(2)
}

const [major, separator, ...command] = process.argv.slice(2)
if (!/^\d+$/.test(major ?? '') || separator !== '--' || command.length === 0) fail(USAGE)

const pkg = `node-${process.platform}-${process.arch}`
const npm = process.platform === 'win32' ? 'npm.cmd' : 'npm'
const view = spawnSync(npm, ['view', `${pkg}@${major}`, 'version', '--json'], { encoding: 'utf8' })
if (view.status !== 0) fail(`npm view ${pkg}@${major}: ${(view.stderr || '').trim().split('\n').pop()}`)
const versions = [].concat(JSON.parse(view.stdout))
const version = versions[versions.length - 1]
if (!version) fail(`the registry has no ${pkg}@${major}`)

const cache = join(process.env.XDG_CACHE_HOME || join(homedir(), '.cache'), 'kinetic', 'node', version)
const bin = join(cache, 'package', 'bin')
if (!existsSync(join(bin, 'node'))) {
  const scratch = `${cache}.partial`
  rmSync(scratch, { recursive: true, force: true })
  mkdirSync(scratch, { recursive: true })
  const pack = spawnSync(npm, ['pack', `${pkg}@${version}`, '--silent'], { cwd: scratch, encoding: 'utf8' })
  if (pack.status !== 0) fail(`npm pack ${pkg}@${version}: ${(pack.stderr || '').trim().split('\n').pop()}`)
  const tarball = pack.stdout.trim().split('\n').pop()
  const untar = spawnSync('tar', ['xzf', tarball], { cwd: scratch, encoding: 'utf8' })
  if (untar.status !== 0) fail(`tar xzf ${tarball}: ${untar.stderr.trim()}`)
  rmSync(join(scratch, tarball))
  rmSync(cache, { recursive: true, force: true })
  renameSync(scratch, cache)
}

const env = { ...process.env, PATH: `${bin}${process.platform === 'win32' ? ';' : ':'}${process.env.PATH ?? ''}` }
console.error(`with-node: Node.js ${version} (${pkg}): ${command.join(' ')}`)
const result = spawnSync(command[0], command.slice(1), { stdio: 'inherit', env })
process.exit(result.status ?? 1)

// What the Go builds of cluster/ share (cluster/build.mjs, cluster/knative/build.mjs): a small Go
// module of ours that requires an upstream module by version, built into a cache folder with
// CGO off and the local toolchain, every step's output appended to a log, and a lock folder so
// two builds never write the same cache at once.
import { spawnSync } from 'node:child_process'
import { existsSync, mkdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'

/**
 * Writes a module of ours (go.mod, a Go file naming what it builds), resolves it with
 * `go mod tidy`, then builds each package into the cache. Returns an error line, or undefined.
 */
export function goModuleBuild(ctx, spec) {
  const dir = join(ctx.root, 'src', spec.dir)
  mkdirSync(dir, { recursive: true })
  let goMod = spec.goMod
  if (goMod === null) {
    // A module whose own go.mod has no replace: required by version, nothing more.
    goMod = `module kinetic.local/${spec.dir}\n\ngo 1.24\n\nrequire ${spec.upstream.module} ${spec.upstream.version}\n`
  }
  writeFileSync(join(dir, 'go.mod'), goMod)
  for (const [name, text] of Object.entries(spec.files)) writeFileSync(join(dir, name), text)
  const env = { ...process.env, CGO_ENABLED: '0', GOFLAGS: '-mod=mod', GOTOOLCHAIN: 'local' }
  const tidy = run(ctx.log, 'go', ['mod', 'tidy'], { cwd: dir, env })
  if (tidy) return `go mod tidy: ${tidy}`
  const out = join(ctx.bin, '.partial')
  rmSync(out, { recursive: true, force: true })
  mkdirSync(out, { recursive: true })
  const pkgs = spec.packages.map((p) => p.pkg)
  const failed = run(ctx.log, 'go', ['build', '-trimpath', '-ldflags', spec.ldflags, '-o', `${out}/`, ...pkgs], { cwd: dir, env })
  if (failed) return `go build: ${failed}`
  for (const p of spec.packages) {
    const built = join(out, p.pkg === '.' ? `kinetic.local/${spec.dir}`.split('/').pop() : p.pkg.split('/').pop())
    if (!existsSync(built)) return `go build wrote no ${p.out}`
    renameSync(built, join(ctx.bin, p.out))
  }
  rmSync(out, { recursive: true, force: true })
  return undefined
}

export function goModDownload(ctx, module, version) {
  const dir = join(ctx.root, 'src')
  const res = spawnSync('go', ['mod', 'download', '-json', `${module}@${version}`], { cwd: dir, encoding: 'utf8', env: { ...process.env, GOTOOLCHAIN: 'local' } })
  appendLog(ctx.log, `$ go mod download -json ${module}@${version}\n${res.stdout}${res.stderr}`)
  try {
    const info = JSON.parse(res.stdout)
    if (info.Error) return { error: `the registry refused ${module}@${version}: ${info.Error}` }
    return info
  } catch {
    return { error: `go mod download ${module}@${version}: ${lastLine(res.stderr) || `exit ${res.status}`}` }
  }
}

/** Runs a command with its output appended to the log; returns the last error line, or undefined. */
export function run(log, cmd, args, options) {
  appendLog(log, `$ ${cmd} ${args.join(' ')}\n`)
  const res = spawnSync(cmd, args, { ...options, encoding: 'utf8', maxBuffer: 256 * 1024 * 1024 })
  appendLog(log, `${res.stdout ?? ''}${res.stderr ?? ''}`)
  if (res.error) return res.error.message
  if (res.status !== 0) return lastLine(res.stderr) || `exit ${res.status}`
  return undefined
}

function appendLog(log, text) {
  writeFileSync(log, text, { flag: 'a' })
}

function lastLine(text) {
  return (text ?? '').trim().split('\n').filter(Boolean).pop() ?? ''
}

export function isExecutable(path) {
  try {
    const s = statSync(path)
    return s.isFile() && (s.mode & 0o111) !== 0
  } catch {
    return false
  }
}

/** A lock folder, so two builds (a test run and a user) never write the same cache at once. */
export function takeLock(path) {
  const deadline = Date.now() + 90 * 60_000
  for (;;) {
    try {
      mkdirSync(path)
      writeFileSync(join(path, 'pid'), String(process.pid))
      break
    } catch {
      const holder = Number(readFileSync(join(path, 'pid'), { encoding: 'utf8', flag: 'a+' }) || 0)
      if (holder && !alive(holder)) rmSync(path, { recursive: true, force: true })
      else if (Date.now() > deadline) throw new Error(`${path} held by pid ${holder} for 90 minutes`)
      else Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 1000)
    }
  }
  return () => rmSync(path, { recursive: true, force: true })
}

function alive(pid) {
  try {
    process.kill(pid, 0)
    return true
  } catch {
    return false
  }
}

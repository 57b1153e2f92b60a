// The app layer of Kinetic's image (scripts/build-image.mjs builds the image on it): a
// reproducible ustar archive of dist/ under /app, gzipped with a header that depends only on
// the input, and the image config that runs it, so the same dist/ always gives the same digests.
import { createHash } from 'node:crypto'
import { readFileSync, readdirSync } from 'node:fs'
import { join, relative, resolve, sep } from 'node:path'
import { gzipSync } from 'node:zlib'

/** The command every container of the image runs unless it names its own: the step executor. */
export const ENTRYPOINT = ['node', 'dist/executor/main.js']
/** The non-root user the image runs as (distroless "nonroot"). */
export const USER = '65532:65532'
/** Where dist/ lands inside the image; also the working directory. */
export const APP_DIR = '/app'
// Fixed timestamp so that config and history never depend on when the build ran.
const EPOCH = '1970-01-01T00:00:00Z'

/** Returns the lowercase hex sha256 of `data` prefixed with `sha256:`. */
export function sha256Digest(data) {
  return `sha256:${createHash('sha256').update(data).digest('hex')}`
}

function octal(value, width) {
  // ustar numeric fields: zero-padded octal digits followed by a NUL.
  const text = value.toString(8)
  if (text.length > width - 1) throw new Error(`tar field overflow: ${value}`)
  return text.padStart(width - 1, '0') + '\0'
}

function splitName(name) {
  if (Buffer.byteLength(name) <= 100) return { name, prefix: '' }
  // Long paths go into the 155-byte prefix, split at a slash.
  for (let i = name.length - 1; i > 0; i--) {
    if (name[i] !== '/') continue
    const prefix = name.slice(0, i)
    const rest = name.slice(i + 1)
    if (Buffer.byteLength(prefix) <= 155 && Buffer.byteLength(rest) <= 100 && rest.length > 0) return { name: rest, prefix }
  }
  throw new Error(`path too long for a ustar archive: ${name}`)
}

const TYPE_FLAGS = { file: '0', symlink: '2', dir: '5' }

function tarHeader(entry, size) {
  const header = Buffer.alloc(512)
  const { name, prefix } = splitName(entry.path)
  const put = (text, offset, length) => header.write(text, offset, length, 'utf8')
  const flag = TYPE_FLAGS[entry.type]
  if (!flag) throw new Error(`tar entry ${entry.path} has unknown type ${entry.type}`)
  put(name, 0, 100)
  put(octal(entry.mode ?? (entry.type === 'file' ? 0o644 : entry.type === 'dir' ? 0o755 : 0o777), 8), 100, 8)
  put(octal(entry.uid ?? 0, 8), 108, 8)
  put(octal(entry.gid ?? 0, 8), 116, 8)
  put(octal(size, 12), 124, 12)
  put(octal(0, 12), 136, 12)
  put('        ', 148, 8)
  put(flag, 156, 1)
  if (entry.type === 'symlink') {
    if (Buffer.byteLength(entry.target ?? '') > 100 || !entry.target) throw new Error(`symlink ${entry.path} needs a target of at most 100 bytes`)
    put(entry.target, 157, 100)
  }
  put('ustar\0', 257, 6)
  put('00', 263, 2)
  put('root', 265, 32)
  put('root', 297, 32)
  put(octal(0, 8), 329, 8)
  put(octal(0, 8), 337, 8)
  put(prefix, 345, 155)
  let sum = 0
  for (const byte of header) sum += byte
  put(sum.toString(8).padStart(6, '0') + '\0 ', 148, 8)
  return header
}

/**
 * Writes a POSIX ustar archive of `entries` ({path, type: 'dir'|'file'|'symlink', data?, target?,
 * mode?, uid?, gid?}) in byte order of their paths, with mtime 0; unless an entry says otherwise,
 * uid/gid 0, mode 0755 for directories and 0644 for files.
 */
export function createTar(entries) {
  const sorted = [...entries].sort((a, b) => Buffer.compare(Buffer.from(a.path), Buffer.from(b.path)))
  const blocks = []
  for (const entry of sorted) {
    const data = entry.type === 'file' ? Buffer.from(entry.data ?? '') : Buffer.alloc(0)
    blocks.push(tarHeader(entry, data.length), data)
    const pad = (512 - (data.length % 512)) % 512
    if (pad) blocks.push(Buffer.alloc(pad))
  }
  blocks.push(Buffer.alloc(1024))
  return Buffer.concat(blocks)
}

/** Gzips `data` with a header that carries no file name, mtime 0 and a fixed OS byte, so output depends only on input. */
export function deterministicGzip(data, level = 9) {
  const gz = gzipSync(data, { level })
  // zlib stamps the OS it was built for; fix it to "unknown" so every platform agrees.
  gz[9] = 0xff
  return gz
}

function collect(distDir, withSourcemaps) {
  const entries = [{ path: 'app/', type: 'dir' }, { path: 'app/dist/', type: 'dir' }]
  const walk = (dir) => {
    for (const item of readdirSync(dir, { withFileTypes: true })) {
      const full = join(dir, item.name)
      const inside = `app/dist/${relative(distDir, full).split(sep).join('/')}`
      if (item.isDirectory()) {
        entries.push({ path: `${inside}/`, type: 'dir' })
        walk(full)
      } else if (item.isFile()) {
        if (!withSourcemaps && item.name.endsWith('.map')) continue
        entries.push({ path: inside, type: 'file', data: readFileSync(full) })
      }
    }
  }
  walk(distDir)
  return entries
}

/** Builds the app layer from `distDir`: the tar (dist/** under app/dist/), its gzip, the compressed digest and the diff_id. */
export function buildAppLayer(distDir, options = {}) {
  const entries = collect(resolve(distDir), options.withSourcemaps === true)
  if (!entries.some((e) => e.path === 'app/dist/executor/main.js')) {
    throw new Error(`${distDir} has no executor/main.js (the image entrypoint); run npm run build first`)
  }
  const tar = createTar(entries)
  const gzip = deterministicGzip(tar)
  return { tar, gzip, digest: sha256Digest(gzip), diffId: sha256Digest(tar), size: gzip.length }
}

/** Returns the image config for the base config plus the app layer: entrypoint, working dir, non-root user, base Env kept. */
export function appImageConfig(baseConfig, diffId) {
  const config = { ...(baseConfig.config ?? {}) }
  config.WorkingDir = APP_DIR
  config.Entrypoint = [...ENTRYPOINT]
  config.Cmd = null
  config.User = USER
  // The base's labels say what runtime is inside; these say what the image is.
  config.Labels = {
    ...(config.Labels ?? {}),
    'org.opencontainers.image.title': 'kinetic',
    'org.opencontainers.image.description': 'Kinetic functions, step executor and MCP bridge (dist/ under /app)',
  }
  const history = [...(baseConfig.history ?? [])]
  history.push({ created: EPOCH, created_by: 'kinetic build-image: dist/ as /app/dist', comment: 'kinetic app layer' })
  return {
    ...baseConfig,
    created: EPOCH,
    config,
    rootfs: { type: 'layers', diff_ids: [...(baseConfig.rootfs?.diff_ids ?? []), diffId] },
    history,
  }
}

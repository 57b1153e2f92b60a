// npm run image:base: builds a minimal Node runtime image offline and pushes it by digest, the
// base `npm run image` puts dist/ on. One layer holds only what a Kinetic process needs:
//   /usr/bin/node, the shared libraries `ldd` lists for it (and the dynamic loader), /etc/passwd
//   and /etc/group with root and nonroot (65532), /home/nonroot, /tmp (1777) and the CA bundle.
// No shell, no package manager: nothing an attacker could use that Node itself does not offer.
//
// Where the Node binary comes from: the Node that runs this script (or --node <path>), not an npm
// package. The libraries must come from the machine's Debian packages anyway, so a downloaded
// binary would add a 40 MB fetch to every install without making the image any less dependent on
// the host; instead the image records exactly what went in: the Node version and the Debian
// package and version of every file (labels dev.kinetic.base.node and dev.kinetic.base.packages).
// Reproducible: the layer is a sorted ustar with fixed mtimes and owners, gzipped with a fixed
// header, and the config carries no time, so the same files always give the same digest.
import { execFileSync } from 'node:child_process'
import { readFileSync, realpathSync } from 'node:fs'
import { arch } from 'node:os'
import { pathToFileURL } from 'node:url'
import { USER, createTar, deterministicGzip, sha256Digest } from './image-layer.mjs'
import { RegistryClient, parseReference, pushImage } from './registry-client.mjs'
import { readOptions } from './script-cli.mjs'

const OCI_MANIFEST = 'application/vnd.oci.image.manifest.v1+json'
const OCI_CONFIG = 'application/vnd.oci.image.config.v1+json'
const OCI_LAYER = 'application/vnd.oci.image.layer.v1.tar+gzip'
const EPOCH = '1970-01-01T00:00:00Z'
const NONROOT = 65532
/** Where the CA bundle lands; also SSL_CERT_FILE, so Node and any TLS library find it. */
export const CA_BUNDLE = '/etc/ssl/certs/ca-certificates.crt'
/** Where the Node binary lands; the image's PATH finds it as `node`. */
export const NODE_PATH = '/usr/bin/node'
// gzip -6: the Node binary is most of the layer, and -9 takes three times as long for 0.7 % less.
const GZIP_LEVEL = 6

const PASSWD = `root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:${NONROOT}:${NONROOT}:nonroot:/home/nonroot:/sbin/nologin\n`
const GROUP = `root:x:0:\nnonroot:x:${NONROOT}:\n`

/** Parses `ldd` output into the absolute paths it lists (the loader included), in order; throws on a missing library. */
export function parseLdd(text) {
  const paths = []
  for (const line of text.split('\n')) {
    const trimmed = line.trim()
    if (!trimmed || trimmed.startsWith('linux-vdso') || trimmed.startsWith('linux-gate')) continue
    if (trimmed.includes('not found')) throw new Error(`the Node binary needs a library the machine lacks: ${trimmed}`)
    const match = /=>\s*(\/\S+)/.exec(trimmed) ?? /^(\/\S+)/.exec(trimmed)
    if (match) paths.push(match[1])
  }
  return paths
}

// Debian registers files under their pre-merged-/usr path; ask with the path given, then /usr-less.
function debianPackage(path) {
  const candidates = [path, realpathSync(path), realpathSync(path).replace(/^\/usr\//, '/')]
  for (const candidate of [...new Set(candidates)]) {
    try {
      const owner = execFileSync('dpkg-query', ['-S', candidate], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] })
      const name = owner.split(':')[0].trim()
      const version = execFileSync('dpkg-query', ['-W', '-f=${Version}', name], { encoding: 'utf8' }).trim()
      return `${name}=${version}`
    } catch {
      // not owned under this spelling, or no dpkg at all
    }
  }
  return undefined
}

function parents(path) {
  const parts = path.split('/').filter(Boolean)
  return parts.slice(0, -1).map((_, i) => `${parts.slice(0, i + 1).join('/')}/`)
}

/**
 * Collects the base layer's files from the machine: `node` (default: the running Node), its
 * libraries per `ldd`, and the CA bundle at `caBundle`. Returns the tar entries plus what they came
 * from: `nodeVersion` and the sorted `packages` (`name=version`, or `unpackaged:<path>`).
 */
export function collectBaseFiles(options = {}) {
  const node = realpathSync(options.node ?? process.execPath)
  const nodeVersion =
    node === realpathSync(process.execPath) ? process.version : execFileSync(node, ['--version'], { encoding: 'utf8' }).trim()
  const libraries = parseLdd(execFileSync('ldd', [node], { encoding: 'utf8' }))
  const caBundle = options.caBundle ?? CA_BUNDLE
  const files = [
    { path: NODE_PATH.slice(1), type: 'file', mode: 0o755, data: readFileSync(node), from: node },
    // The loader and libraries keep the path ldd resolved them at, which is where the ELF looks.
    ...libraries.map((lib) => ({ path: lib.slice(1), type: 'file', mode: 0o755, data: readFileSync(lib), from: lib })),
    { path: CA_BUNDLE.slice(1), type: 'file', mode: 0o644, data: readFileSync(caBundle), from: 'ca-certificates' },
    { path: 'etc/passwd', type: 'file', mode: 0o644, data: PASSWD },
    { path: 'etc/group', type: 'file', mode: 0o644, data: GROUP },
  ]
  const packages = new Set()
  for (const file of files) {
    if (!file.from) continue
    if (file.from === 'ca-certificates') {
      // The bundle is generated by update-ca-certificates; its content comes from this package.
      packages.add(debianPackage('/usr/share/ca-certificates') ?? `unpackaged:${caBundle}`)
      continue
    }
    packages.add(debianPackage(file.from) ?? `unpackaged:${file.from}`)
  }
  const dirs = new Map()
  for (const file of files) for (const dir of parents(file.path)) dirs.set(dir, { path: dir, type: 'dir', mode: 0o755 })
  dirs.set('tmp/', { path: 'tmp/', type: 'dir', mode: 0o1777 })
  dirs.set('home/', { path: 'home/', type: 'dir', mode: 0o755 })
  dirs.set('home/nonroot/', { path: 'home/nonroot/', type: 'dir', mode: 0o700, uid: NONROOT, gid: NONROOT })
  dirs.set('root/', { path: 'root/', type: 'dir', mode: 0o700 })
  const entries = [...dirs.values(), ...files.map(({ from: _from, ...entry }) => entry)]
  return { entries, nodeVersion, packages: [...packages].sort() }
}

/** The OCI image config of the base: non-root user, PATH and SSL_CERT_FILE, and labels naming what went in. */
export function baseImageConfig({ diffId, nodeVersion, packages, architecture }) {
  return {
    architecture,
    os: 'linux',
    created: EPOCH,
    config: {
      User: USER,
      Env: ['PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin', `SSL_CERT_FILE=${CA_BUNDLE}`],
      WorkingDir: '/',
      Labels: {
        'org.opencontainers.image.title': 'kinetic-base',
        'org.opencontainers.image.description': 'Node runtime: node, its shared libraries, passwd/group, CA certificates',
        'dev.kinetic.base.node': nodeVersion,
        'dev.kinetic.base.packages': packages.join(' '),
      },
    },
    rootfs: { type: 'layers', diff_ids: [diffId] },
    history: [{ created: EPOCH, created_by: 'kinetic build-base-image: node, ldd libraries, passwd/group, /tmp, CA bundle' }],
  }
}

/**
 * Builds the base image in memory: `{ layer: {tar, gzip, digest, diffId, size}, config, configBytes,
 * manifest, manifestBytes, digest }`. Same machine files → same digest.
 */
export function buildBase(options = {}) {
  const { entries, nodeVersion, packages } = collectBaseFiles(options)
  const tar = createTar(entries)
  const gzip = deterministicGzip(tar, GZIP_LEVEL)
  const layer = { tar, gzip, digest: sha256Digest(gzip), diffId: sha256Digest(tar), size: gzip.length }
  const architecture = { x64: 'amd64', arm64: 'arm64' }[arch()] ?? arch()
  const config = baseImageConfig({ diffId: layer.diffId, nodeVersion, packages, architecture })
  const configBytes = Buffer.from(JSON.stringify(config))
  const manifest = {
    schemaVersion: 2,
    mediaType: OCI_MANIFEST,
    config: { mediaType: OCI_CONFIG, digest: sha256Digest(configBytes), size: configBytes.length },
    layers: [{ mediaType: OCI_LAYER, digest: layer.digest, size: layer.size }],
  }
  const manifestBytes = Buffer.from(JSON.stringify(manifest))
  return { layer, config, configBytes, manifest, manifestBytes, digest: sha256Digest(manifestBytes) }
}

/**
 * Builds the base and pushes it to `options.to` (`<registry>/<repo>[:tag]`): layer and config
 * first, the manifest last (by its digest, plus the tag if one is given). Resolves to
 * `{ reference: <repo>@<digest>, digest, ... }`.
 */
export async function buildBaseImage(options) {
  const log = options.log ?? (() => {})
  const to = parseReference(options.to)
  if (to.digest) throw new Error(`--to "${options.to}" must not carry a digest; the digest is computed`)
  const client = new RegistryClient(to.host, {
    insecure: options.insecure,
    ca: options.ca,
    tls: options.tls,
    fetch: options.fetch,
    user: options.user ?? process.env.REGISTRY_USER,
    password: options.password ?? process.env.REGISTRY_PASSWORD,
  })
  // A caller pushing one build to several registries passes it in as `built`.
  const base = options.built ?? buildBase(options)
  log(`base layer ${base.layer.digest} (${base.layer.size} bytes gzip, ${base.layer.tar.length} bytes tar)`)
  const blobs = [
    { what: 'base layer', digest: base.layer.digest, data: base.layer.gzip },
    { what: 'image config', digest: base.manifest.config.digest, data: base.configBytes },
  ]
  await pushImage(client, to.repository, blobs, base.manifestBytes, OCI_MANIFEST, base.digest)
  if (to.tag) await pushImage(client, to.repository, [], base.manifestBytes, OCI_MANIFEST, to.tag)
  return { ...base, reference: `${to.name}@${base.digest}`, name: to.name }
}

const USAGE = `usage: node scripts/build-base-image.mjs --to <registry>/<repo>[:tag] [--node <path>] [--insecure] [--ca <pem file>]
  credentials: REGISTRY_USER / REGISTRY_PASSWORD; prints <registry>/<repo>@sha256:... for npm run image --base`

/** Runs the CLI with `argv`; prints the pushed reference on stdout and returns the exit code. */
export async function main(argv) {
  const read = readOptions(argv, {
    to: { type: 'string' },
    node: { type: 'string' },
    insecure: { type: 'boolean', default: false },
    ca: { type: 'string' },
      }, USAGE, ['to'])
  if (read.exit !== undefined) return read.exit
  const { values } = read
  try {
    const result = await buildBaseImage({
      to: values.to,
      node: values.node,
      insecure: values.insecure,
      ca: values.ca ? readFileSync(values.ca, 'utf8') : undefined,
      log: (line) => process.stderr.write(`${line}\n`),
    })
    process.stdout.write(`${result.reference}\n`)
    return 0
  } catch (error) {
    process.stderr.write(`build-base-image: ${error instanceof Error ? error.message : String(error)}\n`)
    return 1
  }
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  process.exitCode = await main(process.argv.slice(2))
}

// npm run release -- --image <registry>/kinetic@sha256:<digest>: the files a user installs Kinetic
// from, without the repository. install.yaml is knative/ rendered as `kubectl kustomize knative/`
// renders it, with the image pinned by digest everywhere; the CLI is one bundled file in an npm
// tarball with no dependencies, so `npm install -g` of it needs neither the network nor tsx.
import { spawnSync } from 'node:child_process'
import { createHash } from 'node:crypto'
import { chmodSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { basename, dirname, join, relative, resolve } from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'
import { stringify } from 'yaml'
import { parseReference } from './registry-client.mjs'
import { readOptions, REQUIRE_BANNER } from './script-cli.mjs'
import { parseDocuments, renderKustomization } from './kustomize.mjs'

const root = join(dirname(fileURLToPath(import.meta.url)), '..')

/** The name every Service and step Job image starts as in knative/ (its kustomization's `images:` entry). */
export const IMAGE_NAME = 'kinetic'
/** The npm package name of the CLI tarball. */
export const CLI_PACKAGE = 'kinetic-cli'

// kubectl apply -f applies documents in file order: what others refer to (CRDs, the namespace,
// accounts, roles) comes before what refers to them. Kinds not listed keep their kustomization order.
const APPLY_ORDER = ['CustomResourceDefinition', 'Namespace', 'ServiceAccount', 'ClusterRole', 'Role', 'ClusterRoleBinding', 'RoleBinding']

/** `objects` in the order `kubectl apply -f` needs them: APPLY_ORDER's kinds first, the rest as rendered. */
export function installOrder(objects) {
  const rank = (o) => {
    const i = APPLY_ORDER.indexOf(o.kind)
    return i < 0 ? APPLY_ORDER.length : i
  }
  // Array.prototype.sort is stable, so objects of one rank keep their kustomization order.
  return [...objects].sort((a, b) => rank(a) - rank(b))
}

/** Parses `--image`: `<registry>/<repository>@sha256:<digest>`, nothing looser; throws a sentence saying what to pass. */
export function pinnedImage(reference) {
  const ref = parseReference(reference)
  if (!ref.digest) throw new Error(`--image "${reference}" must be pinned by digest: <registry>/<repository>@sha256:<digest> (npm run image prints it)`)
  if (ref.tag) throw new Error(`--image "${reference}" names a tag and a digest; pass only <registry>/<repository>@sha256:<digest>`)
  return { name: ref.name, digest: ref.digest, reference: `${ref.name}@${ref.digest}` }
}

/**
 * Every image reference in `objects` that is not `reference`, as `<Kind> <name> <field>: <value>`:
 * each container's and init container's `image`, and each env var named `*_IMAGE` (what step Jobs
 * and sidecars will run). Empty when the whole install runs the one pinned image.
 */
export function unpinnedImages(objects, reference) {
  const out = []
  const walk = (value, path, where) => {
    if (value === null || typeof value !== 'object') return
    if (Array.isArray(value)) {
      value.forEach((item, i) => walk(item, `${path}[${i}]`, where))
      return
    }
    for (const [key, child] of Object.entries(value)) {
      const at = path ? `${path}.${key}` : key
      if (key === 'image' && typeof child === 'string' && child !== reference) out.push(`${where} ${at}: ${child}`)
      if (key === 'env' && Array.isArray(child)) {
        for (const e of child) {
          if (typeof e?.name === 'string' && e.name.endsWith('_IMAGE') && e.value !== reference) out.push(`${where} ${at}[name=${e.name}]: ${e.value}`)
        }
      }
      walk(child, at, where)
    }
  }
  for (const o of objects) walk(o, '', `${o.kind} ${o.metadata?.namespace ? `${o.metadata.namespace}/` : ''}${o.metadata?.name}`)
  return out
}

/** A multi-document YAML file of `objects` under a comment header. */
function yamlFile(header, objects) {
  return `${header.map((line) => `# ${line}`.trimEnd()).join('\n')}\n${objects.map((o) => `---\n${stringify(o, { lineWidth: 0 })}`).join('')}`
}

function sha256(data) {
  return createHash('sha256').update(data).digest('hex')
}

function packageJson() {
  return JSON.parse(readFileSync(join(root, 'package.json'), 'utf8'))
}

// bin/kinetic.mjs starts cli/main.ts through tsx; the tarball's bin runs the same two calls on
// the bundled CLI instead, so it needs no loader.
const CLI_ENTRY = `import { basename } from 'node:path'
import { main, processIo } from './cli/main.ts'
const invoked = basename(process.argv[1] ?? 'kinetic').replace(/\\.m?js$/, '')
const io = processIo(invoked === 'kn-kinetic' ? 'kn kinetic' : 'kinetic')
const code = await main(process.argv.slice(2), io)
io.dispose()
process.exitCode = code
`

/** The node_modules package folders an esbuild metafile's inputs come from, sorted. */
function bundledPackages(metafile) {
  const dirs = new Set()
  for (const input of Object.keys(metafile.inputs)) {
    const abs = resolve(root, input)
    const at = abs.lastIndexOf(`node_modules/`)
    if (at < 0) continue
    const rest = abs.slice(at + 'node_modules/'.length).split('/')
    dirs.add(abs.slice(0, at) + 'node_modules/' + (rest[0].startsWith('@') ? `${rest[0]}/${rest[1]}` : rest[0]))
  }
  return [...dirs].sort()
}

/** The licence of every bundled package, with its licence file's text: the notice MIT, ISC, BSD and Apache-2.0 ask to ship. */
function thirdPartyNotices(packageDirs) {
  const parts = ['# Third-party software in bin/kinetic.mjs', '', 'The kinetic CLI is bundled into one file; it contains these packages.', '']
  for (const dir of packageDirs) {
    const pkg = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8'))
    const license = typeof pkg.license === 'string' ? pkg.license : (pkg.license?.type ?? 'see its package')
    parts.push(`## ${pkg.name} ${pkg.version} (${license})`, '')
    for (const file of readdirSync(dir).filter((f) => /^(licen[cs]e|copying|notice)/i.test(f)).sort()) {
      parts.push('```', readFileSync(join(dir, file), 'utf8').trim(), '```', '')
    }
  }
  return `${parts.join('\n').trimEnd()}\n`
}

/** Bundles the CLI into `<stage>/bin/kinetic.mjs` and writes the package around it; the bundled package folders. */
async function stageCli(stage, version) {
  const { build } = await import('esbuild')
  const outfile = join(stage, 'bin', 'kinetic.mjs')
  const result = await build({
    stdin: { contents: CLI_ENTRY, resolveDir: root, sourcefile: 'kinetic-cli-entry.ts', loader: 'ts' },
    outfile,
    bundle: true,
    platform: 'node',
    format: 'esm',
    target: 'node20',
    minify: true,
    // Error classes name themselves from the constructor; messages must keep them.
    keepNames: true,
    legalComments: 'none',
    banner: { js: `#!/usr/bin/env node\n${REQUIRE_BANNER}` },
    metafile: true,
    logLevel: 'warning',
  })
  chmodSync(outfile, 0o755)
  const repo = packageJson()
  const packages = bundledPackages(result.metafile)
  writeFileSync(join(stage, 'THIRD-PARTY-NOTICES.md'), thirdPartyNotices(packages))
  writeFileSync(join(stage, 'README.md'), [
    '# kinetic-cli',
    '',
    'The `kinetic` command (also the kn plugin `kn-kinetic`): start, steer and watch Kinetic Workflows.',
    'It uses your kubeconfig like kubectl. `kinetic --help` lists the commands.',
    '',
  ].join('\n'))
  // Everything is bundled, so the package declares no dependencies and installs offline.
  const manifest = {
    name: CLI_PACKAGE,
    version,
    description: 'The kinetic CLI (also the kn plugin kn-kinetic) for Kinetic Workflows on Kubernetes',
    type: 'module',
    bin: { kinetic: 'bin/kinetic.mjs', 'kn-kinetic': 'bin/kinetic.mjs' },
    files: ['bin/', 'THIRD-PARTY-NOTICES.md'],
    engines: repo.engines,
  }
  writeFileSync(join(stage, 'package.json'), `${JSON.stringify(manifest, null, 2)}\n`)
  return packages
}

/** `npm pack`s `dir` into `out`; the tarball's path. */
function npmPack(dir, out) {
  const npm = spawnSync('npm', ['pack', dir, '--pack-destination', out, '--json', '--ignore-scripts', '--offline', '--no-audit', '--no-fund'], {
    encoding: 'utf8',
    // The staged package has no scripts and none may run; no update check, which would go online.
    env: { ...process.env, npm_config_update_notifier: 'false' },
  })
  if (npm.status !== 0) throw new Error(`npm pack ${dir} failed (exit ${npm.status}): ${(npm.stderr || npm.stdout).trim()}`)
  const [packed] = JSON.parse(npm.stdout)
  return join(out, packed.filename)
}

/**
 * Writes the release into `options.out`: install.yaml (knative/, image pinned), platform.yaml
 * (knative/platform/), platform-namespaces.yaml (knative/platform/namespaces.yaml), the CLI
 * tarball and SHA256SUMS. Resolves to the written paths and what they hold.
 */
export async function release(options) {
  const image = pinnedImage(options.image)
  const out = resolve(options.out ?? 'release')
  const log = options.log ?? (() => {})
  const version = packageJson().version
  mkdirSync(out, { recursive: true })

  const install = installOrder(renderKustomization(join(root, 'knative'), {
    root,
    images: [{ name: IMAGE_NAME, newName: image.name, digest: image.digest }],
  }).map((d) => d.object))
  const unpinned = unpinnedImages(install, image.reference)
  if (unpinned.length > 0) throw new Error(`knative/ rendered with images unpinned: ${unpinned.join('; ')}`)
  const platform = installOrder(renderKustomization(join(root, 'knative', 'platform'), { root }).map((d) => d.object))
  const namespacesFile = join(root, 'knative', 'platform', 'namespaces.yaml')
  const namespaces = parseDocuments(readFileSync(namespacesFile, 'utf8'), namespacesFile)

  const files = {
    install: join(out, 'install.yaml'),
    platform: join(out, 'platform.yaml'),
    platformNamespaces: join(out, 'platform-namespaces.yaml'),
  }
  writeFileSync(files.install, yamlFile([
    `Kinetic ${version}: kubectl apply -f install.yaml`,
    `Rendered from knative/ as kubectl kustomize renders it; every Service and step Job runs ${image.reference}.`,
    'Needs Knative Serving and Eventing; the CRDs, then the kinetic-system namespace, RBAC, Broker, sources, Services and Triggers.',
  ], install))
  writeFileSync(files.platform, yamlFile([
    `Kinetic ${version}: kubectl apply -f platform.yaml, after install.yaml, once purko-system, ai-agents,`,
    'mcp-server and sandbox-recipes exist: the functions\' grants in those namespaces and the recipes MCP server.',
  ], platform))
  writeFileSync(files.platformNamespaces, yamlFile([
    `Kinetic ${version}: kubectl apply -f platform-namespaces.yaml, only on a cluster without purko:`,
    'the namespaces platform.yaml needs. Kept apart so deleting Kinetic never deletes them.',
  ], namespaces))
  log(`wrote ${relative(process.cwd(), files.install)} (${install.length} objects, image ${image.reference})`)
  log(`wrote ${relative(process.cwd(), files.platform)} (${platform.length} objects) and ${basename(files.platformNamespaces)} (${namespaces.length} namespaces)`)

  const stage = mkdtempSync(join(tmpdir(), 'kinetic-cli-stage-'))
  let cli
  let packages
  try {
    packages = await stageCli(stage, version)
    const packed = npmPack(stage, out)
    cli = join(out, `${CLI_PACKAGE}-${version}.tgz`)
    if (packed !== cli) throw new Error(`npm pack wrote ${packed}, expected ${cli}`)
  } finally {
    rmSync(stage, { recursive: true, force: true })
  }
  log(`wrote ${relative(process.cwd(), cli)} (kinetic ${version}, ${packages.length} packages bundled, no dependencies)`)

  const artifacts = [files.install, files.platform, files.platformNamespaces, cli]
  const sums = join(out, 'SHA256SUMS')
  writeFileSync(sums, artifacts.map((f) => `${sha256(readFileSync(f))}  ${basename(f)}\n`).join(''))
  return { ...files, cli, sums, image: image.reference, version, objects: install.length }
}

const USAGE = 'usage: npm run release -- --image <registry>/<repository>@sha256:<digest> [--out release]'

/** Runs the command with `argv`; prints what it wrote on stderr and returns the exit code. */
export async function main(argv) {
  const read = readOptions(argv, { image: { type: 'string' }, out: { type: 'string', default: 'release' } }, USAGE, ['image'])
  if (read.exit !== undefined) return read.exit
  const { values } = read
  try {
    const result = await release({ image: values.image, out: values.out, log: (line) => process.stderr.write(`${line}\n`) })
    process.stdout.write(`${result.install}\n${result.cli}\n`)
    return 0
  } catch (error) {
    process.stderr.write(`release: ${error instanceof Error ? error.message : String(error)}\n`)
    return 1
  }
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  process.exitCode = await main(process.argv.slice(2))
}

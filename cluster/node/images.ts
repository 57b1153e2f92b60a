// The node's images: a local OCI registry (Debian's docker-registry on 127.0.0.1) that containerd
// pulls from, the pause image (a tiny static C program of ours) and CoreDNS (built from the Go
// module registry by cluster/build.mjs), each pushed as a one-layer OCI image by digest.
import { spawn, spawnSync } from 'node:child_process'
import { mkdirSync, openSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { createTar, deterministicGzip, sha256Digest, type TarEntry } from '../../scripts/image-layer.mjs'
import { RegistryClient, pushImage } from '../../scripts/registry-client.mjs'
import { NodeError } from './host.js'

const OCI_MANIFEST = 'application/vnd.oci.image.manifest.v1+json'

/** Starts docker-registry on 127.0.0.1:`port` storing under `dir`; resolves once /v2/ answers. */
export async function startRegistry(dir: string, port: number, log: string): Promise<number> {
  mkdirSync(join(dir, 'registry'), { recursive: true })
  const config = join(dir, 'registry.yaml')
  writeFileSync(config, [
    'version: 0.1',
    'log: { level: warn }',
    `storage: { filesystem: { rootdirectory: ${JSON.stringify(join(dir, 'registry'))} }, delete: { enabled: true } }`,
    'http:',
    `  addr: 127.0.0.1:${port}`,
    '',
  ].join('\n'))
  const out = openSync(log, 'a')
  const child = spawn('docker-registry', ['serve', config], { stdio: ['ignore', out, out], detached: true })
  child.on('error', () => undefined)
  child.unref()
  const deadline = Date.now() + 30_000
  for (;;) {
    if (child.exitCode !== null) throw new NodeError('registry', `docker-registry exited (${child.exitCode})`, log)
    const ok = await fetch(`http://127.0.0.1:${port}/v2/`).then((r) => r.status === 200, () => false)
    if (ok) return child.pid as number
    if (Date.now() > deadline) throw new NodeError('registry', `no answer on 127.0.0.1:${port}/v2/ within 30 s`, log)
    await new Promise((r) => setTimeout(r, 100))
  }
}

// The pod sandbox's one process: waits for a signal, and reaps children when it is a pid
// namespace's init (shareProcessNamespace).
const PAUSE_C = `#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

static void quit(int sig) { (void)sig; _exit(0); }
static void reap(int sig) { (void)sig; while (waitpid(-1, 0, WNOHANG) > 0) {} }

int main(void) {
  signal(SIGINT, quit);
  signal(SIGTERM, quit);
  signal(SIGCHLD, reap);
  for (;;) pause();
}
`

/** Compiles the pause program statically with gcc into `dir/pause`. */
export function buildPause(dir: string, log: string): string {
  const src = join(dir, 'pause.c')
  const bin = join(dir, 'pause')
  writeFileSync(src, PAUSE_C)
  const r = spawnSync('gcc', ['-static', '-Os', '-s', '-o', bin, src], { encoding: 'utf8' })
  writeFileSync(log, `${r.stdout ?? ''}${r.stderr ?? ''}`, { flag: 'a' })
  if (r.status !== 0) throw new NodeError('pause image', `gcc -static failed: ${(r.stderr || r.error?.message || '').trim().split('\n').pop()}`, log)
  return bin
}

/** One static binary as a one-layer image. */
export interface BinaryImage {
  /** Repository in the local registry, e.g. `kinetic/pause`. */
  repository: string
  tag: string
  /** Path inside the image (the entry point). */
  path: string
  binary: string
  user: string
}

/** Pushes `image` to the registry at 127.0.0.1:`port`; resolves to `127.0.0.1:<port>/<repo>@<digest>`. */
export async function pushBinaryImage(port: number, image: BinaryImage): Promise<string> {
  const entries: TarEntry[] = [
    { path: image.path.replace(/^\//, ''), type: 'file', data: readFileSync(image.binary), mode: 0o755 },
    { path: 'tmp/', type: 'dir', mode: 0o1777 },
  ]
  const tar: Buffer = createTar(entries)
  const gzip: Buffer = deterministicGzip(tar, 6)
  const config = {
    architecture: 'amd64',
    os: 'linux',
    config: { Entrypoint: [image.path], User: image.user, Env: ['PATH=/'] },
    rootfs: { type: 'layers', diff_ids: [sha256Digest(tar)] },
  }
  const configBytes = Buffer.from(JSON.stringify(config))
  const layerDigest = sha256Digest(gzip)
  const manifest = {
    schemaVersion: 2,
    mediaType: OCI_MANIFEST,
    config: { mediaType: 'application/vnd.oci.image.config.v1+json', digest: sha256Digest(configBytes), size: configBytes.length },
    layers: [{ mediaType: 'application/vnd.oci.image.layer.v1.tar+gzip', digest: layerDigest, size: gzip.length }],
  }
  const manifestBytes = Buffer.from(JSON.stringify(manifest))
  const client = new RegistryClient(`127.0.0.1:${port}`, { insecure: true })
  const blobs = [
    { what: `${image.repository} layer`, digest: layerDigest, data: gzip },
    { what: `${image.repository} config`, digest: manifest.config.digest, data: configBytes },
  ]
  const digest: string = await pushImage(client, image.repository, blobs, manifestBytes, OCI_MANIFEST, image.tag)
  return `127.0.0.1:${port}/${image.repository}@${digest}`
}

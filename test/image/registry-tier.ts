// The image tier: a real OCI Distribution registry (Debian's docker-registry) on 127.0.0.1, the way
// the cluster tier starts a real kube-apiserver, plus the real tools that read images (skopeo,
// umoci). Three flavours: plain HTTP, TLS with a CA made here by openssl, and basic auth (bcrypt
// htpasswd, which the registry insists on). Everything lives in one temp dir, removed on stop.
import { execFile, spawn } from 'node:child_process'
import type { ChildProcess } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { request as httpRequest } from 'node:http'
import { request as httpsRequest } from 'node:https'
import { tmpdir } from 'node:os'
import { delimiter, join } from 'node:path'
import { promisify } from 'node:util'
import { freePort } from '../../local/free-port.js'

const run = promisify(execFile)

/** The binaries the tier needs and the Debian packages they come from. */
const TOOLS: Record<string, string> = {
  'docker-registry': 'docker-registry',
  skopeo: 'skopeo',
  umoci: 'umoci',
  openssl: 'openssl',
  perl: 'perl-base',
}

function onPath(name: string): boolean {
  return (process.env.PATH ?? '').split(delimiter).some((dir) => dir && existsSync(join(dir, name)))
}

/**
 * Why the tier cannot run here (one line naming the apt packages), or undefined when it can.
 * With KINETIC_REQUIRE_IMAGE_TOOLS=1 (CI) a missing tool throws instead of skipping.
 */
export function imageTierUnavailable(): string | undefined {
  const missing = Object.keys(TOOLS).filter((tool) => !onPath(tool))
  if (missing.length === 0) return undefined
  const packages = [...new Set(missing.map((tool) => TOOLS[tool]))].join(' ')
  const reason = `image tier skipped: ${missing.join(', ')} missing (apt-get install ${packages})`
  if (process.env.KINETIC_REQUIRE_IMAGE_TOOLS === '1') throw new Error(`${reason}; KINETIC_REQUIRE_IMAGE_TOOLS=1 requires it`)
  return reason
}

/** How a registry is started: TLS with a fresh CA, and/or basic auth with one user. */
export interface RegistryFlavour {
  tls?: boolean
  auth?: { user: string; password: string }
}

/** A running real registry; `host` is `127.0.0.1:<port>`. */
export interface RealRegistry {
  host: string
  /** PEM of the CA that signed the server certificate (TLS flavour). */
  ca: string | undefined
  /** A directory holding `ca.crt`, for skopeo's --cert-dir / --src-cert-dir. */
  certDir: string | undefined
  auth: { user: string; password: string } | undefined
  /** Flags for skopeo commands that read from this registry. */
  skopeoFlags(prefix?: 'src' | 'dest' | ''): string[]
  stop(): Promise<void>
}

// bcrypt through the C library's crypt(3), which perl exposes and Debian's libcrypt implements.
async function bcrypt(password: string): Promise<string> {
  const alphabet = './ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789'
  // The 22nd salt character carries only two bits; these four are its canonical spellings.
  const salt = [...randomBytes(21)].map((b) => alphabet[b % 64]).join('') + '.Oeu'[randomBytes(1)[0]! % 4]
  const { stdout } = await run('perl', ['-e', 'print crypt($ARGV[0], $ARGV[1])', password, `$2b$05$${salt}`])
  if (!stdout.startsWith('$2b$')) throw new Error('crypt(3) on this machine does not implement bcrypt')
  return stdout
}

async function makeCertificates(dir: string): Promise<{ ca: string; cert: string; key: string }> {
  const ca = join(dir, 'ca.crt')
  const caKey = join(dir, 'ca.key')
  const key = join(dir, 'server.key')
  const csr = join(dir, 'server.csr')
  const cert = join(dir, 'server.crt')
  const ext = join(dir, 'server.ext')
  await run('openssl', ['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', caKey, '-out', ca, '-days', '1', '-subj', '/CN=kinetic-test-ca'])
  await run('openssl', ['req', '-newkey', 'rsa:2048', '-nodes', '-keyout', key, '-out', csr, '-subj', '/CN=127.0.0.1'])
  writeFileSync(ext, 'subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth\n')
  await run('openssl', ['x509', '-req', '-in', csr, '-CA', ca, '-CAkey', caKey, '-CAcreateserial', '-out', cert, '-days', '1', '-extfile', ext])
  return { ca, cert, key }
}

function probe(url: string, ca: string | undefined): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = (url.startsWith('https:') ? httpsRequest : httpRequest)(url, { ca, agent: false }, (res) => {
      res.resume()
      res.on('end', () => resolve(res.statusCode ?? 0))
    })
    req.on('error', reject)
    req.end()
  })
}

/** Starts `docker-registry serve` on a free 127.0.0.1 port; resolves once /v2/ answers. */
export async function startRegistry(flavour: RegistryFlavour = {}): Promise<RealRegistry> {
  const dir = mkdtempSync(join(tmpdir(), 'kinetic-registry-'))
  let child: ChildProcess | undefined
  // If the test process itself ends early (a crash, a timeout), the registry must not outlive it.
  const killOnExit = () => child?.kill('SIGKILL')
  process.once('exit', killOnExit)
  const stop = async () => {
    process.off('exit', killOnExit)
    if (child && child.exitCode === null && child.signalCode === null) {
      const exited = new Promise((done) => child!.once('exit', done))
      child.kill('SIGKILL')
      await exited
    }
    rmSync(dir, { recursive: true, force: true })
  }
  try {
    const port = await freePort()
    const storage = join(dir, 'storage')
    mkdirSync(storage)
    const lines = [
      'version: 0.1',
      'log: { level: error, accesslog: { disabled: true } }',
      `storage: { filesystem: { rootdirectory: ${JSON.stringify(storage)} }, delete: { enabled: true } }`,
      'http:',
      `  addr: 127.0.0.1:${port}`,
      `  secret: ${randomBytes(16).toString('hex')}`,
    ]
    let ca: string | undefined
    let certDir: string | undefined
    if (flavour.tls) {
      const certs = await makeCertificates(dir)
      lines.push(`  tls: { certificate: ${JSON.stringify(certs.cert)}, key: ${JSON.stringify(certs.key)} }`)
      certDir = join(dir, 'certs.d')
      mkdirSync(certDir)
      ca = readFileSync(certs.ca, 'utf8')
      writeFileSync(join(certDir, 'ca.crt'), ca)
    }
    if (flavour.auth) {
      const htpasswd = join(dir, 'htpasswd')
      writeFileSync(htpasswd, `${flavour.auth.user}:${await bcrypt(flavour.auth.password)}\n`)
      lines.push(`auth: { htpasswd: { realm: kinetic-test, path: ${JSON.stringify(htpasswd)} } }`)
    }
    const config = join(dir, 'config.yml')
    writeFileSync(config, `${lines.join('\n')}\n`)
    let output = ''
    child = spawn('docker-registry', ['serve', config], { stdio: ['ignore', 'pipe', 'pipe'] })
    child.stdout!.on('data', (chunk: Buffer) => (output += chunk.toString()))
    child.stderr!.on('data', (chunk: Buffer) => (output += chunk.toString()))
    const base = `${flavour.tls ? 'https' : 'http'}://127.0.0.1:${port}/v2/`
    for (let attempt = 0; ; attempt++) {
      if (child.exitCode !== null) throw new Error(`docker-registry exited with ${child.exitCode}: ${output.slice(-1000)}`)
      const status = await probe(base, ca).catch(() => 0)
      if (status === 200 || status === 401) break
      if (attempt > 200) throw new Error(`docker-registry did not answer on ${base}: ${output.slice(-1000)}`)
      await new Promise((done) => setTimeout(done, 50))
    }
    const host = `127.0.0.1:${port}`
    return {
      host,
      ca,
      certDir,
      auth: flavour.auth,
      skopeoFlags(prefix = '') {
        const flag = (name: string) => `--${prefix ? `${prefix}-` : ''}${name}`
        const flags = certDir ? [flag('cert-dir'), certDir] : [flag('tls-verify=false')]
        if (flavour.auth) flags.push(flag('creds'), `${flavour.auth.user}:${flavour.auth.password}`)
        return flags
      },
      stop,
    }
  } catch (error) {
    await stop()
    throw error
  }
}

import { spawnSync } from 'node:child_process'
import { generateKeyPairSync, randomBytes } from 'node:crypto'
import { readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { KubeConfig } from '@kubernetes/client-node'
import { ControlPlaneError } from './processes.js'

/**
 * The certificates and credentials of a test control plane: its CA, serving certificate and
 * ServiceAccount signing keys, static tokens, and kubeconfigs for a bearer token.
 */

/** What a control plane for a real node adds. */
export interface NodeServing {
  /** The node's address: the API server listens and advertises here. */
  address: string
  /** Static token identities for the node's components, by name. */
  identities: Record<string, { user: string; groups: string[] }>
}

/** Where the control plane's certificates and keys are, and its static tokens. */
export interface Pki {
  caCert: string; caPem: string; servingCert: string; servingKey: string
  saPublic: string; saPrivate: string; tokens: string; adminToken: string
  kubeletClientCert: string; kubeletClientKey: string; identityTokens: Record<string, string>
}

// A CA and a serving certificate for 127.0.0.1 (openssl), the ServiceAccount signing key pair
// (node:crypto), and a static admin token in group system:masters. For a node also: the node's
// address in the serving certificate, the API server's client certificate for kubelets, and a
// static token per node component.
export function makePki(pki: string, node?: NodeServing): Pki {
  const openssl = opensslIn(pki)
  openssl(['req', '-x509', '-new', '-nodes', '-newkey', 'rsa:2048', '-keyout', 'ca.key', '-out', 'ca.crt', '-days', '30',
    '-subj', '/CN=kinetic-test-ca', '-addext', 'basicConstraints=critical,CA:TRUE', '-addext', 'keyUsage=critical,keyCertSign,cRLSign,digitalSignature'])
  signCertificate(openssl, pki, 'serving', '/CN=kube-apiserver', 'extendedKeyUsage=serverAuth',
    `subjectAltName=IP:127.0.0.1,IP:10.0.0.1,DNS:localhost,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,DNS:kubernetes.default.svc.cluster.local${node ? `,IP:${node.address}` : ''}`)
  const sa = generateKeyPairSync('rsa', { modulusLength: 2048 })
  writeFileSync(join(pki, 'sa.pub'), sa.publicKey.export({ type: 'spki', format: 'pem' }))
  writeFileSync(join(pki, 'sa.key'), sa.privateKey.export({ type: 'pkcs1', format: 'pem' }), { mode: 0o600 })
  if (node) signCertificate(openssl, pki, 'kubelet-client', '/O=system:masters/CN=kube-apiserver-kubelet-client', 'extendedKeyUsage=clientAuth')
  const adminToken = randomBytes(24).toString('hex')
  const identityTokens: Record<string, string> = {}
  const lines = [`${adminToken},admin,admin-uid,"system:masters"`]
  for (const [name, identity] of Object.entries(node?.identities ?? {})) {
    identityTokens[name] = randomBytes(24).toString('hex')
    lines.push(`${identityTokens[name]},${identity.user},${identity.user}-uid,"${identity.groups.join(',')}"`)
  }
  writeFileSync(join(pki, 'tokens.csv'), `${lines.join('\n')}\n`, { mode: 0o600 })
  return {
    kubeletClientCert: join(pki, 'kubelet-client.crt'), kubeletClientKey: join(pki, 'kubelet-client.key'), identityTokens,
    caCert: join(pki, 'ca.crt'), caPem: readFileSync(join(pki, 'ca.crt'), 'utf8'),
    servingCert: join(pki, 'serving.crt'), servingKey: join(pki, 'serving.key'),
    saPublic: join(pki, 'sa.pub'), saPrivate: join(pki, 'sa.key'),
    tokens: join(pki, 'tokens.csv'), adminToken,
  }
}

/**
 * Makes `<name>.key` and `<name>.crt` in `pki`, signed by its CA, with the subject and the
 * extensions given (one per line of the extension file).
 */
export function signCertificate(openssl: (args: string[]) => void, pki: string, name: string, subject: string, ...extensions: string[]): void {
  writeFileSync(join(pki, `${name}.ext`), ['basicConstraints=critical,CA:FALSE', 'keyUsage=critical,digitalSignature,keyEncipherment', ...extensions].join('\n'))
  openssl(['req', '-new', '-nodes', '-newkey', 'rsa:2048', '-keyout', `${name}.key`, '-out', `${name}.csr`, '-subj', subject])
  openssl(['x509', '-req', '-in', `${name}.csr`, '-CA', 'ca.crt', '-CAkey', 'ca.key', '-CAcreateserial', '-out', `${name}.crt`, '-days', '30', '-extfile', `${name}.ext`])
}

/** Runs openssl in `cwd`; throws a ControlPlaneError with its stderr when it fails. */
export function opensslIn(cwd: string): (args: string[]) => void {
  return (args) => {
    const r = spawnSync('openssl', args, { cwd, encoding: 'utf8' })
    if (r.error) throw new ControlPlaneError(`openssl is needed to make certificates: ${r.error.message}`)
    if (r.status !== 0) throw new ControlPlaneError(`openssl ${args[0]} failed: ${r.stderr}`)
  }
}

/** A KubeConfig for a bearer token against the server, trusting its CA. */
export function tokenKubeConfig(server: string, caPem: string, user: string, token: string): KubeConfig {
  const kc = new KubeConfig()
  kc.loadFromOptions({
    clusters: [{ name: 'test', server, caData: Buffer.from(caPem).toString('base64'), skipTLSVerify: false }],
    users: [{ name: user, token }],
    contexts: [{ name: user, cluster: 'test', user }],
    currentContext: user,
  })
  return kc
}

// The node agents: kubelet (cgroupfs driver, containerd's CRI, the node's address, cluster DNS)
// and kube-proxy in iptables mode. Both are started detached, named by their folder.
import { spawn } from 'node:child_process'
import { mkdirSync, openSync, writeFileSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { opensslIn, signCertificate } from '../pki.js'
import { containerdSocket, POD_NETWORK } from './containerd.js'
import { NodeError, nodePath } from './host.js'

/** The cluster DNS Service's address (in the control plane's 10.0.0.0/24 Service range). */
export const CLUSTER_DNS_IP = '10.0.0.10'
export const CLUSTER_DOMAIN = 'cluster.local'

export interface KubeletOptions {
  dir: string
  binDir: string
  nodeName: string
  address: string
  /** The control plane's CA (certificate and key): the kubelet trusts its clients and gets a serving certificate from it. */
  caCert: string
  caKey: string
  kubeconfig: string
  port: number
  healthzPort: number
  log: string
}

export function startKubelet(opts: KubeletOptions): number {
  const root = join(opts.dir, 'kubelet')
  mkdirSync(join(root, 'pki'), { recursive: true })
  // The API server does not check a kubelet's certificate, but a real one is what clients expect.
  const pkiDir = dirname(opts.caCert)
  signCertificate(opensslIn(pkiDir), pkiDir, 'kubelet-serving', `/O=system:nodes/CN=system:node:${opts.nodeName}`, 'extendedKeyUsage=serverAuth', `subjectAltName=IP:${opts.address},DNS:${opts.nodeName}`)
  const config = join(root, 'config.yaml')
  writeFileSync(config, JSON.stringify({
    apiVersion: 'kubelet.config.k8s.io/v1beta1',
    kind: 'KubeletConfiguration',
    // No systemd here, and cgroup v1: the cgroupfs driver, no QoS tree to manage.
    cgroupDriver: 'cgroupfs',
    cgroupsPerQOS: false,
    enforceNodeAllocatable: [],
    failSwapOn: false,
    containerRuntimeEndpoint: `unix://${containerdSocket(opts.dir)}`,
    address: opts.address,
    port: opts.port,
    readOnlyPort: 0,
    healthzBindAddress: '127.0.0.1',
    healthzPort: opts.healthzPort,
    tlsCertFile: join(pkiDir, 'kubelet-serving.crt'),
    tlsPrivateKeyFile: join(pkiDir, 'kubelet-serving.key'),
    authentication: { anonymous: { enabled: false }, webhook: { enabled: true }, x509: { clientCAFile: opts.caCert } },
    authorization: { mode: 'Webhook' },
    clusterDNS: [CLUSTER_DNS_IP],
    clusterDomain: CLUSTER_DOMAIN,
    resolvConf: '/etc/resolv.conf',
    podLogsDir: join(root, 'pod-logs'),
    volumePluginDir: join(root, 'volume-plugins'),
    serializeImagePulls: false,
    // A development node: evict only when the disk is all but full.
    evictionHard: { 'memory.available': '100Mi', 'nodefs.available': '1%', 'imagefs.available': '1%' },
    imageGCHighThresholdPercent: 100,
    imageGCLowThresholdPercent: 99,
    maxPods: 110,
  }, null, 2))
  return spawnDetachedIn(opts.log, join(opts.binDir, 'kubelet'), [
    `--config=${config}`, `--kubeconfig=${opts.kubeconfig}`, `--root-dir=${root}`, `--cert-dir=${join(root, 'pki')}`,
    `--hostname-override=${opts.nodeName}`, `--node-ip=${opts.address}`, '--v=1',
  ], 'kubelet')
}

export interface KubeProxyOptions {
  dir: string
  binDir: string
  nodeName: string
  address: string
  kubeconfig: string
  healthzPort: number
  metricsPort: number
  log: string
}

export function startKubeProxy(opts: KubeProxyOptions): number {
  const config = join(opts.dir, 'kube-proxy.yaml')
  writeFileSync(config, JSON.stringify({
    apiVersion: 'kubeproxy.config.k8s.io/v1alpha1',
    kind: 'KubeProxyConfiguration',
    mode: 'iptables',
    clientConnection: { kubeconfig: opts.kubeconfig },
    clusterCIDR: POD_NETWORK.cidr,
    hostnameOverride: opts.nodeName,
    bindAddress: opts.address,
    healthzBindAddress: `127.0.0.1:${opts.healthzPort}`,
    metricsBindAddress: `127.0.0.1:${opts.metricsPort}`,
    // Leave the host's conntrack table size and timeouts as they are.
    conntrack: { maxPerCore: 0, min: 0 },
    // NodePorts on 127.0.0.1 would need route_localnet; nothing here uses them.
    iptables: { localhostNodePorts: false },
  }, null, 2))
  return spawnDetachedIn(opts.log, join(opts.binDir, 'kube-proxy'), [`--config=${config}`, '--v=1'], 'kube-proxy')
}

function spawnDetachedIn(log: string, bin: string, args: string[], component: string): number {
  const out = openSync(log, 'a')
  const child = spawn(bin, args, { stdio: ['ignore', out, out], detached: true, env: { ...process.env, PATH: nodePath() } })
  child.on('error', () => undefined)
  child.unref()
  if (child.pid === undefined) throw new NodeError(component, `could not start ${bin}`, log)
  return child.pid
}

// The host side of a real node: what it needs of the machine before it starts (root, Debian
// packages, an address, free ports), the kernel settings it changes, and the clean-up that
// leaves no process, mount, network namespace, bridge or iptables rule behind.
import { spawnSync } from 'node:child_process'
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs'
import { createServer } from 'node:net'

/** A step of the node that failed: one line naming the component, the cause and its log. */
export class NodeError extends Error {
  override name = 'NodeError'
  constructor(component: string, cause: string, log?: string) {
    super(`${component}: ${cause}${log ? ` (log: ${log})` : ''}`)
  }
}

/** Debian packages a node needs, with a file each provides. */
export const DEBIAN_PARTS: ReadonlyArray<{ pkg: string; file: string }> = [
  { pkg: 'containerd', file: '/usr/bin/containerd' },
  { pkg: 'runc', file: '/usr/sbin/runc' },
  { pkg: 'containernetworking-plugins', file: '/usr/lib/cni/bridge' },
  { pkg: 'iptables', file: '/usr/sbin/iptables' },
  { pkg: 'conntrack', file: '/usr/sbin/conntrack' },
  { pkg: 'docker-registry', file: '/usr/bin/docker-registry' },
  { pkg: 'gcc', file: '/usr/bin/gcc' },
  { pkg: 'libc6-dev', file: '/usr/lib/x86_64-linux-gnu/libc.a' },
  { pkg: 'iproute2', file: '/usr/bin/ip' },
]

/** Why this machine cannot run a node (not root, a missing package), or undefined. */
export function nodePrerequisiteGap(): string | undefined {
  if (process.getuid?.() !== 0) return 'a node needs root (kubelet, containerd, network namespaces, iptables)'
  const missing = DEBIAN_PARTS.filter((p) => !existsSync(p.file) && !existsSync(p.file.replace('/usr/sbin/', '/sbin/')))
  if (missing.length > 0) return `missing Debian packages: ${missing.map((p) => p.pkg).join(' ')} (apt-get install ${missing.map((p) => p.pkg).join(' ')})`
  return undefined
}

/** The address of the interface the default route leaves by: the node's InternalIP. */
export function defaultRouteAddress(): string {
  const route = sh('ip', ['-4', '-o', 'route', 'get', '1.1.1.1'])
  const src = /\bsrc\s+(\d+\.\d+\.\d+\.\d+)/.exec(route.stdout)?.[1]
  if (!src) throw new NodeError('host', `no IPv4 default route to take the node's address from (ip route get: ${route.stderr.trim() || route.stdout.trim()})`)
  return src
}

/** Throws a NodeError naming the first of `ports` something already listens on at `host`. */
export async function assertPortsFree(host: string, ports: Array<{ port: number; what: string }>): Promise<void> {
  for (const { port, what } of ports) {
    const free = await new Promise<boolean>((resolve) => {
      const srv = createServer()
      srv.once('error', () => resolve(false))
      srv.listen(port, host, () => srv.close(() => resolve(true)))
    })
    if (!free) throw new NodeError(what, `port ${host}:${port} is in use`)
  }
}

/** The kernel settings a node needs: forwarding, and bridged traffic through iptables (Services). */
export const NODE_SYSCTLS = { 'net.ipv4.ip_forward': '1', 'net.bridge.bridge-nf-call-iptables': '1' } as const

/** Sets the node's sysctls and returns what they were, to restore on stop. */
export function applySysctls(): Record<string, string> {
  const before: Record<string, string> = {}
  for (const [key, value] of Object.entries(NODE_SYSCTLS)) {
    const path = `/proc/sys/${key.replaceAll('.', '/')}`
    before[key] = readFileSync(path, 'utf8').trim()
    writeFileSync(path, value)
  }
  return before
}

export function restoreSysctls(before: Record<string, string>): void {
  for (const [key, value] of Object.entries(before)) {
    try {
      writeFileSync(`/proc/sys/${key.replaceAll('.', '/')}`, value)
    } catch {
      // a setting the kernel no longer has
    }
  }
}

/** Chains of Kubernetes' node components (kubelet, kube-proxy) and of the CNI plugins. */
const NODE_CHAIN = /^(KUBE-|CNI-)/

/** Names of iptables chains a node made that exist now (empty when the host is clean). */
export function nodeChains(): string[] {
  const out: string[] = []
  for (const tool of ['iptables-save', 'ip6tables-save']) {
    const saved = sh(tool, [])
    for (const line of saved.stdout.split('\n')) {
      const chain = /^:(\S+)/.exec(line)?.[1]
      if (chain && NODE_CHAIN.test(chain)) out.push(chain)
    }
  }
  return [...new Set(out)]
}

/**
 * Removes every chain a node's components made (KUBE-*, CNI-*) and every rule that jumps to
 * one, in all tables, keeping everything else: each table is saved, filtered and restored whole.
 */
export function removeNodeChains(): void {
  for (const [save, restore] of [['iptables-save', 'iptables-restore'], ['ip6tables-save', 'ip6tables-restore']] as const) {
    const saved = sh(save, [])
    if (saved.status !== 0) continue
    const kept = withoutNodeChains(saved.stdout)
    if (kept !== saved.stdout) sh(restore, [], kept)
  }
}

/** Pure: iptables-save output without the KUBE- and CNI- chains and the rules that are in or jump to them. */
export function withoutNodeChains(saved: string): string {
  return saved
    .split('\n')
    .filter((line) => {
      const declared = /^:(\S+)/.exec(line)?.[1]
      if (declared) return !NODE_CHAIN.test(declared)
      const rule = /^-A\s+(\S+)(.*)$/.exec(line)
      if (rule) return !NODE_CHAIN.test(rule[1] as string) && !/\s-[jg]\s+(KUBE-|CNI-)/.test(rule[2] as string)
      return true
    })
    .join('\n')
}

/** Network namespaces under /run/netns now. */
export function netnsNames(): string[] {
  try {
    return readdirSync('/run/netns')
  } catch {
    return []
  }
}

/** Deletes the network namespaces that were not there before the node started. */
export function removeNewNetns(before: readonly string[]): void {
  for (const name of netnsNames()) if (!before.includes(name)) sh('ip', ['netns', 'delete', name])
}

/** Unmounts everything mounted at or below `dir`, deepest first (lazily, as a last resort). */
export function unmountUnder(dir: string): void {
  for (let round = 0; round < 5; round++) {
    const mounts = mountsUnder(dir)
    if (mounts.length === 0) return
    for (const m of mounts.sort((a, b) => b.length - a.length)) {
      if (sh('umount', [m]).status !== 0) sh('umount', ['-l', m])
    }
  }
}

export function mountsUnder(dir: string): string[] {
  return readFileSync('/proc/mounts', 'utf8')
    .split('\n')
    .map((l) => (l.split(' ')[1] ?? '').replace(/\\040/g, ' '))
    .filter((m) => m === dir || m.startsWith(`${dir}/`))
}

export function linkExists(name: string): boolean {
  return existsSync(`/sys/class/net/${name}`)
}

export function deleteLink(name: string): void {
  if (linkExists(name)) sh('ip', ['link', 'delete', name])
}

export function sh(cmd: string, args: string[], input?: string): { status: number; stdout: string; stderr: string } {
  const r = spawnSync(cmd, args, { encoding: 'utf8', input, env: { ...process.env, PATH: nodePath() }, maxBuffer: 64 * 1024 * 1024 })
  return { status: r.status ?? 1, stdout: r.stdout ?? '', stderr: r.error ? r.error.message : (r.stderr ?? '') }
}

/** PATH with the sbin folders, where iptables, runc and ip live. */
export function nodePath(): string {
  const parts = (process.env.PATH ?? '').split(':').filter(Boolean)
  for (const p of ['/usr/local/sbin', '/usr/local/bin', '/usr/sbin', '/usr/bin', '/sbin', '/bin']) if (!parts.includes(p)) parts.push(p)
  return parts.join(':')
}

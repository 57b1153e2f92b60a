// The node's container runtime: Debian's containerd with its CRI plugin and runc (cgroupfs: no
// systemd here), pulling from the local registry over plain HTTP, pods wired by the CNI bridge and
// host-local plugins from Debian. Everything it keeps lives under the node's folder.
import { spawn, spawnSync } from 'node:child_process'
import { existsSync, mkdirSync, openSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { NodeError, nodePath } from './host.js'

/** The pods' network: one bridge, one /24 of addresses handed out by host-local. */
export const POD_NETWORK = { bridge: 'kinetic0', subnet: '10.244.0.0/24', cidr: '10.244.0.0/16' } as const

export interface ContainerdOptions {
  dir: string
  /** The local registry's port on 127.0.0.1. */
  registryPort: number
  /** The pause image by digest. */
  sandboxImage: string
  log: string
}

/** Where containerd listens (the kubelet's runtime endpoint, and ctr's --address). */
export function containerdSocket(dir: string): string {
  return join(dir, 'containerd', 'containerd.sock')
}

/** Writes containerd's config and the CNI network, starts containerd, resolves once its socket answers. */
export async function startContainerd(opts: ContainerdOptions): Promise<number> {
  const root = join(opts.dir, 'containerd')
  const socket = containerdSocket(opts.dir)
  if (socket.length > 100) throw new NodeError('containerd', `the socket path ${socket} is too long for a unix socket; use a shorter --dir`)
  for (const d of ['root', 'state', 'opt', 'net.d']) mkdirSync(join(root, d), { recursive: true })
  writeFileSync(join(root, 'net.d', '10-kinetic.conflist'), JSON.stringify(cniNetwork(join(root, 'ipam')), null, 2))
  const config = join(root, 'config.toml')
  writeFileSync(config, containerdConfig(opts, root, socket))
  const out = openSync(opts.log, 'a')
  const child = spawn('containerd', ['--config', config], { stdio: ['ignore', out, out], detached: true, env: { ...process.env, PATH: nodePath() } })
  child.on('error', () => undefined)
  child.unref()
  const deadline = Date.now() + 30_000
  for (;;) {
    if (child.exitCode !== null) throw new NodeError('containerd', `exited (${child.exitCode})`, opts.log)
    if (existsSync(socket) && ctr(opts.dir, ['version']).status === 0) return child.pid as number
    if (Date.now() > deadline) throw new NodeError('containerd', 'its socket did not answer within 30 s', opts.log)
    await new Promise((r) => setTimeout(r, 200))
  }
}

/** Runs Debian's `ctr` against this node's containerd, in the CRI namespace. */
export function ctr(dir: string, args: string[]): { status: number; stdout: string; stderr: string } {
  const r = spawnSync('ctr', ['--address', containerdSocket(dir), '--namespace', 'k8s.io', ...args], { encoding: 'utf8', timeout: 30_000 })
  return { status: r.status ?? 1, stdout: r.stdout ?? '', stderr: r.stderr ?? r.error?.message ?? '' }
}

/**
 * Kills and deletes every container this node's containerd runs (the kubelet is already
 * stopped), so no container process outlives the node.
 */
export function removeAllContainers(dir: string): void {
  if (!existsSync(containerdSocket(dir))) return
  const tasks = ctr(dir, ['tasks', 'list', '--quiet']).stdout.split('\n').filter(Boolean)
  for (const id of tasks) ctr(dir, ['tasks', 'kill', '--signal', 'SIGKILL', id])
  for (const id of tasks) {
    for (let i = 0; i < 50 && taskDeleteOutcome(ctr(dir, ['tasks', 'delete', id])) === 'retry'; i++) spawnSync('sleep', ['0.1'])
  }
  for (const id of ctr(dir, ['containers', 'list', '--quiet']).stdout.split('\n').filter(Boolean)) ctr(dir, ['containers', 'delete', id])
}

/**
 * What one `ctr tasks delete` means: done, already gone (containerd reaped the killed task
 * itself: `no running task found: task <id> not found`), or still stopping (retry). Retrying a
 * gone task 50 times cost about 8 s per container, minutes for a node running Knative.
 */
export function taskDeleteOutcome(r: { status: number; stderr: string }): 'deleted' | 'gone' | 'retry' {
  if (r.status === 0) return 'deleted'
  return /not found/.test(r.stderr) ? 'gone' : 'retry'
}

function cniNetwork(ipamDir: string): object {
  return {
    cniVersion: '1.0.0',
    name: 'kinetic',
    plugins: [
      {
        type: 'bridge',
        bridge: POD_NETWORK.bridge,
        isGateway: true,
        ipMasq: true,
        // A pod reaching itself through its Service comes back over the same bridge port.
        hairpinMode: true,
        ipam: { type: 'host-local', ranges: [[{ subnet: POD_NETWORK.subnet }]], routes: [{ dst: '0.0.0.0/0' }], dataDir: ipamDir },
      },
      { type: 'portmap', capabilities: { portMappings: true } },
    ],
  }
}

function containerdConfig(opts: ContainerdOptions, root: string, socket: string): string {
  const cri = 'plugins."io.containerd.grpc.v1.cri"'
  const registry = `127.0.0.1:${opts.registryPort}`
  return `version = 2
root = ${JSON.stringify(join(root, 'root'))}
state = ${JSON.stringify(join(root, 'state'))}

[grpc]
  address = ${JSON.stringify(socket)}

[ttrpc]
  address = ${JSON.stringify(`${socket}.ttrpc`)}

[plugins."io.containerd.internal.v1.opt"]
  path = ${JSON.stringify(join(root, 'opt'))}

[${cri}]
  sandbox_image = ${JSON.stringify(opts.sandboxImage)}
  # Root here lacks CAP_SYS_RESOURCE: runc cannot lower oom_score_adj to the kubelet's -998.
  restrict_oom_score_adj = true
  enable_selinux = false

[${cri}.containerd]
  snapshotter = "overlayfs"
  default_runtime_name = "runc"

[${cri}.containerd.runtimes.runc]
  runtime_type = "io.containerd.runc.v2"

[${cri}.containerd.runtimes.runc.options]
  SystemdCgroup = false

[${cri}.cni]
  bin_dir = "/usr/lib/cni"
  conf_dir = ${JSON.stringify(join(root, 'net.d'))}

[${cri}.registry.mirrors.${JSON.stringify(registry)}]
  endpoint = [${JSON.stringify(`http://${registry}`)}]

# Images named localhost/<repo>, as local builds tag them (purko's examples name one), come from the
# same registry: push them as 127.0.0.1:<port>/<repo>.
[${cri}.registry.mirrors."localhost"]
  endpoint = [${JSON.stringify(`http://${registry}`)}]
`
}

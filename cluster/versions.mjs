// The versions Kinetic's real cluster is built from (scripts/kube-build.mjs) and where the built
// binaries live. One place, read by the build script, `npm run cluster` and the test tiers.
import { homedir } from 'node:os'
import { join } from 'node:path'

export const KUBE_VERSIONS = {
  // v1.34 is the newest line whose kubelet runs on cgroup v1 without failCgroupV1: false.
  kubernetes: 'v1.34.4',
  // Kubernetes 1.34 is built against etcd's 3.6 client; the server is the newest 3.6 patch.
  etcd: 'v3.6.16',
  // The registry serves CoreDNS from v1.14.3 on; the newest 1.14 patch.
  coredns: 'v1.14.7',
}

/** What the cluster tier starts. */
export const CONTROL_PLANE_BINARIES = ['etcd', 'kube-apiserver', 'kube-controller-manager']

/** What a real node (npm run cluster) adds. */
export const NODE_BINARIES = ['kube-scheduler', 'kubelet', 'kube-proxy', 'kubectl', 'coredns']

/** `${XDG_CACHE_HOME:-$HOME/.cache}/kinetic/kube/<versions>`: outside the clone, kept across clones. */
export function kubeCacheDir(env = process.env) {
  const base = env.XDG_CACHE_HOME || join(env.HOME || homedir(), '.cache')
  const v = KUBE_VERSIONS
  return join(base, 'kinetic', 'kube', `${v.kubernetes}-etcd${v.etcd}-coredns${v.coredns}`)
}

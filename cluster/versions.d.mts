// Types for cluster/versions.mjs, so TypeScript callers are checked against it.
export declare const KUBE_VERSIONS: { kubernetes: string; etcd: string; coredns: string }
export declare const CONTROL_PLANE_BINARIES: readonly ['etcd', 'kube-apiserver', 'kube-controller-manager']
export declare const NODE_BINARIES: readonly ['kube-scheduler', 'kubelet', 'kube-proxy', 'kubectl', 'coredns']
export declare function kubeCacheDir(env?: Record<string, string | undefined>): string
export declare const KNATIVE_VERSIONS: { serving: string; eventing: string }
export interface KnativeCommand { pkg: string; name: string }
export declare const KNATIVE_COMMANDS: { serving: KnativeCommand[]; eventing: KnativeCommand[] }
export declare function knativeCacheDir(env?: Record<string, string | undefined>): string
export declare const KN_VERSION: string
export declare const KN_PACKAGE: string
export declare function knCacheDir(env?: Record<string, string | undefined>): string
export declare const TRAEFIK_VERSION: string
export declare const OTELCOL_VERSIONS: { core: string; stable: string }
export declare const OTELCOL_BINARY: string
export declare function otelcolCacheDir(env?: Record<string, string | undefined>): string

// Types for scripts/registry-client.mjs, so TypeScript callers (the tests) are checked against it.

/** A parsed `<host>/<repo>[:tag][@sha256:...]` reference; `name` is `<host>/<repo>`. */
export interface ImageReference {
  host: string
  repository: string
  tag: string | undefined
  digest: string | undefined
  name: string
}

/** A content descriptor inside a manifest. */
export interface Descriptor {
  mediaType: string
  digest: string
  size: number
  platform?: { os: string; architecture: string; variant?: string }
  annotations?: Record<string, string>
}

/** An image manifest (OCI or Docker schema 2). */
export interface ImageManifest {
  schemaVersion: number
  mediaType?: string
  config: Descriptor
  layers: Descriptor[]
  annotations?: Record<string, string>
}

/** How to reach a registry: `insecure` allows http, `tls`/`ca` force https and `ca` (PEM) is trusted. */
export interface RegistryTransport {
  insecure?: boolean
  tls?: boolean
  ca?: string
  fetch?: typeof globalThis.fetch
}

/** Splits an image reference; throws on a missing host or invalid parts. */
export declare function parseReference(ref: string): ImageReference
/** A fetch-shaped function over node:https trusting `ca` (PEM) besides Node's roots; redirects are left to the caller. */
export declare function fetchTrusting(ca: string): typeof globalThis.fetch

/** One blob to push: what it is (for error messages), its digest and bytes. */
export interface PushBlob {
  what: string
  digest: string
  data: Uint8Array
}

/** Pushes the blobs the registry lacks, then the manifest (last) under `reference`; resolves to the manifest digest. */
export declare function pushImage(
  client: RegistryClient,
  repository: string,
  blobs: PushBlob[],
  manifestBytes: Uint8Array,
  mediaType: string,
  reference: string,
): Promise<string>

/** A minimal OCI Distribution client for one registry host. */
export declare class RegistryClient {
  constructor(host: string, options?: RegistryTransport & { user?: string; password?: string })
  readonly host: string
  readonly base: string
  request(method: string, pathOrUrl: string, init?: { headers?: Record<string, string>; body?: Uint8Array }): Promise<Response>
}

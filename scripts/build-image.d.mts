// Types for scripts/build-image.mjs, so TypeScript callers (the tests) are checked against it.

/** The command every container of the image runs unless it names its own: the step executor. */
export declare const ENTRYPOINT: string[]
/** The non-root user the image runs as. */
export declare const USER: string
/** Where dist/ lands inside the image; also the working directory. */
export declare const APP_DIR: string

/** A parsed `<host>/<repo>[:tag][@sha256:...]` reference; `name` is `<host>/<repo>`. */
export interface ImageReference {
  host: string
  repository: string
  tag: string | undefined
  digest: string | undefined
  name: string
}

/** One archive member; directory paths end with `/`. Mode defaults to 0644 (file) / 0755 (dir), owner to 0:0. */
export interface TarEntry {
  path: string
  type: 'dir' | 'file' | 'symlink'
  data?: Uint8Array | string
  /** The link target of a symlink. */
  target?: string
  mode?: number
  uid?: number
  gid?: number
}

/** The built app layer: uncompressed tar, its gzip, the gzip's digest and size, and the tar's digest (diff_id). */
export interface AppLayer {
  tar: Buffer
  gzip: Buffer
  digest: string
  diffId: string
  size: number
}

/** An OCI image config as far as Kinetic reads and writes it. */
export interface ImageConfig {
  architecture?: string
  os?: string
  created?: string
  config?: {
    Env?: string[]
    Entrypoint?: string[] | null
    Cmd?: string[] | null
    WorkingDir?: string
    User?: string
    [key: string]: unknown
  }
  rootfs: { type: string; diff_ids: string[] }
  history?: Array<Record<string, unknown>>
  [key: string]: unknown
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

/** Options of buildImage; `user`/`password` default to REGISTRY_USER/REGISTRY_PASSWORD. */
export interface BuildImageOptions {
  base: string
  to: string
  dist?: string
  platform?: string
  insecure?: boolean
  tls?: boolean
  ca?: string
  withSourcemaps?: boolean
  user?: string
  password?: string
  fetch?: typeof globalThis.fetch
  log?: (line: string) => void
}

/** What buildImage pushed. */
export interface BuildImageResult {
  reference: string
  name: string
  digest: string
  manifest: ImageManifest
  config: ImageConfig
  layer: AppLayer
}

/** Returns the lowercase hex sha256 of `data` prefixed with `sha256:`. */
export declare function sha256Digest(data: Uint8Array | string): string
/** Splits an image reference; throws on a missing host or invalid parts. */
export declare function parseReference(ref: string): ImageReference
/** Writes a reproducible POSIX ustar archive of `entries`. */
export declare function createTar(entries: TarEntry[]): Buffer
/** Gzips `data` with a header that depends only on the input. */
export declare function deterministicGzip(data: Uint8Array, level?: number): Buffer
/** Builds the app layer from a dist folder. */
export declare function buildAppLayer(distDir: string, options?: { withSourcemaps?: boolean }): AppLayer
/** Returns the image config for the base config plus the app layer. */
export declare function appImageConfig(baseConfig: ImageConfig, diffId: string): ImageConfig
/** Builds and pushes the image. */
export declare function buildImage(options: BuildImageOptions): Promise<BuildImageResult>
/** Points the `kinetic` image entry of `<dir>/kustomization.yaml` at `name@digest`; returns the file path. */
export declare function setKustomizeImage(dir: string, name: string, digest: string): string
/** Runs the CLI; resolves to the exit code. */
export declare function main(argv: string[]): Promise<number>

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

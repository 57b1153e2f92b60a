// Types for scripts/image-layer.mjs, so TypeScript callers (the tests) are checked against it.

/** The command every container of the image runs unless it names its own: the step executor. */
export declare const ENTRYPOINT: string[]
/** The non-root user the image runs as. */
export declare const USER: string
/** Where dist/ lands inside the image; also the working directory. */
export declare const APP_DIR: string

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

/** Returns the lowercase hex sha256 of `data` prefixed with `sha256:`. */
export declare function sha256Digest(data: Uint8Array | string): string
/** Writes a reproducible POSIX ustar archive of `entries`. */
export declare function createTar(entries: TarEntry[]): Buffer
/** Gzips `data` with a header that depends only on the input. */
export declare function deterministicGzip(data: Uint8Array, level?: number): Buffer
/** Builds the app layer from a dist folder. */
export declare function buildAppLayer(distDir: string, options?: { withSourcemaps?: boolean }): AppLayer
/** Returns the image config for the base config plus the app layer. */
export declare function appImageConfig(baseConfig: ImageConfig, diffId: string): ImageConfig

// Types for scripts/build-base-image.mjs, so TypeScript callers (the tests) are checked against it.
import type { AppLayer, ImageConfig, TarEntry } from './image-layer.mjs'
import type { ImageManifest, RegistryTransport } from './registry-client.mjs'

/** Where the CA bundle lands; also SSL_CERT_FILE. */
export declare const CA_BUNDLE: string
/** Where the Node binary lands. */
export declare const NODE_PATH: string

/** What goes into the base, read from the machine: `node` defaults to the running Node. */
export interface BaseSources {
  node?: string
  caBundle?: string
}

/** A base image built in memory. */
export interface BuiltBase {
  layer: AppLayer
  config: ImageConfig
  configBytes: Buffer
  manifest: ImageManifest
  manifestBytes: Buffer
  digest: string
}

/** Options of buildBaseImage; `built` reuses an in-memory build instead of reading the machine again. */
export interface BuildBaseImageOptions extends BaseSources, RegistryTransport {
  to: string
  user?: string
  password?: string
  built?: BuiltBase
  log?: (line: string) => void
}

/** Parses `ldd` output into the absolute library paths it lists; throws on a missing library. */
export declare function parseLdd(text: string): string[]
/** Collects the base layer's entries and what they came from. */
export declare function collectBaseFiles(options?: BaseSources): { entries: TarEntry[]; nodeVersion: string; packages: string[] }
/** The base's OCI image config. */
export declare function baseImageConfig(input: { diffId: string; nodeVersion: string; packages: string[]; architecture: string }): ImageConfig
/** Builds the base image in memory. */
export declare function buildBase(options?: BaseSources): BuiltBase
/** Builds (or takes `built`) and pushes the base; the manifest goes last. */
export declare function buildBaseImage(options: BuildBaseImageOptions): Promise<BuiltBase & { reference: string; name: string }>
/** Runs the CLI; resolves to the exit code. */
export declare function main(argv: string[]): Promise<number>

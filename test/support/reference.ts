import { existsSync } from 'node:fs'
import { dirname, join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'

const repoRoot = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..')

/**
 * The reference material that lives beside the project (`../shared/reference`: purko's CRDs and
 * examples, Knative's CRDs). Tests read it where it is rather than keeping copies of other
 * projects' files; `KINETIC_REFERENCE_DIR` points elsewhere when the layout differs.
 */
export function referenceDir(): string {
  const candidates = [
    process.env.KINETIC_REFERENCE_DIR,
    join(repoRoot, '..', 'shared', 'reference'),
    join(repoRoot, '..', '..', 'shared', 'reference'),
  ].filter((c): c is string => typeof c === 'string' && c.length > 0)
  const found = candidates.find((c) => existsSync(join(c, 'purko', 'examples')))
  if (!found) {
    throw new Error(`Reference material not found (looked in ${candidates.join(', ')}); set KINETIC_REFERENCE_DIR to the shared/reference folder`)
  }
  return found
}

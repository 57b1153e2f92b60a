// Writes crds/<plural>.purko.io.yaml and crds/kustomization.yaml from the zod schemas in shared/schemas.
import { mkdirSync, writeFileSync } from 'node:fs'
import { dirname, join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import { allCrds } from '../shared/crd/definitions.js'
import { crdFileName, renderCrdYaml, renderKustomization } from '../shared/crd/render.js'

const outDir = resolve(dirname(fileURLToPath(import.meta.url)), '..', 'crds')
mkdirSync(outDir, { recursive: true })
const crds = allCrds()
for (const crd of crds) {
  writeFileSync(join(outDir, crdFileName(crd)), renderCrdYaml(crd))
  process.stdout.write(`wrote crds/${crdFileName(crd)}\n`)
}
writeFileSync(join(outDir, 'kustomization.yaml'), renderKustomization(crds))
process.stdout.write('wrote crds/kustomization.yaml\n')

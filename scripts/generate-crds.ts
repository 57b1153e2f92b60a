// Writes crds/<plural>.purko.io.yaml and crds/Kustomization from the zod schemas in shared/schemas.
import { mkdirSync, rmSync, writeFileSync } from 'node:fs'
import { dirname, join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import { allCrds } from '../shared/crd/definitions.js'
import { CRDS_KUSTOMIZATION_FILE, crdFileName, renderCrdYaml, renderKustomization } from '../shared/crd/render.js'

const outDir = resolve(dirname(fileURLToPath(import.meta.url)), '..', 'crds')
mkdirSync(outDir, { recursive: true })
const crds = allCrds()
for (const crd of crds) {
  writeFileSync(join(outDir, crdFileName(crd)), renderCrdYaml(crd))
  process.stdout.write(`wrote crds/${crdFileName(crd)}\n`)
}
writeFileSync(join(outDir, CRDS_KUSTOMIZATION_FILE), renderKustomization(crds))
// The name of older checkouts: `kubectl apply -f crds/` would send it as an object.
rmSync(join(outDir, 'kustomization.yaml'), { force: true })
process.stdout.write(`wrote crds/${CRDS_KUSTOMIZATION_FILE}\n`)

// `npm run function -- <name>`: starts functions/<name>/main.ts, the same entry point the image runs.
import { existsSync, readdirSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'

const root = join(dirname(fileURLToPath(import.meta.url)), '..')
const name = process.argv[2]
const available = readdirSync(join(root, 'functions')).filter((f) => existsSync(join(root, 'functions', f, 'main.ts')))
if (!name || !available.includes(name)) {
  process.stderr.write(`usage: npm run function -- <name>\nfunctions: ${available.join(', ')}\n`)
  process.exit(2)
}
await import(pathToFileURL(join(root, 'functions', name, 'main.ts')).href)

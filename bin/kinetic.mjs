#!/usr/bin/env node
// The `kinetic` CLI, also the kn plugin `kn-kinetic`. tsx is resolved from this package (not
// the working directory), so the command works after `npm install -g .`, `npm link` and `npx`.
import { basename } from 'node:path'
import { register } from 'tsx/esm/api'

register()
const { main, processIo } = await import(new URL('../cli/main.ts', import.meta.url).href)
const invoked = basename(process.argv[1] ?? 'kinetic').replace(/\.m?js$/, '')
const io = processIo(invoked === 'kn-kinetic' ? 'kn kinetic' : 'kinetic')
const code = await main(process.argv.slice(2), io)
io.dispose()
process.exitCode = code

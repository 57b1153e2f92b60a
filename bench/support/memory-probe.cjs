// Preloaded into a function process by bench/memory.ts (NODE_OPTIONS=--expose-gc --require ...):
// on SIGUSR2 it collects garbage and writes process.memoryUsage() as one JSON line to the file
// named by KINETIC_BENCH_MEMORY_FILE, so the bench reads the live heap, not just RSS.
'use strict'
const { appendFileSync } = require('node:fs')

const file = process.env.KINETIC_BENCH_MEMORY_FILE
if (file) {
  let reading = 0
  process.on('SIGUSR2', () => {
    // Twice: the first pass may only queue finalizers whose objects the second one frees.
    if (typeof globalThis.gc === 'function') {
      globalThis.gc()
      globalThis.gc()
    }
    reading++
    appendFileSync(file, `${JSON.stringify({ reading, ...process.memoryUsage() })}\n`)
  })
}

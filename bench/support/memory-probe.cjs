// Preloaded into a function process by bench/memory.ts (NODE_OPTIONS=--require ...): on SIGUSR2
// it collects garbage and writes process.memoryUsage() as one JSON line to the file named by
// KINETIC_BENCH_MEMORY_FILE, so the bench reads the live heap, not just RSS.
// gc() is exposed at the first reading, not with --expose-gc on the command line: under any V8
// flag V8 refuses the function's code cache and Node's own, and the process would not start or
// hold memory as it does in its Service.
'use strict'
const { appendFileSync } = require('node:fs')
const { setFlagsFromString } = require('node:v8')
const { runInNewContext } = require('node:vm')

let gc
function collect() {
  if (!gc) {
    setFlagsFromString('--expose-gc')
    gc = runInNewContext('gc')
  }
  gc()
}

const file = process.env.KINETIC_BENCH_MEMORY_FILE
if (file) {
  let reading = 0
  process.on('SIGUSR2', () => {
    // Twice: the first pass may only queue finalizers whose objects the second one frees.
    collect()
    collect()
    reading++
    appendFileSync(file, `${JSON.stringify({ reading, ...process.memoryUsage() })}\n`)
  })
}

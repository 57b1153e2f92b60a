import { defineConfig } from 'vitest/config'

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    // Some tests spawn processes (the executor, functions, the local plane); the machine may have 2 cores.
    testTimeout: 30_000,
    hookTimeout: 60_000,
  },
})

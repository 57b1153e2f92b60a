import { defineConfig } from 'vitest/config'

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    // Finds the cluster tier's binaries once per run (test/cluster/global-setup.ts).
    globalSetup: ['test/cluster/global-setup.ts'],
    // Some tests spawn processes (the executor, functions, the local plane); the machine may have 2 cores.
    testTimeout: 30_000,
    hookTimeout: 60_000,
  },
})

// How many cases a slow property tries. The count a test passes here is what `npm test` and CI
// run. The edit loop (`npm run test:unit`) runs with KINETIC_PROPERTY_RUNS=quick: each of these
// properties then tries a quarter of its cases (never fewer than 10), so a change gets its answer
// in under two minutes; the full search still runs before anything lands.
export function propertyRuns(full: number): number {
  return process.env.KINETIC_PROPERTY_RUNS === 'quick' ? Math.max(10, Math.ceil(full / 4)) : full
}

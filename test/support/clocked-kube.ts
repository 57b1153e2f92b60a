import { EmbeddedKube, type Seed } from './embedded-kube.js'

/** An EmbeddedKube whose API server stamps creation (and deletion) times by the test clock, as a cluster would by its own. */
export class ClockedKube extends EmbeddedKube {
  constructor(readonly clock: { now: Date }, objects: Omit<Seed, 'clock'> = {}) {
    super({ ...objects, clock })
  }
}

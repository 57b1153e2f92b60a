// The emulated Broker (local/knative/broker.ts, delivery.ts, trigger-filter.ts) against what real
// Knative did with the same scenario (delivery-observed.ts, recorded and re-checked by the Knative
// tier): which Trigger gets which event, attempts per status, the ingress's answers, dead letters,
// replies, timeouts, and the attributes a subscriber sees of a PingSource's and an ApiServerSource's events.
import { describe, expect, it } from 'vitest'
import { apiserverVerb, runEmulated } from './delivery-cases.js'
import { OBSERVED_ON_KNATIVE } from './delivery-observed.js'

describe('the emulated Broker delivers as real Knative does', () => {
  it('matches the summary real Knative gave for the same Triggers and events', async () => {
    expect(await runEmulated(apiserverVerb(OBSERVED_ON_KNATIVE))).toEqual(OBSERVED_ON_KNATIVE)
  }, 60_000)
})

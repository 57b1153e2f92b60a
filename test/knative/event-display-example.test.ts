// examples/knative/event-display.yaml, README's way to watch Kinetic's events: checked here
// against Knative's own schemas and Kinetic's Broker and event prefix; the Knative tier applies
// it to a real Knative and reads what event_display prints (test/knative/real/kn.ts).
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { KINETIC_EVENT_PREFIX } from '../../shared/engine/kinetic-events.js'
import { featureFlaggedFields, loadCrdSchema, loadCrdValidators } from './crd-schemas.js'
import { loadManifests, parseDocuments, ROOT } from './manifests.js'
import { withImage } from './real/kn.js'

const FILE = join(ROOT, 'examples', 'knative', 'event-display.yaml')
const docs = parseDocuments(readFileSync(FILE, 'utf8'), FILE)
const service = docs.find((d) => d.kind === 'Service')!
const trigger = docs.find((d) => d.kind === 'Trigger')!
const broker = loadManifests().find((m) => m.kind === 'Broker')!

describe('examples/knative/event-display.yaml', () => {
  it('holds an event_display Knative Service and a Trigger, each valid by Knative\'s CRD schema and using no feature-flagged field', () => {
    expect(docs.map((d) => `${d.apiVersion}/${d.kind}`)).toEqual(['serving.knative.dev/v1/Service', 'eventing.knative.dev/v1/Trigger'])
    const validators = loadCrdValidators()
    for (const d of docs) {
      const validate = validators.get(`${d.apiVersion}/${d.kind}`)!
      expect(validate(d) ? [] : validate.errors, `${d.kind} ${d.metadata.name}`).toEqual([])
    }
    expect(featureFlaggedFields(loadCrdSchema('serving.knative.dev/v1/Service'), service)).toEqual([])
  })

  it('subscribes event-display to Kinetic\'s Broker with a prefix filter on the type every Kinetic event has', () => {
    expect(trigger.metadata.namespace).toBe(broker.namespace)
    expect(trigger.spec.broker).toBe(broker.name)
    expect(trigger.spec.filters).toEqual([{ prefix: { type: KINETIC_EVENT_PREFIX } }])
    expect(trigger.spec.filter).toBeUndefined()
    expect(trigger.spec.subscriber.ref).toEqual({ apiVersion: 'serving.knative.dev/v1', kind: 'Service', name: service.metadata.name })
    expect(service.metadata.namespace).toBe(broker.namespace)
  })

  it('README\'s sed line sets the Service\'s image and leaves the rest as it is', () => {
    const readme = readFileSync(join(ROOT, 'README.md'), 'utf8')
    expect(readme).toContain("sed 's|image: event-display|image: <event_display image>|' examples/knative/event-display.yaml | kubectl apply -f -")
    const image = '127.0.0.1:5000/kinetic/knative-event-display:v0.50.0'
    const set = parseDocuments(withImage(readFileSync(FILE, 'utf8'), image), FILE)
    expect(set.find((d) => d.kind === 'Service')!.spec.template.spec.containers[0].image).toBe(image)
    expect(set.find((d) => d.kind === 'Trigger')).toEqual(trigger)
  })

  it('keeps the Service cluster-local, locked down, one pod up so its log keeps the events, and its image a bare name README\'s sed replaces', () => {
    expect(service.metadata.labels['networking.knative.dev/visibility']).toBe('cluster-local')
    expect(service.spec.template.metadata.annotations['autoscaling.knative.dev/min-scale']).toBe('1')
    const [container] = service.spec.template.spec.containers
    expect(container.image).toBe('event-display')
    expect(container.securityContext).toMatchObject({ runAsNonRoot: true, allowPrivilegeEscalation: false, capabilities: { drop: ['ALL'] } })
  })
})

// What Knative 1.23's MT channel-based Broker (in-memory channel), its PingSource and its
// ApiServerSource adapter did with the scenario of delivery-cases.ts, recorded in the Knative tier
// on 2026-12-03 (test/knative/real/delivery.ts prints it and checks it again on every run). The
// emulated Broker and sources are held to it by test/knative/delivery-emulation.test.ts.
import type { DeliverySummary } from './delivery-cases.js'

export const OBSERVED_ON_KNATIVE: DeliverySummary = {
  "ingress": {
    "e1": 202,
    "e2": 202,
    "e3": 202,
    "e4": 202,
    "r1": 202,
    "f-retry-503": 202,
    "f-retry-500": 202,
    "f-retry-404": 202,
    "f-retry-429": 202,
    "f-no-retry-400": 500,
    "f-no-retry-401": 500,
    "f-dead": 202,
    "f-timeout": 202
  },
  "received": {
    "all": [
      "e1",
      "e2"
    ],
    "any": [
      "e1",
      "e2"
    ],
    "dead": [
      "f-dead"
    ],
    "dls": [
      "f-dead"
    ],
    "empty-exact": [
      "e1",
      "e2",
      "e3",
      "e4",
      "r1",
      "f-retry-503",
      "f-retry-500",
      "f-retry-404",
      "f-retry-429",
      "f-no-retry-400",
      "f-no-retry-401",
      "f-dead",
      "f-timeout",
      "reply-of-r1"
    ],
    "exact-a": [
      "e1"
    ],
    "legacy": [
      "e2",
      "e4"
    ],
    "legacy-empty": [
      "e1",
      "e2"
    ],
    "no-retry-400": [
      "f-no-retry-400"
    ],
    "no-retry-401": [
      "f-no-retry-401"
    ],
    "not-a": [
      "e2",
      "e3",
      "e4",
      "r1",
      "f-retry-503",
      "f-retry-500",
      "f-retry-404",
      "f-retry-429",
      "f-no-retry-400",
      "f-no-retry-401",
      "f-dead",
      "f-timeout",
      "reply-of-r1"
    ],
    "prefix": [
      "e1",
      "e2",
      "e3",
      "e4",
      "r1",
      "f-retry-503",
      "f-retry-500",
      "f-retry-404",
      "f-retry-429",
      "f-no-retry-400",
      "f-no-retry-401",
      "f-dead",
      "f-timeout",
      "reply-of-r1"
    ],
    "reply": [
      "r1"
    ],
    "retry-404": [
      "f-retry-404"
    ],
    "retry-429": [
      "f-retry-429"
    ],
    "retry-500": [
      "f-retry-500"
    ],
    "retry-503": [
      "f-retry-503"
    ],
    "suffix-b": [
      "e2",
      "e4"
    ],
    "timeout": [
      "f-timeout"
    ],
    "two-in-one-exact": [
      "e2"
    ]
  },
  "attempts": [
    "dead f-dead: 503, 503",
    "no-retry-400 f-no-retry-400: 400",
    "no-retry-401 f-no-retry-401: 401",
    "retry-404 f-retry-404: 404, 202",
    "retry-429 f-retry-429: 429, 202",
    "retry-500 f-retry-500: 500, 202",
    "retry-503 f-retry-503: 503, 503, 202",
    "timeout f-timeout: sleep:2500, 202"
  ],
  "deadLetters": [
    {
      "id": "f-dead",
      "code": "503",
      "data": "planned 503 for /dead",
      "dest": "/dead"
    }
  ],
  "attributeNames": [
    "id",
    "kineticprobe",
    "knativearrivaltime",
    "source",
    "specversion",
    "subject",
    "type"
  ],
  "attributes": {
    "id": "e1",
    "kineticprobe": "yes",
    "source": "/delivery-conformance",
    "specversion": "1.0",
    "subject": "one",
    "type": "dev.kinetic.conformance.a"
  },
  "payload": {
    "contentType": "application/json",
    "body": "{\"probe\":true}"
  },
  "ping": {
    "attributeNames": [
      "id",
      "kineticprobe",
      "knativearrivaltime",
      "source",
      "specversion",
      "time",
      "type"
    ],
    "attributes": {
      "kineticprobe": "ping",
      "specversion": "1.0",
      "type": "dev.knative.sources.ping"
    },
    "contentType": "application/json",
    "body": "{\"probe\":\"ping\"}"
  },
  "apiserver": {
    "attributeNames": [
      "apiversion",
      "id",
      "kind",
      "kineticsource",
      "knativearrivaltime",
      "name",
      "namespace",
      "source",
      "specversion",
      "subject",
      "time",
      "type"
    ],
    "attributes": {
      "apiversion": "purko.io/v1alpha1",
      "kind": "MemoryProvider",
      "kineticsource": "resources",
      "name": "probe",
      "namespace": "delivery-conformance",
      "specversion": "1.0",
      "subject": "/apis/purko.io/v1alpha1/namespaces/delivery-conformance/memoryproviders/probe",
      "type": "dev.knative.apiserver.resource.add"
    },
    "contentType": "application/json",
    "body": "{\"apiVersion\":\"purko.io/v1alpha1\",\"kind\":\"MemoryProvider\",\"name\":\"probe\",\"namespace\":\"delivery-conformance\"}"
  }
}

/**
 * The PingSource `<template>-schedule` that delivers a scheduled template's fires to the Broker,
 * and whether the live one already says what we want. Pure.
 */
import type { ChildObject } from '../../kube/port.js'
import { labelValue } from '../../workflow/plan/job-builder.js'
import { sha256Hex } from '../../core/sha256.js'
import { API_VERSION } from '../../schemas/labels.js'
import type { Workflow } from '../../schemas/workflow.js'
import type { Schedule } from './cron.js'
import { stableJson } from './stable-json.js'

/** Labels of every PingSource Kinetic makes for a template. */
export const LABEL_MANAGED_BY = 'app.kubernetes.io/managed-by'
/** `ceOverrides` extension naming a template's schedule pings (the schedule-fired Trigger filters on it). */
export const SCHEDULE_SOURCE = 'schedule'

const MAX_LABEL_NAME = 63
const SCHEDULE_TAIL = '-schedule'

/** Pure: the PingSource name of a template: `<template>-schedule`, cut with a 5-hex hash to fit 63 characters. */
export function pingSourceName(template: string): string {
  const plain = `${template}${SCHEDULE_TAIL}`
  if (plain.length <= MAX_LABEL_NAME) return plain
  const hash = sha256Hex(template).slice(0, 5)
  const head = template.slice(0, MAX_LABEL_NAME - SCHEDULE_TAIL.length - hash.length - 1).replace(/[-.]+$/, '')
  return `${head}-${hash}${SCHEDULE_TAIL}`
}

/** Pure: the PingSource a scheduled template wants. */
export function pingSourceManifest(template: Workflow, schedule: Schedule, sink: string): ChildObject {
  const name = template.metadata.name ?? ''
  const namespace = template.metadata.namespace ?? ''
  return {
    apiVersion: 'sources.knative.dev/v1',
    kind: 'PingSource',
    metadata: {
      name: pingSourceName(name),
      namespace,
      labels: { [LABEL_MANAGED_BY]: 'kinetic', 'kinetic.dev/template': labelValue(name) },
      ownerReferences: [{
        apiVersion: API_VERSION, kind: 'Workflow', name, uid: template.metadata.uid ?? '', controller: true, blockOwnerDeletion: false,
      }],
    },
    spec: {
      schedule: schedule.expression,
      ...(schedule.timezone !== undefined ? { timezone: schedule.timezone } : {}),
      contentType: 'application/json',
      data: JSON.stringify({ namespace, name, uid: template.metadata.uid ?? '' }),
      ceOverrides: { extensions: { kineticsource: SCHEDULE_SOURCE } },
      sink: { uri: sink },
    },
  }
}

/** Pure: the fields we set are in the live PingSource with the same values (the API server may add defaults). */
export function pingSourceMatches(live: ChildObject, desired: ChildObject): boolean {
  const liveSpec = (live.spec ?? {}) as Record<string, unknown>
  const spec = (desired.spec ?? {}) as Record<string, unknown>
  if (Object.entries(spec).some(([key, value]) => stableJson(liveSpec[key]) !== stableJson(value))) return false
  // A timezone we no longer set must go too.
  if (spec.timezone === undefined && liveSpec.timezone !== undefined && liveSpec.timezone !== '') return false
  const labels = live.metadata?.labels ?? {}
  return Object.entries(desired.metadata?.labels ?? {}).every(([key, value]) => labels[key] === value)
}

// A stored object as a client reads it at one of its kind's served versions. Every version of a
// kind shares one stored copy; reading it at another version only rewrites `apiVersion`.
import { apiVersionOf } from '../resource-type.js'
import type { KubeObject, WatchEventType } from '../types.js'
import type { Stored, Target } from './store-types.js'

/** Serialized JSON of a stored object at the requested version. */
export function jsonAt(stored: Stored, t: Target): string {
  const av = apiVersionOf(t.rt.group, t.version)
  if (stored.obj.apiVersion === av) return stored.json
  return JSON.stringify({ ...stored.obj, apiVersion: av })
}

/** The object at the requested version, sharing structure with the stored one (do not mutate). */
export function objectAt(stored: Stored, t: Target): KubeObject {
  const av = apiVersionOf(t.rt.group, t.version)
  return stored.obj.apiVersion === av ? stored.obj : { ...stored.obj, apiVersion: av }
}

/** A deep copy of the object at the requested version, which the caller may change. */
export function copyAt(stored: Stored, t: Target): KubeObject {
  return JSON.parse(jsonAt(stored, t)) as KubeObject
}

/** One watch event line (JSON plus newline), cached per stored object. */
export function watchLine(type: WatchEventType, stored: Stored, t: Target): string {
  const av = apiVersionOf(t.rt.group, t.version)
  const key = `${type}|${av}`
  let line = stored.lines?.get(key)
  if (line === undefined) {
    line = `{"type":"${type}","object":${jsonAt(stored, t)}}\n`
    if (!stored.lines) stored.lines = new Map()
    stored.lines.set(key, line)
  }
  return line
}

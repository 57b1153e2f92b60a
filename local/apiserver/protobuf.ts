import { ApiError } from './api-error.js'
import { KINDS, type Schema } from './protobuf-kinds.js'
import type { KubeObject } from './types.js'

/**
 * Decodes the Kubernetes protobuf request bodies kubectl sends (`k8s\0`, then a
 * runtime.Unknown envelope: typeMeta, raw) for the kinds `protobuf-kinds.ts` describes;
 * anything else answers 415 so the caller learns to send JSON.
 */

const typeMeta: Schema = { 1: { name: 'apiVersion', type: 'string' }, 2: { name: 'kind', type: 'string' } }
const unknownEnvelope: Schema = {
  1: { name: 'typeMeta', type: 'message', schema: typeMeta },
  2: { name: 'raw', type: 'bytes' },
}

const MAGIC = Buffer.from([0x6b, 0x38, 0x73, 0x00])

class Reader {
  pos = 0
  constructor(readonly buf: Buffer) {}
  varint(): bigint {
    let result = 0n
    let shift = 0n
    for (;;) {
      if (this.pos >= this.buf.length) throw new Error('truncated varint')
      const b = this.buf[this.pos++] as number
      result |= BigInt(b & 0x7f) << shift
      if (!(b & 0x80)) return result
      shift += 7n
    }
  }
  bytes(): Buffer {
    const len = Number(this.varint())
    if (this.pos + len > this.buf.length) throw new Error('truncated field')
    const out = this.buf.subarray(this.pos, this.pos + len)
    this.pos += len
    return out
  }
  skip(wire: number): void {
    if (wire === 0) this.varint()
    else if (wire === 1) this.pos += 8
    else if (wire === 2) this.bytes()
    else if (wire === 5) this.pos += 4
    else throw new Error(`unsupported wire type ${wire}`)
  }
}

function decode(buf: Buffer, schema: Schema, raw = false): Record<string, unknown> {
  const r = new Reader(buf)
  const out: Record<string, unknown> = {}
  while (r.pos < buf.length) {
    const tag = Number(r.varint())
    const field = schema[tag >> 3]
    const wire = tag & 7
    if (!field) {
      r.skip(wire)
      continue
    }
    switch (field.type) {
      case 'string': {
        // Go marshals empty optional strings; JSON's omitempty would have left them out.
        const v = r.bytes().toString('utf8')
        if (v) out[field.name] = v
        break
      }
      case 'bytes':
        out[field.name] = raw ? r.bytes() : r.bytes().toString('base64')
        break
      case 'bool':
        out[field.name] = r.varint() !== 0n
        break
      case 'int': {
        const v = Number(r.varint())
        if (v) out[field.name] = v
        break
      }
      case 'time': {
        const t = decode(r.bytes(), { 1: { name: 'seconds', type: 'int' } })
        out[field.name] = new Date(Number(t.seconds ?? 0) * 1000).toISOString().replace('.000Z', 'Z')
        break
      }
      case 'strings':
        ;((out[field.name] ??= []) as string[]).push(r.bytes().toString('utf8'))
        break
      case 'stringMap':
      case 'bytesMap': {
        const entry = decode(r.bytes(), { 1: { name: 'key', type: 'string' }, 2: { name: 'value', type: field.type === 'stringMap' ? 'string' : 'bytes' } })
        ;((out[field.name] ??= {}) as Record<string, unknown>)[String(entry.key ?? '')] = entry.value ?? ''
        break
      }
      case 'message':
        out[field.name] = decode(r.bytes(), field.schema)
        break
      case 'messages':
        ;((out[field.name] ??= []) as unknown[]).push(decode(r.bytes(), field.schema))
        break
    }
  }
  return out
}

/** Decodes a `k8s\0`-framed protobuf body into a JSON object; 415 for kinds this server cannot read. */
export function decodeProtobufObject(body: Buffer): KubeObject {
  const unsupported = (what: string) =>
    new ApiError(415, 'UnsupportedMediaType', `the body of the request was in an unknown format - accepted media types include: application/json, application/yaml (${what})`)
  if (body.length < 4 || !body.subarray(0, 4).equals(MAGIC)) throw unsupported('missing protobuf envelope')
  let envelope: Record<string, unknown>
  try {
    envelope = decode(body.subarray(4), unknownEnvelope, true)
  } catch {
    throw unsupported('malformed protobuf')
  }
  const meta = (envelope.typeMeta ?? {}) as { apiVersion?: string; kind?: string }
  const schema = KINDS[`${meta.apiVersion}/${meta.kind}`]
  if (!schema || !(envelope.raw instanceof Buffer)) throw unsupported(`protobuf for ${meta.apiVersion}/${meta.kind} is not supported`)
  let obj: Record<string, unknown>
  try {
    obj = decode(envelope.raw, schema)
  } catch {
    throw unsupported('malformed protobuf')
  }
  return { apiVersion: meta.apiVersion as string, kind: meta.kind as string, ...obj, metadata: (obj.metadata ?? {}) as KubeObject['metadata'] }
}

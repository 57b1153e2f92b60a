/**
 * The OpenAPI v2 document in the protobuf form client-go asks for
 * (`application/com.github.proto-openapi.spec.v2@v1.0+protobuf`: the gnostic OpenAPIv2
 * `Document` message), which older kubectl and `kubectl explain --output plaintext-openapiv2`
 * read. Only what the JSON document here holds is encoded: swagger, info, paths with their
 * operations' query parameters and responses, and definitions. Extension values, enums and
 * defaults travel as YAML text, as gnostic writes them. Proto3 rules: zero values are left
 * out. Field numbers come from gnostic's published OpenAPIv2.proto. Pure.
 */
import { stringify } from 'yaml'

type Json = Record<string, unknown>

/** Appends protobuf fields to a message. */
class Message {
  private readonly parts: Buffer[] = []

  private key(field: number, wire: number): void {
    this.varint(BigInt((field << 3) | wire))
  }

  private varint(n: bigint): void {
    const out: number[] = []
    let v = BigInt.asUintN(64, n)
    do {
      out.push(Number(v & 0x7fn) | (v > 0x7fn ? 0x80 : 0))
      v >>= 7n
    } while (v > 0n)
    this.parts.push(Buffer.from(out))
  }

  bytes(field: number, value: Buffer): this {
    this.key(field, 2)
    this.varint(BigInt(value.length))
    this.parts.push(value)
    return this
  }

  string(field: number, value: unknown): this {
    return typeof value === 'string' && value !== '' ? this.bytes(field, Buffer.from(value, 'utf8')) : this
  }

  strings(field: number, values: unknown): this {
    if (Array.isArray(values)) for (const v of values) if (typeof v === 'string') this.bytes(field, Buffer.from(v, 'utf8'))
    return this
  }

  bool(field: number, value: unknown): this {
    return value === true ? this.flag(field, true) : this
  }

  /** A bool written even when false (a member of a oneof). */
  flag(field: number, value: boolean): this {
    this.key(field, 0)
    this.varint(value ? 1n : 0n)
    return this
  }

  int64(field: number, value: unknown): this {
    if (typeof value === 'number' && Number.isInteger(value) && value !== 0) {
      this.key(field, 0)
      this.varint(BigInt(value))
    }
    return this
  }

  double(field: number, value: unknown): this {
    if (typeof value === 'number' && value !== 0) {
      this.key(field, 1)
      const b = Buffer.alloc(8)
      b.writeDoubleLE(value)
      this.parts.push(b)
    }
    return this
  }

  message(field: number, value: Message | undefined): this {
    return value ? this.bytes(field, value.encode()) : this
  }

  encode(): Buffer {
    return Buffer.concat(this.parts)
  }
}

const isObject = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v)

/** `Any { yaml = 2 }`: a value as YAML text. */
const any = (value: unknown): Message => new Message().string(2, stringify(value).replace(/\n$/, ''))

/** The `x-` keys of an object as repeated `NamedAny { name = 1; value = 2 }` at `field`. */
function extensions(m: Message, field: number, obj: Json): void {
  for (const [k, v] of Object.entries(obj)) if (k.startsWith('x-')) m.message(field, new Message().string(1, k).message(2, any(v)))
}

/** gnostic `Schema`. */
function schema(s: Json): Message {
  const m = new Message()
    .string(1, s.$ref).string(2, s.format).string(3, s.title).string(4, s.description)
  if (s.default !== undefined) m.message(5, any(s.default))
  m.double(6, s.multipleOf).double(7, s.maximum).bool(8, s.exclusiveMaximum).double(9, s.minimum).bool(10, s.exclusiveMinimum)
    .int64(11, s.maxLength).int64(12, s.minLength).string(13, s.pattern).int64(14, s.maxItems).int64(15, s.minItems)
    .bool(16, s.uniqueItems).int64(17, s.maxProperties).int64(18, s.minProperties).strings(19, s.required)
  if (Array.isArray(s.enum)) for (const e of s.enum) m.message(20, any(e))
  // AdditionalPropertiesItem { oneof { Schema schema = 1; bool boolean = 2 } }
  if (isObject(s.additionalProperties)) m.message(21, new Message().message(1, schema(s.additionalProperties)))
  else if (typeof s.additionalProperties === 'boolean') m.message(21, new Message().flag(2, s.additionalProperties))
  // TypeItem { repeated string value = 1 }
  if (s.type !== undefined) m.message(22, new Message().strings(1, Array.isArray(s.type) ? s.type : [s.type]))
  // ItemsItem { repeated Schema schema = 1 }
  if (isObject(s.items)) m.message(23, new Message().message(1, schema(s.items)))
  if (Array.isArray(s.allOf)) for (const a of s.allOf) if (isObject(a)) m.message(24, schema(a))
  // Properties { repeated NamedSchema additional_properties = 1 }, NamedSchema { name = 1; value = 2 }
  if (isObject(s.properties)) {
    const props = new Message()
    for (const [name, p] of Object.entries(s.properties)) if (isObject(p)) props.message(1, new Message().string(1, name).message(2, schema(p)))
    m.message(25, props)
  }
  if (s.example !== undefined) m.message(30, any(s.example))
  extensions(m, 31, s)
  return m
}

/** gnostic `Operation`: its query parameters, responses and extensions. */
function operation(op: Json): Message {
  const m = new Message().strings(1, op.tags).string(2, op.summary).string(3, op.description).string(5, op.operationId)
  for (const p of Array.isArray(op.parameters) ? op.parameters : []) {
    if (!isObject(p) || p.in !== 'query') continue
    // ParametersItem.parameter(1) > Parameter.non_body_parameter(2) > NonBodyParameter.query_parameter_sub_schema(3)
    const query = new Message().bool(1, p.required).string(2, p.in).string(3, p.description).string(4, p.name).string(6, p.type).bool(20, p.uniqueItems)
    m.message(8, new Message().message(1, new Message().message(2, new Message().message(3, query))))
  }
  if (isObject(op.responses)) {
    // Responses { NamedResponseValue response_code = 1 }, ResponseValue.response(1) > Response { description = 1 }
    const responses = new Message()
    for (const [code, r] of Object.entries(op.responses)) {
      const description = isObject(r) ? r.description : undefined
      responses.message(1, new Message().string(1, code).message(2, new Message().message(1, new Message().string(1, description))))
    }
    m.message(9, responses)
  }
  extensions(m, 13, op)
  return m
}

const METHODS: Record<string, number> = { get: 2, put: 3, post: 4, delete: 5, options: 6, head: 7, patch: 8 }

/** Pure: the gnostic `Document` encoding of an OpenAPI v2 JSON document. */
export function openApiV2Protobuf(doc: Json): Buffer {
  const m = new Message().string(1, doc.swagger)
  if (isObject(doc.info)) m.message(2, new Message().string(1, doc.info.title).string(2, doc.info.version))
  if (isObject(doc.paths)) {
    // Paths { repeated NamedPathItem path = 2 }, NamedPathItem { name = 1; PathItem value = 2 }
    const paths = new Message()
    for (const [path, item] of Object.entries(doc.paths)) {
      if (!isObject(item)) continue
      const pathItem = new Message()
      for (const [method, field] of Object.entries(METHODS)) if (isObject(item[method])) pathItem.message(field, operation(item[method] as Json))
      paths.message(2, new Message().string(1, path).message(2, pathItem))
    }
    m.message(8, paths)
  }
  if (isObject(doc.definitions)) {
    // Definitions { repeated NamedSchema additional_properties = 1 }
    const defs = new Message()
    for (const [name, s] of Object.entries(doc.definitions)) if (isObject(s)) defs.message(1, new Message().string(1, name).message(2, schema(s)))
    m.message(9, defs)
  }
  return m.encode()
}

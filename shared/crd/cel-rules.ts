import { Environment, type ParseResult } from '@marcbachmann/cel-js'
import { celFormat } from './cel-format.js'
import { fieldError, invalid, isObject, joinPath, typeName, type FieldCause, type FieldErrorType } from './field-error.js'
import { GoStruct } from './go-value.js'
import { listMapKey, ROOT_FIELDS } from './schema-pass.js'
import type { JsonSchemaProps, ValidationRule } from './structural.js'

/**
 * The CEL half of custom resource validation: `x-kubernetes-validations` compiled once per
 * schema (so a CRD with a broken rule is refused when it is created) and run bottom-up.
 */

/** A schema whose CEL rules do not compile; `causes` carry paths below `openAPIV3Schema`. */
export class SchemaCompileError extends Error {
  constructor(readonly causes: FieldCause[]) {
    super(causes.map((c) => `${c.field}: ${c.message}`).join(', '))
    this.name = 'SchemaCompileError'
  }
}

interface CompiledRule {
  rule: ValidationRule
  program: ParseResult
  message?: ParseResult
  transition: boolean
}

/** The compiled rules of one schema tree, keyed by schema node. */
export interface CompiledRules {
  /** Rules attached to a node. */
  readonly byNode: WeakMap<JsonSchemaProps, CompiledRule[]>
  /** Nodes with rules somewhere below them, so rule-free subtrees are skipped. */
  readonly below: WeakMap<JsonSchemaProps, boolean>
  /** True when the tree has at least one rule. */
  readonly any: boolean
}

type Json = Record<string, unknown>

/** The CEL environment of CRD rules: cel-js's defaults plus the API server's `string.format(list)` and optional syntax (`a.?b`, `l[?0]`). */
export const CRD_CEL = new Environment({ unlistedVariablesAreDyn: true, enableOptionalTypes: true })
  .registerFunction('string.format(list): string', (template: string, args: unknown[]) => celFormat(template, args))

/** Compiles every rule and messageExpression of a schema tree; SchemaCompileError lists each one that does not parse. */
export function compileRules(schema: JsonSchemaProps): CompiledRules {
  const byNode = new WeakMap<JsonSchemaProps, CompiledRule[]>()
  const below = new WeakMap<JsonSchemaProps, boolean>()
  const errors: FieldCause[] = []
  const any = compileNode(schema, 'openAPIV3Schema', byNode, below, errors)
  if (errors.length) throw new SchemaCompileError(errors)
  return { byNode, below, any }
}

function compileNode(s: JsonSchemaProps, path: string, byNode: CompiledRules['byNode'], below: CompiledRules['below'], errors: FieldCause[]): boolean {
  const list = s['x-kubernetes-validations'] ?? []
  if (list.length) {
    const compiled: CompiledRule[] = []
    list.forEach((rule, i) => {
      const at = `${path}.x-kubernetes-validations[${i}]`
      try {
        const entry: CompiledRule = { rule, program: CRD_CEL.parse(rule.rule), transition: /\boldSelf\b/.test(rule.rule) }
        if (rule.messageExpression) {
          try {
            entry.message = CRD_CEL.parse(rule.messageExpression)
          } catch (err) {
            errors.push(invalid(`${at}.messageExpression`, goRule(rule), `messageExpression compilation failed: ${celError(rule.messageExpression, err)}`))
          }
        }
        compiled.push(entry)
      } catch (err) {
        errors.push(invalid(`${at}.rule`, goRule(rule), `compilation failed: ${celError(rule.rule, err)}`))
      }
    })
    byNode.set(s, compiled)
  }
  let nested = false
  for (const [k, child] of Object.entries(s.properties ?? {})) nested = compileNode(child, `${path}.properties[${k}]`, byNode, below, errors) || nested
  if (s.items) nested = compileNode(s.items, `${path}.items`, byNode, below, errors) || nested
  if (isObject(s.additionalProperties)) nested = compileNode(s.additionalProperties as JsonSchemaProps, `${path}.additionalProperties`, byNode, below, errors) || nested
  below.set(s, nested)
  return list.length > 0 || nested
}

/** Runs the rules over an already defaulted and pruned object; `old` (the stored object) enables transition rules. */
export function runRules(rules: CompiledRules, root: Json, schema: JsonSchemaProps, old: Json | undefined): FieldCause[] {
  const causes: FieldCause[] = []
  if (rules.any) walkRules(rules, root, schema, '', old, causes)
  return causes
}

function walkRules(rules: CompiledRules, value: unknown, s: JsonSchemaProps, path: string, old: unknown, causes: FieldCause[]): void {
  if (!rules.byNode.has(s) && !rules.below.get(s)) return
  if (isObject(value)) {
    const additional = isObject(s.additionalProperties) ? (s.additionalProperties as JsonSchemaProps) : undefined
    const oldObj = isObject(old) ? old : undefined
    for (const [key, v] of Object.entries(value)) {
      if (path === '' && ROOT_FIELDS.has(key)) continue
      const child = s.properties?.[key] ?? additional
      if (child && v !== null) walkRules(rules, v, child, s.properties?.[key] ? joinPath(path, key) : `${path}[${key}]`, oldObj?.[key], causes)
    }
  } else if (Array.isArray(value) && s.items) {
    const items = s.items
    // Old and new items correlate only in list-type map lists (by key); set and atomic lists have no oldSelf.
    const keys = s['x-kubernetes-list-map-keys'] ?? []
    const oldByKey = s['x-kubernetes-list-type'] === 'map' && Array.isArray(old) ? new Map(old.map((o) => [listMapKey(o, keys), o])) : undefined
    value.forEach((item, i) => {
      if (item !== null) walkRules(rules, item, items, `${path}[${i}]`, oldByKey?.get(listMapKey(item, keys)), causes)
    })
  }
  runNodeRules(rules.byNode.get(s) ?? [], value, s, path, old, causes)
}

function runNodeRules(compiled: CompiledRule[], value: unknown, s: JsonSchemaProps, path: string, old: unknown, causes: FieldCause[]): void {
  let self: unknown
  let oldSelf: unknown
  const shownType = s.type ?? typeName(value)
  for (const c of compiled) {
    if (c.transition && old === undefined && !c.rule.optionalOldSelf) continue
    self ??= toCel(s, value)
    if (old !== undefined) oldSelf ??= toCel(s, old)
    const vars: Json = { self }
    if (old !== undefined) vars.oldSelf = oldSelf
    const field = c.rule.fieldPath ? joinPath(path, c.rule.fieldPath.replace(/^\./, '')) : path
    let ok: unknown
    try {
      ok = c.program(vars)
    } catch (err) {
      causes.push(invalid(field, shownType, `${firstLine(err)} evaluating rule: ${c.rule.rule}`))
      continue
    }
    if (ok === true) continue
    causes.push(ruleFailure(c, vars, field, shownType))
  }
}

function ruleFailure(c: CompiledRule, vars: Json, field: string, shownType: string): FieldCause {
  let message = c.rule.message ?? `failed rule: ${c.rule.rule}`
  if (c.message) {
    try {
      const m = c.message(vars)
      if (typeof m === 'string' && m.trim()) message = m
    } catch {
      // The static message or the rule text stands in when messageExpression itself fails, as on the server.
    }
  }
  // The schema's type stands in for the value (the API server's CEL validator reports it so).
  return fieldError(field, (c.rule.reason ?? 'FieldValueInvalid') as FieldErrorType, shownType, message)
}

/** Pure: the CEL view of a decoded JSON value: whole numbers become CEL ints (bigint) unless the schema says `number`. */
export function toCel(schema: JsonSchemaProps | undefined, value: unknown): unknown {
  if (typeof value === 'number') return Number.isInteger(value) && schema?.type !== 'number' ? BigInt(value) : value
  if (Array.isArray(value)) return value.map((v) => toCel(schema?.items, v))
  if (isObject(value)) {
    const additional = isObject(schema?.additionalProperties) ? (schema?.additionalProperties as JsonSchemaProps) : undefined
    const out: Json = {}
    for (const [k, v] of Object.entries(value)) out[k] = toCel(schema?.properties?.[k] ?? additional, v)
    return out
  }
  return value
}

/**
 * Pure: a rule as the API server holds it when it reports the rule as an invalid value: its
 * internal ValidationRule struct, whose unset pointer fields (reason, optionalOldSelf) are nil.
 */
export function goRule(rule: ValidationRule): GoStruct {
  return new GoStruct([
    ['Rule', rule.rule], ['Message', rule.message ?? ''], ['MessageExpression', rule.messageExpression ?? ''],
    ['Reason', rule.reason ?? null], ['FieldPath', rule.fieldPath ?? ''], ['OptionalOldSelf', rule.optionalOldSelf ?? null],
  ])
}

/**
 * Pure: a parse error laid out as the API server's CEL reports it (`ERROR: <input>:line:col:`,
 * the source line and a caret); the explanation is the parser's own, which words it differently.
 */
export function celError(source: string, err: unknown): string {
  const pos = typeof (err as { node?: { pos?: unknown } })?.node?.pos === 'number' ? ((err as { node: { pos: number } }).node.pos) : 0
  const before = source.slice(0, pos)
  const line = before.split('\n').length
  const col = pos - (before.lastIndexOf('\n') + 1) + 1
  const text = source.split('\n')[line - 1] ?? ''
  return `ERROR: <input>:${line}:${col}: Syntax error: ${firstLine(err)}\n | ${text}\n | ${'.'.repeat(col - 1)}^`
}

function firstLine(err: unknown): string {
  return (err instanceof Error ? err.message : String(err)).split('\n')[0] ?? ''
}

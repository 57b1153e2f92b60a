import type { JsonSchemaProps, ValidationRule } from '../../shared/crd/structural.js'

/**
 * CRD schemas with x-kubernetes-validations rules and the verdict a real kube-apiserver (v1.34)
 * gave each one when it was created: accepted (no causes) or the exact Forbidden causes of its
 * CEL cost check. test/crds/cel-cost.test.ts holds the embedded API server to these verdicts
 * without a cluster; test/cluster/cel-cost.test.ts asks the real server again and compares both.
 *
 * "Measured" cases put a rule under a list whose maxItems multiplies its cost to just over the
 * per-expression limit, so the printed factor (six decimals below 1.5x) pins the rule's exact
 * estimated cost rather than only which side of the limit it falls on.
 */

/** One recorded case. */
export interface CelCostCase {
  /** What the case shows. */
  name: string
  /** Each version's openAPIV3Schema (one unless the case is about several versions). */
  versions: JsonSchemaProps[]
  /** The real server's causes, sorted by field (it lists properties in no fixed order); empty when it accepted the CRD. */
  expected: ExpectedCause[]
}

/** A Status cause as the real server returned it. */
export interface ExpectedCause {
  reason: string
  field: string
  message: string
}

/** What the server appends to every over-budget message. */
export const ADVICE = ' (try simplifying the rule, or adding maxItems, maxProperties, and maxLength where arrays, maps, and strings are declared)'
const CONTRIBUTED = 'contributed to estimated rule cost total exceeding cost limit for entire OpenAPIv3 schema'
const ROOT = 'spec.validation.openAPIV3Schema'
const SPEC = `${ROOT}.properties[spec]`
const forbidden = (field: string, message: string): ExpectedCause => ({ reason: 'FieldValueForbidden', field, message: `Forbidden: ${message}` })

const str = (maxLength?: number, extra: JsonSchemaProps = {}): JsonSchemaProps => ({ type: 'string', ...(maxLength === undefined ? {} : { maxLength }), ...extra })
const int: JsonSchemaProps = { type: 'integer' }
const num: JsonSchemaProps = { type: 'number' }
const bool: JsonSchemaProps = { type: 'boolean' }
const intOrString: JsonSchemaProps = { 'x-kubernetes-int-or-string': true }
const obj = (properties: Record<string, JsonSchemaProps>, extra: JsonSchemaProps = {}): JsonSchemaProps => ({ type: 'object', properties, ...extra })
const list = (items: JsonSchemaProps, maxItems?: number, extra: JsonSchemaProps = {}): JsonSchemaProps => ({ type: 'array', items, ...(maxItems === undefined ? {} : { maxItems }), ...extra })
const map = (values: JsonSchemaProps, maxProperties?: number): JsonSchemaProps => ({ type: 'object', additionalProperties: values, ...(maxProperties === undefined ? {} : { maxProperties }) })
const rule = (r: string, messageExpression?: string, extra: Partial<ValidationRule> = {}): ValidationRule => ({ rule: r, ...(messageExpression ? { messageExpression } : {}), ...extra })
const withRules = (node: JsonSchemaProps, ...rules: ValidationRule[]): JsonSchemaProps => ({ ...node, 'x-kubernetes-validations': rules })
/** A CRD whose spec is the given schema. */
const spec = (s: JsonSchemaProps): JsonSchemaProps[] => [obj({ spec: s })]
/** The node, with its rules, as the items of spec.l, a list of at most n items. */
const measured = (node: JsonSchemaProps, n: number): JsonSchemaProps[] => spec(obj({ l: list(node, n) }))

export const CEL_COST_CASES: CelCostCase[] = [
  // The Agent CRD's model and memory rules as first generated: string(int) has no known size, so
  // each messageExpression concatenating it counts as a string of 2^64-1 characters.
  {
    name: 'the first Agent model and memory rules are refused: four messageExpressions add string(int) to a literal',
    versions: spec(obj({
      model: withRules(obj({ provider: str(253), name: str(253), temperature: num, maxTokens: int }, { required: ['provider', 'name'] }),
        rule("self.provider != ''"), rule("self.name != ''"),
        rule('!has(self.maxTokens) || (self.maxTokens >= 1 && self.maxTokens <= 2000000)', "'spec.model.maxTokens must be between 1 and 2000000, got ' + string(self.maxTokens)"),
        rule('!has(self.temperature) || (self.temperature >= 0.0 && self.temperature <= 2.0)', "'spec.model.temperature must be between 0.0 and 2.0, got ' + string(self.temperature)")),
      memory: withRules(obj({ type: str(63), behavior: str(63), scope: str(63), maxEntries: int, maxContextTokens: int }),
        rule("!has(self.type) || self.type in ['buffer', 'summary', 'vector', 'none']", `'spec.memory.type must be buffer, summary, vector, or none (got "' + self.type + '")'`),
        rule("!has(self.behavior) || self.behavior in ['off', 'session', 'persistent']", `'spec.memory.behavior must be off, session, or persistent (got "' + self.behavior + '")'`),
        rule("!has(self.scope) || self.scope in ['agent', 'group', 'namespace']", `'spec.memory.scope must be agent, group, or namespace (got "' + self.scope + '")'`),
        rule('!has(self.maxContextTokens) || self.maxContextTokens <= 32768', "'spec.memory.maxContextTokens must be <= 32768 (got ' + string(self.maxContextTokens) + ')'"),
        rule('!has(self.maxEntries) || self.maxEntries <= 10000', "'spec.memory.maxEntries must be <= 10000 (got ' + string(self.maxEntries) + ')'")),
    })),
    expected: [
      forbidden(ROOT, `x-kubernetes-validations estimated rule cost total for entire OpenAPIv3 schema exceeds budget by factor of more than 100x${ADVICE}`),
      forbidden(`${SPEC}.properties[memory].x-kubernetes-validations[3].messageExpression`, CONTRIBUTED),
      forbidden(`${SPEC}.properties[memory].x-kubernetes-validations[3].messageExpression`, `estimated messageExpression cost exceeds budget by factor of more than 100x${ADVICE}`),
      forbidden(`${SPEC}.properties[memory].x-kubernetes-validations[4].messageExpression`, CONTRIBUTED),
      forbidden(`${SPEC}.properties[memory].x-kubernetes-validations[4].messageExpression`, `estimated messageExpression cost exceeds budget by factor of more than 100x${ADVICE}`),
      forbidden(`${SPEC}.properties[model].x-kubernetes-validations[2].messageExpression`, CONTRIBUTED),
      forbidden(`${SPEC}.properties[model].x-kubernetes-validations[2].messageExpression`, `estimated messageExpression cost exceeds budget by factor of more than 100x${ADVICE}`),
      forbidden(`${SPEC}.properties[model].x-kubernetes-validations[3].messageExpression`, CONTRIBUTED),
      forbidden(`${SPEC}.properties[model].x-kubernetes-validations[3].messageExpression`, `estimated messageExpression cost exceeds budget by factor of more than 100x${ADVICE}`),
    ],
  },
  {
    name: 'the same Agent rules are accepted once the numbers are quoted with format()',
    versions: spec(obj({
      model: withRules(obj({ provider: str(253), name: str(253), temperature: num, maxTokens: int }, { required: ['provider', 'name'] }),
        rule('!has(self.maxTokens) || (self.maxTokens >= 1 && self.maxTokens <= 2000000)', "'spec.model.maxTokens must be between 1 and 2000000, got %d'.format([self.maxTokens])"),
        rule('!has(self.temperature) || (self.temperature >= 0.0 && self.temperature <= 2.0)', "'spec.model.temperature must be between 0.0 and 2.0, got %f'.format([self.temperature])")),
      memory: withRules(obj({ type: str(63), maxEntries: int }),
        rule("!has(self.type) || self.type in ['buffer', 'summary', 'vector', 'none']", `'spec.memory.type must be buffer, summary, vector, or none (got "' + self.type + '")'`),
        rule('!has(self.maxEntries) || self.maxEntries <= 10000', "'spec.memory.maxEntries must be <= 10000 (got %d)'.format([self.maxEntries])")),
    })),
    expected: [],
  },
  {
    name: 'a Workflow step rule under an unbounded steps list is refused: unbounded names and dependsOn',
    versions: spec(obj({ steps: list(withRules(obj({ name: str(), dependsOn: list(str()) }, { required: ['name'] }),
      rule('!has(self.dependsOn) || !(self.name in self.dependsOn)', `'WF-003: step "' + self.name + '" cannot depend on itself'`))) })),
    expected: [
      forbidden(ROOT, `x-kubernetes-validations estimated rule cost total for entire OpenAPIv3 schema exceeds budget by factor of more than 100x${ADVICE}`),
      forbidden(`${SPEC}.properties[steps].items.x-kubernetes-validations[0].rule`, CONTRIBUTED),
      forbidden(`${SPEC}.properties[steps].items.x-kubernetes-validations[0].rule`, `estimated rule cost exceeds budget by factor of more than 100x${ADVICE}`),
    ],
  },
  {
    name: 'the same Workflow step rule is accepted with maxItems and maxLength on steps, names and dependsOn',
    versions: spec(obj({ steps: list(withRules(obj({ name: str(63), dependsOn: list(str(63), 50) }, { required: ['name'] }),
      rule('!has(self.dependsOn) || !(self.name in self.dependsOn)', `'WF-003: step "' + self.name + '" cannot depend on itself'`)), 500) })),
    expected: [],
  },
  {
    name: 'measured: the bounded Workflow dependsOn rule',
    versions: measured(withRules(obj({ name: str(63), dependsOn: list(str(63), 50) }, { required: ['name'] }), rule('!has(self.dependsOn) || !(self.name in self.dependsOn)')), 210000),
    expected: [
      forbidden(`${SPEC}.properties[l].items.x-kubernetes-validations[0].rule`, `estimated rule cost exceeds budget by factor of 1.197000x${ADVICE}`),
    ],
  },
  {
    name: 'a messageExpression quoting a bounded string is cheap',
    versions: spec(withRules(obj({ name: str(63), agentRef: obj({ name: str(253) }), type: str(63) }, { required: ['name'] }),
      rule("(has(self.agentRef) && self.agentRef.name != '') || (has(self.type) && self.type != '')", `'step "' + self.name + '" must have either agentRef.name or type'`))),
    expected: [],
  },
  {
    name: 'measured: a messageExpression concatenating a long bounded string (1.1x)',
    versions: [withRules(obj({ spec: obj({ a: str(27500000) }) }), rule("self.spec.a != ''", "'bad: ' + self.spec.a"))],
    expected: [
      forbidden(`${ROOT}.x-kubernetes-validations[0].messageExpression`, `estimated messageExpression cost exceeds budget by factor of 1.100000x${ADVICE}`),
    ],
  },
  {
    name: 'a messageExpression is not multiplied by the cardinality of its node',
    versions: spec(obj({ l: list(withRules(obj({ s: str(2000000) }), rule("self.s != ''", "'bad ' + self.s")), 1000) })),
    expected: [],
  },
  {
    name: 'a root rule may quote metadata.name, which counts as the largest string a request can hold',
    versions: [withRules(obj({ spec: obj({ a: str() }) }), rule("self.metadata.name.startsWith('abc')", "'bad name ' + self.metadata.name"))],
    expected: [],
  },
  // Single rules, each measured by a list that multiplies its exact cost to just over the limit.
  { name: 'measured: != against an empty string costs 2', versions: measured(withRules(obj({ p: str() }), rule("self.p != ''")), 6250000), expected: [
      forbidden(`${SPEC}.properties[l].items.x-kubernetes-validations[0].rule`, `estimated rule cost exceeds budget by factor of 1.250000x${ADVICE}`),
    ] },
  { name: 'measured: == against a literal reads the shorter side', versions: measured(withRules(obj({ p: str() }), rule("self.p == 'abc'")), 4166666), expected: [
      forbidden(`${SPEC}.properties[l].items.x-kubernetes-validations[0].rule`, `estimated rule cost exceeds budget by factor of 1.250000x${ADVICE}`),
    ] },
  { name: 'measured: == between two bounded strings', versions: measured(withRules(obj({ a: str(10), b: str(20) }), rule('self.a == self.b')), 1562500), expected: [
      forbidden(`${SPEC}.properties[l].items.x-kubernetes-validations[0].rule`, `estimated rule cost exceeds budget by factor of 1.250000x${ADVICE}`),
    ] },
  { name: 'measured: has() costs only its operand', versions: measured(withRules(obj({ p: obj({ q: str() }) }), rule('has(self.p.q)')), 6250000), expected: [
      forbidden(`${SPEC}.properties[l].items.x-kubernetes-validations[0].rule`, `estimated rule cost exceeds budget by factor of 1.250000x${ADVICE}`),
    ] },
  { name: 'measured: size() of an unbounded string', versions: measured(withRules(obj({ p: str() }), rule('size(self.p) <= 63')), 3125000), expected: [
      forbidden(`${SPEC}.properties[l].items.x-kubernetes-validations[0].rule`, `estimated rule cost exceeds budget by factor of 1.250000x${ADVICE}`),
    ] },
  { name: 'measured: startsWith reads only the prefix', versions: measured(withRules(obj({ p: str() }), rule("self.p.startsWith('abcdefghijklmnopqrstuvwxy')")), 2500000), expected: [
      forbidden(`${SPEC}.properties[l].items.x-kubernetes-validations[0].rule`, `estimated rule cost exceeds budget by factor of 1.250000x${ADVICE}`),
    ] },
  { name: 'measured: endsWith a bounded field', versions: measured(withRules(obj({ p: str(), q: str(7) }), rule('self.p.endsWith(self.q)')), 1785714), expected: [
      forbidden(`${SPEC}.properties[l].items.x-kubernetes-validations[0].rule`, `estimated rule cost exceeds budget by factor of 1.250000x${ADVICE}`),
    ] },
  { name: 'measured: an integer range check', versions: measured(withRules(obj({ n: int }), rule('!has(self.n) || (self.n >= 1 && self.n <= 2000000)')), 1562500), expected: [
      forbidden(`${SPEC}.properties[l].items.x-kubernetes-validations[0].rule`, `estimated rule cost exceeds budget by factor of 1.250000x${ADVICE}`),
    ] },
  { name: 'measured: a double range check', versions: measured(withRules(obj({ t: num }), rule('!has(self.t) || (self.t >= 0.0 && self.t <= 2.0)')), 1562500), expected: [
      forbidden(`${SPEC}.properties[l].items.x-kubernetes-validations[0].rule`, `estimated rule cost exceeds budget by factor of 1.250000x${ADVICE}`),
    ] },
  { name: 'measured: concatenation with a maxLength string counts four bytes per character', versions: measured(withRules(obj({ p: str(63) }), rule("('x' + self.p) != 'y'")), 431034), expected: [
      forbidden(`${SPEC}.properties[l].items.x-kubernetes-validations[0].rule`, `estimated rule cost exceeds budget by factor of 1.249999x${ADVICE}`),
    ] },
  { name: 'measured: matches() on a DNS label', versions: measured(withRules(obj({ p: str(63) }), rule("self.p.matches('^[a-z0-9]([-a-z0-9]*[a-z0-9])?$')")), 59523), expected: [
      forbidden(`${SPEC}.properties[l].items.x-kubernetes-validations[0].rule`, `estimated rule cost exceeds budget by factor of 1.249983x${ADVICE}`),
    ] },
  { name: 'measured: the global form matches(s, re) costs like any call', versions: measured(withRules(obj({ p: str() }), rule("matches(self.p, '^[a-z]+$')")), 4166666), expected: [
      forbidden(`${SPEC}.properties[l].items.x-kubernetes-validations[0].rule`, `estimated rule cost exceeds budget by factor of 1.250000x${ADVICE}`),
    ] },
  { name: 'measured: contains() multiplies both lengths', versions: measured(withRules(obj({ p: str(100), q: str(5) }), rule('self.p.contains(self.q)')), 148809), expected: [
      forbidden(`${SPEC}.properties[l].items.x-kubernetes-validations[0].rule`, `estimated rule cost exceeds budget by factor of 1.249996x${ADVICE}`),
    ] },
  { name: 'measured: an enum bounds the string to its longest value', versions: measured(withRules(obj({ t: str(undefined, { enum: ['planner', 'executor', 'abcdefghijklmnopqrstuvwxyz0123456789'] }), u: str(undefined, { enum: ['abcdefghijklmnopqrstuvwxyz0123456789abcdefghijklmnopqrstuvwxyz'] }) }), rule('self.u.contains(self.t)')), 390625), expected: [
      forbidden(`${SPEC}.properties[l].items.x-kubernetes-validations[0].rule`, `estimated rule cost exceeds budget by factor of 1.250000x${ADVICE}`),
    ] },
  { name: 'measured: in a literal list', versions: measured(withRules(obj({ t: str() }), rule("self.t in ['buffer', 'summary', 'vector', 'none']")), 781250), expected: [
      forbidden(`${SPEC}.properties[l].items.x-kubernetes-validations[0].rule`, `estimated rule cost exceeds budget by factor of 1.250000x${ADVICE}`),
    ] },
  { name: 'measured: in a bounded list field', versions: measured(withRules(obj({ n: str(10), d: list(str(10), 50) }), rule('self.n in self.d')), 231481), expected: [
      forbidden(`${SPEC}.properties[l].items.x-kubernetes-validations[0].rule`, `estimated rule cost exceeds budget by factor of 1.249997x${ADVICE}`),
    ] },
  { name: 'measured: all() over a bounded list', versions: measured(withRules(list(str(20), 30), rule("self.all(x, x.startsWith('a'))")), 82236), expected: [
      forbidden(`${SPEC}.properties[l].items.x-kubernetes-validations[0].rule`, `estimated rule cost exceeds budget by factor of 1.249987x${ADVICE}`),
    ] },
  { name: 'measured: exists() over a bounded list', versions: measured(withRules(list(str(20), 30), rule("self.exists(x, x == 'a')")), 68681), expected: [
      forbidden(`${SPEC}.properties[l].items.x-kubernetes-validations[0].rule`, `estimated rule cost exceeds budget by factor of 1.249994x${ADVICE}`),
    ] },
  { name: 'measured: exists_one() over a bounded list', versions: measured(withRules(list(str(20), 30), rule("self.exists_one(x, x == 'a')")), 101626), expected: [
      forbidden(`${SPEC}.properties[l].items.x-kubernetes-validations[0].rule`, `estimated rule cost exceeds budget by factor of 1.250000x${ADVICE}`),
    ] },
  { name: 'measured: filter() then size()', versions: measured(withRules(list(int, 30), rule('size(self.filter(x, x > 1)) < 3')), 26939), expected: [
      forbidden(`${SPEC}.properties[l].items.x-kubernetes-validations[0].rule`, `estimated rule cost exceeds budget by factor of 1.249970x${ADVICE}`),
    ] },
  { name: 'measured: map() then size()', versions: measured(withRules(list(int, 30), rule('size(self.map(x, x * 2)) < 3')), 28801), expected: [
      forbidden(`${SPEC}.properties[l].items.x-kubernetes-validations[0].rule`, `estimated rule cost exceeds budget by factor of 1.249963x${ADVICE}`),
    ] },
  { name: 'measured: map() with a filter', versions: measured(withRules(list(int, 30), rule('size(self.map(x, x > 0, x * 2)) < 3')), 25303), expected: [
      forbidden(`${SPEC}.properties[l].items.x-kubernetes-validations[0].rule`, `estimated rule cost exceeds budget by factor of 1.249968x${ADVICE}`),
    ] },
  { name: 'measured: all() over objects reading a field', versions: measured(withRules(list(obj({ name: str(10) }, { required: ['name'] }), 30), rule("self.all(s, s.name != '')")), 82236), expected: [
      forbidden(`${SPEC}.properties[l].items.x-kubernetes-validations[0].rule`, `estimated rule cost exceeds budget by factor of 1.249987x${ADVICE}`),
    ] },
  { name: 'measured: a quadratic rule (all inside exists_one)', versions: measured(withRules(list(str(10), 30), rule('self.all(x, self.exists_one(y, y == x))')), 1693), expected: [
      forbidden(`${SPEC}.properties[l].items.x-kubernetes-validations[0].rule`, `estimated rule cost exceeds budget by factor of 1.249773x${ADVICE}`),
    ] },
  { name: 'measured: nested all() over a list of lists', versions: measured(withRules(list(list(str(5), 4), 6), rule("self.all(x, x.all(y, y != 'a'))")), 82236), expected: [
      forbidden(`${SPEC}.properties[l].items.x-kubernetes-validations[0].rule`, `estimated rule cost exceeds budget by factor of 1.249987x${ADVICE}`),
    ] },
  { name: 'measured: a chained filter().all() counts the filtered list as long as the original', versions: measured(withRules(list(str(10), 10), rule("self.filter(x, x != '').all(y, y.startsWith('a'))")), 61576), expected: [
      forbidden(`${SPEC}.properties[l].items.x-kubernetes-validations[0].rule`, `estimated rule cost exceeds budget by factor of 1.249993x${ADVICE}`),
    ] },
  { name: 'measured: map().exists() loses the schema of the mapped values', versions: measured(withRules(obj({ l: list(obj({ name: str(10) }), 10) }), rule("self.l.map(x, x.name).exists(y, y == 'a')")), 61274), expected: [
      forbidden(`${SPEC}.properties[l].items.x-kubernetes-validations[0].rule`, `estimated rule cost exceeds budget by factor of 1.249990x${ADVICE}`),
    ] },
  { name: 'measured: all() over unbounded strings', versions: measured(withRules(list(str(), 10), rule('self.all(x, x.size() < 3)')), 201612), expected: [
      forbidden(`${SPEC}.properties[l].items.x-kubernetes-validations[0].rule`, `estimated rule cost exceeds budget by factor of 1.249994x${ADVICE}`),
    ] },
  { name: 'measured: the ternary operator takes the costlier branch and the longer result', versions: measured(withRules(obj({ a: bool, b: str(10), c: str(20) }), rule("((self.a ? self.b : self.c) + 'x').startsWith('q')")), 892857), expected: [
      forbidden(`${SPEC}.properties[l].items.x-kubernetes-validations[0].rule`, `estimated rule cost exceeds budget by factor of 1.250000x${ADVICE}`),
    ] },
  { name: 'measured: x-kubernetes-int-or-string is dyn', versions: measured(withRules(obj({ p: intOrString }), rule("self.p == 'a' || self.p == 1")), 2083333), expected: [
      forbidden(`${SPEC}.properties[l].items.x-kubernetes-validations[0].rule`, `estimated rule cost exceeds budget by factor of 1.250000x${ADVICE}`),
    ] },
  { name: 'measured: ordering two int-or-string values may compare strings', versions: measured(withRules(obj({ a: intOrString, b: intOrString }), rule('self.a < self.b')), 39), expected: [
      forbidden(`${SPEC}.properties[l].items.x-kubernetes-validations[0].rule`, `estimated rule cost exceeds budget by factor of 1.226850x${ADVICE}`),
    ] },
  { name: 'measured: date-time and duration formats are CEL timestamps and durations', versions: measured(withRules(obj({ t: str(undefined, { format: 'date-time' }), d: str(undefined, { format: 'duration' }) }), rule("self.t > timestamp('2020-01-01T00:00:00Z') && self.d < duration('1h')")), 1562500), expected: [
      forbidden(`${SPEC}.properties[l].items.x-kubernetes-validations[0].rule`, `estimated rule cost exceeds budget by factor of 1.250000x${ADVICE}`),
    ] },
  { name: 'measured: lowerAscii() keeps the size of its string', versions: measured(withRules(obj({ p: str(10) }), rule("(self.p.lowerAscii() + 'x') == 'abc'")), 1041666), expected: [
      forbidden(`${SPEC}.properties[l].items.x-kubernetes-validations[0].rule`, `estimated rule cost exceeds budget by factor of 1.249999x${ADVICE}`),
    ] },
  { name: 'measured: split() and join()', versions: measured(withRules(obj({ p: str(10), l: list(str(10), 5) }), rule("size(self.p.split(',')) < 3 && self.l.join(',') != ''")), 357142), expected: [
      forbidden(`${SPEC}.properties[l].items.x-kubernetes-validations[0].rule`, `estimated rule cost exceeds budget by factor of 1.249997x${ADVICE}`),
    ] },
  { name: 'measured: a list index keeps the item schema', versions: measured(withRules(obj({ l: list(str(10), 5) }), rule("self.l[0].startsWith('a')")), 3125000), expected: [
      forbidden(`${SPEC}.properties[l].items.x-kubernetes-validations[0].rule`, `estimated rule cost exceeds budget by factor of 1.250000x${ADVICE}`),
    ] },
  { name: 'measured: all() over map keys', versions: measured(withRules(map(str(10), 20), rule("self.all(k, k.startsWith('a'))")), 122549), expected: [
      forbidden(`${SPEC}.properties[l].items.x-kubernetes-validations[0].rule`, `estimated rule cost exceeds budget by factor of 1.250000x${ADVICE}`),
    ] },
  { name: 'measured: map values by key', versions: measured(withRules(map(str(10), 20), rule("self.all(k, self[k] != '')")), 102459), expected: [
      forbidden(`${SPEC}.properties[l].items.x-kubernetes-validations[0].rule`, `estimated rule cost exceeds budget by factor of 1.250000x${ADVICE}`),
    ] },
  { name: 'measured: list concatenation', versions: measured(withRules(obj({ a: list(str(10), 5), b: list(str(10), 7) }), rule('size(self.a + self.b) < 10')), 1785714), expected: [
      forbidden(`${SPEC}.properties[l].items.x-kubernetes-validations[0].rule`, `estimated rule cost exceeds budget by factor of 1.250000x${ADVICE}`),
    ] },
  { name: 'measured: string ordering reads the shorter string', versions: measured(withRules(obj({ a: str(10), b: str(20) }), rule('self.a < self.b')), 1562500), expected: [
      forbidden(`${SPEC}.properties[l].items.x-kubernetes-validations[0].rule`, `estimated rule cost exceeds budget by factor of 1.250000x${ADVICE}`),
    ] },
  { name: 'measured: string(int) compared with a literal is cheap', versions: measured(withRules(obj({ n: int }), rule("string(self.n) == '1'")), 3125000), expected: [
      forbidden(`${SPEC}.properties[l].items.x-kubernetes-validations[0].rule`, `estimated rule cost exceeds budget by factor of 1.250000x${ADVICE}`),
    ] },
  { name: 'measured: format() costs its template', versions: measured(withRules(obj({ n: int }), rule("'got %d'.format([self.n]) != ''")), 961538), expected: [
      forbidden(`${SPEC}.properties[l].items.x-kubernetes-validations[0].rule`, `estimated rule cost exceeds budget by factor of 1.249999x${ADVICE}`),
    ] },
  { name: 'measured: url() and isURL()', versions: measured(withRules(obj({ u: str(100) }), rule('isURL(self.u) && url(self.u).getScheme() == "https"')), 265957), expected: [
      forbidden(`${SPEC}.properties[l].items.x-kubernetes-validations[0].rule`, `estimated rule cost exceeds budget by factor of 1.249998x${ADVICE}`),
    ] },
  { name: 'measured: quantity()', versions: measured(withRules(obj({ q: str(20) }), rule("isQuantity(self.q) && quantity(self.q).isGreaterThan(quantity('1'))")), 568181), expected: [
      forbidden(`${SPEC}.properties[l].items.x-kubernetes-validations[0].rule`, `estimated rule cost exceeds budget by factor of 1.249998x${ADVICE}`),
    ] },
  { name: 'measured: list sum(), isSorted() and lastIndexOf()', versions: measured(withRules(obj({ n: list(int, 10), s: list(str(8), 10) }), rule("self.n.sum() < 10 && self.s.isSorted() && self.s.lastIndexOf('x') > 0")), 105932), expected: [
      forbidden(`${SPEC}.properties[l].items.x-kubernetes-validations[0].rule`, `estimated rule cost exceeds budget by factor of 1.249998x${ADVICE}`),
    ] },
  { name: 'measured: sets.contains()', versions: measured(withRules(obj({ a: list(str(8), 10), b: list(str(8), 4) }), rule('sets.contains(self.a, self.b)')), 277777), expected: [
      forbidden(`${SPEC}.properties[l].items.x-kubernetes-validations[0].rule`, `estimated rule cost exceeds budget by factor of 1.249996x${ADVICE}`),
    ] },
  { name: 'measured: replace(), trim() and substring()', versions: measured(withRules(obj({ p: str(30) }), rule("self.p.replace('a', 'bb') != '' && self.p.trim().substring(1) != ''")), 240384), expected: [
      forbidden(`${SPEC}.properties[l].items.x-kubernetes-validations[0].rule`, `estimated rule cost exceeds budget by factor of 1.249997x${ADVICE}`),
    ] },
  { name: 'measured: bytes, uint and negation', versions: measured(withRules(obj({ b: str(16, { format: 'byte' }), n: int }), rule('size(self.b) < 10 && uint(self.n) > 1u && -self.n < 5')), 1041666), expected: [
      forbidden(`${SPEC}.properties[l].items.x-kubernetes-validations[0].rule`, `estimated rule cost exceeds budget by factor of 1.249999x${ADVICE}`),
    ] },
  { name: 'measured: a regular expression read from a field', versions: measured(withRules(obj({ p: str(10), q: str(20) }), rule('self.p.matches(self.q)')), 120192), expected: [
      forbidden(`${SPEC}.properties[l].items.x-kubernetes-validations[0].rule`, `estimated rule cost exceeds budget by factor of 1.249997x${ADVICE}`),
    ] },
  { name: 'measured: an embedded resource has kind and metadata.name', versions: measured(withRules(obj({ r: { type: 'object', 'x-kubernetes-embedded-resource': true, 'x-kubernetes-preserve-unknown-fields': true } }), rule("self.r.kind == 'Pod' && self.r.metadata.name != ''")), 1562500), expected: [
      forbidden(`${SPEC}.properties[l].items.x-kubernetes-validations[0].rule`, `estimated rule cost exceeds budget by factor of 1.250000x${ADVICE}`),
    ] },
  {
    name: 'measured: a transition rule with optionalOldSelf in a map list',
    versions: spec(obj({ l: list(withRules(obj({ k: str(3), p: str(40) }, { required: ['k'] }), rule('!oldSelf.hasValue() || self.p == oldSelf.value().p', undefined, { optionalOldSelf: true })), 1562500, { 'x-kubernetes-list-type': 'map', 'x-kubernetes-list-map-keys': ['k'] }) })),
    expected: [
      forbidden(`${SPEC}.properties[l].items.x-kubernetes-validations[0].rule`, `estimated rule cost exceeds budget by factor of 1.250000x${ADVICE}`),
    ],
  },
  { name: 'measured: optional field selection and list index', versions: measured(withRules(obj({ a: str(10), l: list(str(10), 4) }), rule("self.?a.orValue('x') == 'y' && self.l[?0].hasValue()")), 1388888), expected: [
      forbidden(`${SPEC}.properties[l].items.x-kubernetes-validations[0].rule`, `estimated rule cost exceeds budget by factor of 1.111110x${ADVICE}`),
    ] },
  { name: 'a rule with optional field selection is cheap', versions: spec(withRules(obj({ a: str() }), rule("self.?a.orValue('') != 'forbidden'"))), expected: [] },
  { name: 'measured: a status condition lookup', versions: measured(withRules(obj({ conditions: list(obj({ type: str(316), status: str(undefined, { enum: ['True', 'False', 'Unknown'] }) }, { required: ['type', 'status'] }), 8) }), rule("self.conditions.exists(c, c.type == 'Ready' && c.status == 'True')")), 150602), expected: [
      forbidden(`${SPEC}.properties[l].items.x-kubernetes-validations[0].rule`, `estimated rule cost exceeds budget by factor of 1.249997x${ADVICE}`),
    ] },
  { name: 'measured: exists_one() over map values', versions: measured(withRules(map(str(3), 11), rule("self.exists_one(k, self[k] == 'v')")), 181159), expected: [
      forbidden(`${SPEC}.properties[l].items.x-kubernetes-validations[0].rule`, `estimated rule cost exceeds budget by factor of 1.249997x${ADVICE}`),
    ] },
  { name: 'all() over an unbounded list of integers stays just within the limit', versions: spec(withRules(obj({ l: list(int) }), rule('self.l.all(x, x > 0)'))), expected: [] },
  { name: 'join() of a mapped list has no known size, so comparing it is refused', versions: spec(withRules(obj({ l: list(obj({ name: str(10) }), 6) }), rule("self.l.map(x, x.name).join(',') != ''"))), expected: [
      forbidden(ROOT, `x-kubernetes-validations estimated rule cost total for entire OpenAPIv3 schema exceeds budget by factor of more than 100x${ADVICE}`),
      forbidden(`${SPEC}.x-kubernetes-validations[0].rule`, CONTRIBUTED),
      forbidden(`${SPEC}.x-kubernetes-validations[0].rule`, `estimated rule cost exceeds budget by factor of more than 100x${ADVICE}`),
    ] },
  { name: 'a transition rule on spec is cheap', versions: spec(withRules(obj({ p: str() }), rule('self.p == oldSelf.p'))), expected: [] },
  // Cardinality: how often a rule's node can occur in one object.
  { name: 'a matches() rule on unbounded list items is refused, and so is the total', versions: spec(obj({ l: list(withRules(obj({ name: str(), image: str() }, { required: ['name', 'image'] }), rule("self.name.matches('^[a-z]+$')"))) })), expected: [
      forbidden(ROOT, `x-kubernetes-validations estimated rule cost total for entire OpenAPIv3 schema exceeds budget by factor of more than 100x${ADVICE}`),
      forbidden(`${SPEC}.properties[l].items.x-kubernetes-validations[0].rule`, CONTRIBUTED),
      forbidden(`${SPEC}.properties[l].items.x-kubernetes-validations[0].rule`, `estimated rule cost exceeds budget by factor of more than 100x${ADVICE}`),
    ] },
  { name: 'measured: unbounded list items count as often as their smallest form fits in 3 MiB', versions: spec(obj({ l: list(withRules(obj({ n: int }), rule('self.n > 0 && self.n < 100 && self.n != 5 && self.n != 7'))) })), expected: [
      forbidden(`${SPEC}.properties[l].items.x-kubernetes-validations[0].rule`, `estimated rule cost exceeds budget by factor of 1.048576x${ADVICE}`),
    ] },
  { name: 'measured: a required field with a default does not add to the smallest form', versions: spec(obj({ l: list(withRules(obj({ name: str(10), image: str(10, { default: 'x' }) }, { required: ['name', 'image'] }), rule("self.name.matches('^[a-z0-9]([-a-z0-9]*[a-z0-9])?[a-z]$')"))) })), expected: [
      forbidden(`${SPEC}.properties[l].items.x-kubernetes-validations[0].rule`, `estimated rule cost exceeds budget by factor of 1.137301x${ADVICE}`),
    ] },
  { name: 'measured: nested maxItems multiply', versions: spec(obj({ l: list(obj({ m: list(withRules(obj({ s: str(100) }), rule("self.s.matches('^[a-z]+$')")), 300) }), 400) })), expected: [
      forbidden(`${SPEC}.properties[l].items.properties[m].items.x-kubernetes-validations[0].rule`, `estimated rule cost exceeds budget by factor of 1.008000x${ADVICE}`),
    ] },
  { name: 'measured: maxProperties bounds a map', versions: spec(obj({ m: { ...map(withRules(obj({ s: str(100) }), rule("self.s.matches('^[a-z]+$')")), 150000) } })), expected: [
      forbidden(`${SPEC}.properties[m].additionalProperties.x-kubernetes-validations[0].rule`, `estimated rule cost exceeds budget by factor of 1.260000x${ADVICE}`),
    ] },
  { name: 'an unbounded map counts its values as often as they fit in a request', versions: spec(obj({ m: map(withRules(obj({ s: str(100) }), rule("self.s.matches('^[a-z]+$')"))) })), expected: [
      forbidden(`${SPEC}.properties[m].additionalProperties.x-kubernetes-validations[0].rule`, `estimated rule cost exceeds budget by factor of 8.8x${ADVICE}`),
    ] },
  { name: 'measured: a bounded list below an unbounded one is unbounded', versions: spec(obj({ l: list(obj({ m: list(withRules(obj({ s: str(10) }), rule("self.s.matches('^[a-z]+$')")), 3) })) })), expected: [
      forbidden(`${SPEC}.properties[l].items.properties[m].items.x-kubernetes-validations[0].rule`, `estimated rule cost exceeds budget by factor of 1.258291x${ADVICE}`),
    ] },
  { name: 'a rule on an unbounded status list is accepted when it is cheap enough', versions: [obj({ spec: obj({}), status: obj({ c: list(withRules(obj({ t: str() }), rule("self.t.startsWith('Ready')"))) }) })], expected: [] },
  { name: 'a maxItems of 0 makes any rule free', versions: measured(withRules(obj({ p: str() }), rule("self.p.matches('^[a-z]+$')")), 0), expected: [] },
  // The limits and how the factor is printed.
  { name: 'a cost of exactly 10,000,000 is within the limit', versions: measured(withRules(obj({ p: str() }), rule("self.p != ''")), 5000000), expected: [] },
  { name: 'one more is over it, printed with six decimals', versions: measured(withRules(obj({ p: str() }), rule("self.p != ''")), 5000001), expected: [
      forbidden(`${SPEC}.properties[l].items.x-kubernetes-validations[0].rule`, `estimated rule cost exceeds budget by factor of 1.000000x${ADVICE}`),
    ] },
  { name: 'a factor of exactly 1.5 is printed with one decimal', versions: measured(withRules(obj({ p: str() }), rule("self.p != ''")), 7500000), expected: [
      forbidden(`${SPEC}.properties[l].items.x-kubernetes-validations[0].rule`, `estimated rule cost exceeds budget by factor of 1.5x${ADVICE}`),
    ] },
  { name: 'a factor of 2.25 rounds half to even', versions: measured(withRules(obj({ p: str() }), rule("self.p != ''")), 11250000), expected: [
      forbidden(`${SPEC}.properties[l].items.x-kubernetes-validations[0].rule`, `estimated rule cost exceeds budget by factor of 2.2x${ADVICE}`),
    ] },
  { name: 'a factor of 2.35 rounds up', versions: measured(withRules(obj({ p: str() }), rule("self.p != ''")), 11750000), expected: [
      forbidden(`${SPEC}.properties[l].items.x-kubernetes-validations[0].rule`, `estimated rule cost exceeds budget by factor of 2.4x${ADVICE}`),
    ] },
  { name: 'a factor of exactly 100 is still printed, and the schema total is over its limit', versions: measured(withRules(obj({ p: str() }), rule("self.p != ''")), 500000000), expected: [
      forbidden(ROOT, `x-kubernetes-validations estimated rule cost total for entire OpenAPIv3 schema exceeds budget by factor of 10.0x${ADVICE}`),
      forbidden(`${SPEC}.properties[l].items.x-kubernetes-validations[0].rule`, CONTRIBUTED),
      forbidden(`${SPEC}.properties[l].items.x-kubernetes-validations[0].rule`, `estimated rule cost exceeds budget by factor of 100.0x${ADVICE}`),
    ] },
  {
    name: 'many rules within their limit exceed the schema total; the four costliest are named',
    versions: spec(obj(Object.fromEntries(Array.from({ length: 25 }, (_, i) => [`f${i}`, list(withRules(obj({ s: str(1000) }), rule("self.s.startsWith('abcdefghij')")), 2300000 - i)])))),
    expected: [
      forbidden(ROOT, `x-kubernetes-validations estimated rule cost total for entire OpenAPIv3 schema exceeds budget by factor of 1.7x${ADVICE}`),
      forbidden(`${SPEC}.properties[f0].items.x-kubernetes-validations[0].rule`, CONTRIBUTED),
      forbidden(`${SPEC}.properties[f1].items.x-kubernetes-validations[0].rule`, CONTRIBUTED),
      forbidden(`${SPEC}.properties[f2].items.x-kubernetes-validations[0].rule`, CONTRIBUTED),
      forbidden(`${SPEC}.properties[f3].items.x-kubernetes-validations[0].rule`, CONTRIBUTED),
    ],
  },
  {
    name: 'rules over their own limit also count towards the schema total, and so does a messageExpression',
    versions: spec(obj({
      a: list(withRules(obj({ s: str(1000) }), rule("self.s.startsWith('abcdefghijklmnopqrstuvwxyz') && self.s.endsWith('abcdefghijklmnopqrstuvwxyz')")), 1500000),
      b: list(withRules(obj({ s: str(1000) }), rule("self.s.startsWith('abcdefghijklmnopqrstuvwxyz')")), 2500000),
      g: withRules(obj({ s: str(30000000) }), rule("self.s != ''", "'bad ' + self.s")),
      ...Object.fromEntries(Array.from({ length: 8 }, (_, i) => [`d${i}`, list(withRules(obj({ s: str(1000) }), rule("self.s.startsWith('abcdefghij')")), 3000000 - i)])),
    })),
    expected: [
      forbidden(ROOT, `x-kubernetes-validations estimated rule cost total for entire OpenAPIv3 schema exceeds budget by factor of 1.114999x${ADVICE}`),
      forbidden(`${SPEC}.properties[a].items.x-kubernetes-validations[0].rule`, CONTRIBUTED),
      forbidden(`${SPEC}.properties[a].items.x-kubernetes-validations[0].rule`, `estimated rule cost exceeds budget by factor of 1.5x${ADVICE}`),
      forbidden(`${SPEC}.properties[b].items.x-kubernetes-validations[0].rule`, CONTRIBUTED),
      forbidden(`${SPEC}.properties[b].items.x-kubernetes-validations[0].rule`, `estimated rule cost exceeds budget by factor of 1.250000x${ADVICE}`),
      forbidden(`${SPEC}.properties[d0].items.x-kubernetes-validations[0].rule`, CONTRIBUTED),
      forbidden(`${SPEC}.properties[g].x-kubernetes-validations[0].messageExpression`, CONTRIBUTED),
      forbidden(`${SPEC}.properties[g].x-kubernetes-validations[0].messageExpression`, `estimated messageExpression cost exceeds budget by factor of 1.200000x${ADVICE}`),
    ],
  },
  // Where the causes are reported.
  {
    name: 'versions with different schemas are reported per version',
    versions: [
      obj({ spec: withRules(obj({ p: str() }), rule("self.p != ''", "'x' + string(size(self.p))")) }),
      obj({ spec: withRules(obj({ p: str(), q: str() }), rule("self.p != ''", "'y' + string(size(self.p))")) }),
    ],
    expected: [
      forbidden('spec.versions[0].schema.openAPIV3Schema', `x-kubernetes-validations estimated rule cost total for entire OpenAPIv3 schema exceeds budget by factor of more than 100x${ADVICE}`),
      forbidden('spec.versions[0].schema.openAPIV3Schema.properties[spec].x-kubernetes-validations[0].messageExpression', CONTRIBUTED),
      forbidden('spec.versions[0].schema.openAPIV3Schema.properties[spec].x-kubernetes-validations[0].messageExpression', `estimated messageExpression cost exceeds budget by factor of more than 100x${ADVICE}`),
      forbidden('spec.versions[1].schema.openAPIV3Schema', `x-kubernetes-validations estimated rule cost total for entire OpenAPIv3 schema exceeds budget by factor of more than 100x${ADVICE}`),
      forbidden('spec.versions[1].schema.openAPIV3Schema.properties[spec].x-kubernetes-validations[0].messageExpression', CONTRIBUTED),
      forbidden('spec.versions[1].schema.openAPIV3Schema.properties[spec].x-kubernetes-validations[0].messageExpression', `estimated messageExpression cost exceeds budget by factor of more than 100x${ADVICE}`),
    ],
  },
  {
    name: 'versions sharing one schema are reported once, under spec.validation',
    versions: [
      obj({ spec: withRules(obj({ p: str() }), rule("self.p != ''", "'x' + string(size(self.p))")) }),
      obj({ spec: withRules(obj({ p: str() }), rule("self.p != ''", "'x' + string(size(self.p))")) }),
    ],
    expected: [
      forbidden(ROOT, `x-kubernetes-validations estimated rule cost total for entire OpenAPIv3 schema exceeds budget by factor of more than 100x${ADVICE}`),
      forbidden(`${SPEC}.x-kubernetes-validations[0].messageExpression`, CONTRIBUTED),
      forbidden(`${SPEC}.x-kubernetes-validations[0].messageExpression`, `estimated messageExpression cost exceeds budget by factor of more than 100x${ADVICE}`),
    ],
  },
]

/** The CRD a case is sent as: a namespaced kind in a test group, one version per schema (the first one stored). */
export function celCostCrd(c: CelCostCase, index: number): { apiVersion: string; kind: string; metadata: { name: string }; spec: Record<string, unknown> } {
  const plural = `celcosts${index}`
  return {
    apiVersion: 'apiextensions.k8s.io/v1',
    kind: 'CustomResourceDefinition',
    metadata: { name: `${plural}.cel-cost.kinetic.dev` },
    spec: {
      group: 'cel-cost.kinetic.dev',
      scope: 'Namespaced',
      names: { plural, kind: `CelCost${index}` },
      versions: c.versions.map((schema, i) => ({ name: `v${i + 1}`, served: true, storage: i === 0, schema: { openAPIV3Schema: schema } })),
    },
  }
}

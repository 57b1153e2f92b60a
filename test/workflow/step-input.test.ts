import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { buildStepInput, inputFromEnvName } from '../../shared/workflow/plan/step-input.js'

// SPEC Appendix D: step `a` has this output, step `b` has none; parameters {ns: prod}.
const outputs: Record<string, unknown> = {
  a: { count: 5, sev: 'high', ok: true, n: { c: 2 }, big: 1000000, s: '', arr: [], response: 'line1 "q"' },
  'detect-anomaly': { 'anomaly-count': 3 },
  x: { 'metrics.count': 7 },
  list: ['p', 'q'],
}
const ctx = { outputs, parameters: { ns: 'prod', 'my-param': 'hyphenated' } }

describe('buildStepInput: SPEC Appendix D golden cases (Kinetic results)', () => {
  it('escapes substituted step output so STEP_INPUT stays valid JSON (purko inserted quotes raw)', () => {
    const { stepInput } = buildStepInput(
      { input: { raw: 'Analyze ${parameters.ns} given ${steps.a.output.response}' } }, ctx)
    expect(stepInput).toBe('{"raw":"Analyze prod given line1 \\"q\\""}')
    expect(JSON.parse(stepInput)).toEqual({ raw: 'Analyze prod given line1 "q"' })
  })

  it('adds inputFrom values to the input (null for a missing key) and raw JSON env for present keys', () => {
    const result = buildStepInput({
      input: { task: 't' },
      inputFrom: [{ step: 'a', outputKey: 'response' }, { step: 'a', outputKey: 'missing' }, { step: 'zz', outputKey: 'x' }],
    }, ctx)
    expect(result.stepInput).toBe('{"missing":null,"response":"line1 \\"q\\"","task":"t"}')
    expect(result.env).toEqual([{ name: 'STEP_INPUT_A_RESPONSE', value: '"line1 \\"q\\""' }])
  })

  it('escapes <, > and & like Go', () => {
    expect(buildStepInput({ input: { task: 'a<b & c>d' } }, ctx).stepInput).toBe('{"task":"a\\u003cb \\u0026 c\\u003ed"}')
  })

  it.each([
    ['${steps.a.output.n.c}', '2'],
    ['${steps.a.output.n}', '{"c":2}'],
    ['${steps.a.output.ok}', 'true'],
    ['${steps.a.output.big}', '1000000'],
    ['${steps.a.output.arr}', '[]'],
    ['${steps.list.output.1}', 'q'],
    // purko left these verbatim; its docs promise an empty string, which Kinetic gives.
    ['${steps.b.output.x}', ''],
    ['${parameters.unknown}', ''],
    // purko never matched hyphenated parameter names.
    ['${parameters.my-param}', 'hyphenated'],
    ['${steps.detect-anomaly.output.anomaly-count}', '3'],
    ['[${parameters.ns}]', '[prod]'],
  ])('substitutes %s as %j', (template, text) => {
    const { stepInput } = buildStepInput({ input: { t: template } }, ctx)
    expect(JSON.parse(stepInput)).toEqual({ t: text })
  })

  it('warns about each reference it could not resolve', () => {
    const { warnings } = buildStepInput({ input: { t: '${steps.b.output.x} ${parameters.unknown}' } }, ctx)
    expect(warnings).toHaveLength(2)
    expect(warnings[0]).toContain('${steps.b.output.x}')
    expect(warnings[1]).toContain('${parameters.unknown}')
  })

  it.each([
    ['detect-anomaly', 'anomaly-count', 'STEP_INPUT_DETECT_ANOMALY_ANOMALY_COUNT'],
    ['x', 'metrics.count', 'STEP_INPUT_X_METRICS.COUNT'],
  ])('names the inputFrom env of step %s key %s %s', (step, key, name) => {
    expect(inputFromEnvName(step, key)).toBe(name)
    const { env } = buildStepInput({ inputFrom: [{ step, outputKey: key }] }, ctx)
    expect(env.map((e) => e.name)).toEqual([name])
  })
})

describe('buildStepInput: structure', () => {
  it('gives {} for a step without input', () => {
    expect(buildStepInput({}, ctx)).toEqual({ stepInput: '{}', env: [], warnings: [] })
  })

  it('sorts keys at every level like Go and substitutes inside nested values', () => {
    const { stepInput } = buildStepInput({ input: { z: 1, a: { y: ['${parameters.ns}'], b: null } } }, ctx)
    expect(stepInput).toBe('{"a":{"b":null,"y":["prod"]},"z":1}')
  })

  it('passes a non-object output whole and sets no env for it', () => {
    const result = buildStepInput({ inputFrom: [{ step: 'list', outputKey: 'items' }] }, ctx)
    expect(JSON.parse(result.stepInput)).toEqual({ items: ['p', 'q'] })
    expect(result.env).toEqual([])
  })

  it('passes the whole output under the step name when inputFrom has no outputKey', () => {
    const result = buildStepInput({ inputFrom: [{ step: 'x' }] }, ctx)
    expect(JSON.parse(result.stepInput)).toEqual({ x: { 'metrics.count': 7 } })
  })

  it('does not substitute placeholders that arrive inside another step output', () => {
    const sneaky = { outputs: { up: { text: 'see ${parameters.ns}' } }, parameters: { ns: 'prod' } }
    const viaTemplate = buildStepInput({ input: { t: '${steps.up.output.text}' } }, sneaky)
    const viaInputFrom = buildStepInput({ inputFrom: [{ step: 'up', outputKey: 'text' }] }, sneaky)
    expect(JSON.parse(viaTemplate.stepInput)).toEqual({ t: 'see ${parameters.ns}' })
    expect(JSON.parse(viaInputFrom.stepInput)).toEqual({ text: 'see ${parameters.ns}' })
  })

  it('drops an inputFrom env whose name Kubernetes would reject, with a warning', () => {
    const result = buildStepInput(
      { inputFrom: [{ step: 'odd', outputKey: 'has space' }] },
      { outputs: { odd: { 'has space': 1 } }, parameters: {} })
    expect(JSON.parse(result.stepInput)).toEqual({ 'has space': 1 })
    expect(result.env).toEqual([])
    expect(result.warnings[0]).toContain('STEP_INPUT_ODD_HAS SPACE')
  })
})

describe('buildStepInput: property', () => {
  it('always yields valid JSON in which substituted text arrives unchanged', () => {
    const text = fc.string({ unit: 'binary' })
    fc.assert(fc.property(text, text, text, (param, out, around) => {
      const { stepInput, env } = buildStepInput({
        input: { raw: `${around}\${parameters.p}|\${steps.s.output.v}${around}`, other: around },
        inputFrom: [{ step: 's', outputKey: 'v' }],
      }, { outputs: { s: { v: out } }, parameters: { p: param } })
      const parsed = JSON.parse(stepInput) as Record<string, unknown>
      expect(parsed.raw).toBe(`${around}${param}|${out}${around}`)
      expect(parsed.v).toBe(out)
      expect(JSON.parse(env[0]!.value)).toBe(out)
    }))
  })

  it('always yields valid JSON for arbitrary JSON outputs inserted into strings', () => {
    fc.assert(fc.property(fc.jsonValue(), (value) => {
      const { stepInput } = buildStepInput(
        { input: { t: 'x ${steps.s.output.v} y' } }, { outputs: { s: { v: value } }, parameters: {} })
      expect(() => JSON.parse(stepInput)).not.toThrow()
    }))
  })
})

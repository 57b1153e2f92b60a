// Tool definitions, argument validation and error results of the recipes MCP server (spec §14.3, §14.4).
import { describe, expect, it } from 'vitest'
import { ConflictError, RefusedError, TransientError } from '../../shared/core/errors.js'
import { errorResult, forbidden, ToolError, toolErrorOf, toolResult } from '../../shared/recipes-mcp/errors.js'
import { parseArguments, toolDefinitions } from '../../shared/recipes-mcp/tools.js'

describe('tool definitions and arguments', () => {
  it('every schema is a closed object without a $schema dialect or oneOf', () => {
    for (const t of toolDefinitions()) {
      expect(t.inputSchema).toMatchObject({ type: 'object', additionalProperties: false })
      expect(JSON.stringify(t.inputSchema)).not.toMatch(/"\$schema"|"oneOf"/)
      expect(t.title).toBe(t.annotations.title)
    }
  })

  it('fills defaults, and names the offending field of a violation', () => {
    expect(parseArguments('list-recipes', undefined)).toEqual({ ok: true, args: { kind: 'all', limit: 100 } })
    expect(parseArguments('get-recipe-status', { namespace: 'a', name: 'b' })).toEqual({ ok: true, args: { namespace: 'a', name: 'b', history: 5 } })
    expect(parseArguments('delete-recipe', { namespace: 'a', name: 'b' })).toEqual({ ok: true, args: { namespace: 'a', name: 'b', orphan: false } })
    expect(parseArguments('deploy-recipe', { namespace: 'a', name: 'b' })).toEqual({ ok: true, args: { namespace: 'a', name: 'b', dryRun: false } })
    const bad = parseArguments('deploy-recipe', { namespace: 'a', name: 'b', values: Object.fromEntries(Array.from({ length: 65 }, (_, i) => [`v${i}`, i])) })
    expect(bad).toEqual({ ok: false, message: 'Invalid arguments for tool deploy-recipe: values: at most 64 entries' })
    expect(parseArguments('list-recipes', { limit: 0 })).toMatchObject({ ok: false, message: expect.stringContaining('limit') })
  })
})

describe('tool results and errors', () => {
  it('a result carries structuredContent and the same JSON as its one text item', () => {
    expect(toolResult({ a: 1 })).toEqual({ content: [{ type: 'text', text: '{"a":1}' }], structuredContent: { a: 1 } })
    expect(errorResult(new ToolError('NotFound', 'gone'))).toEqual({ content: [{ type: 'text', text: 'gone' }], structuredContent: { error: { code: 'NotFound', message: 'gone' } }, isError: true })
  })

  it('maps the port errors to the spec §14.4 codes, and hides whatever else went wrong', () => {
    expect(toolErrorOf(new RefusedError('bad', 422, { causes: [{ field: 'spec.x', message: 'no' }] }), 'r1')).toMatchObject({ code: 'Invalid', message: 'bad', details: { causes: [{ field: 'spec.x', message: 'no' }] } })
    expect(toolErrorOf(new ConflictError('modified'), 'r1').code).toBe('Conflict')
    expect(toolErrorOf(new TransientError('503 from https://10.0.0.1'), 'r1')).toMatchObject({ code: 'Unavailable', message: 'The Kubernetes API is unavailable; try again later' })
    const internal = toolErrorOf(new Error('token abc leaked in a message'), 'r7')
    expect(internal).toMatchObject({ code: 'Internal', message: 'Internal error (request r7)' })
    const own = new ToolError('NotATemplate', 'x')
    expect(toolErrorOf(own, 'r1')).toBe(own)
  })

  it('a denial names the verb and resource, with the attributes as details', () => {
    expect(forbidden('bob', { verb: 'update', group: 'purko.io', resource: 'workflowrecipes', namespace: 'a', name: 'shop' })).toMatchObject({
      code: 'Forbidden', message: 'bob may not update workflowrecipes.purko.io shop in namespace a',
      details: { verb: 'update', group: 'purko.io', resource: 'workflowrecipes', namespace: 'a', name: 'shop' },
    })
  })
})

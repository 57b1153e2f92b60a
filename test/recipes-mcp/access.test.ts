// The SubjectAccessReviews of each tool (spec §14.2), without a server.
import { describe, expect, it } from 'vitest'
import { deleteAccess, deployAccess, getAccess, listAccess, secretNamesOf, templateAccess } from '../../shared/recipes-mcp/access.js'

const R = { group: 'purko.io', resource: 'workflowrecipes' }

describe('tool access', () => {
  it('list in the namespace or cluster-wide; get, template get, delete (+ patch with orphan) on the recipe', () => {
    expect(listAccess('a')).toEqual([{ verb: 'list', ...R, namespace: 'a' }])
    expect(listAccess(undefined)).toEqual([{ verb: 'list', ...R }])
    expect(getAccess('a', 'x')).toEqual([{ verb: 'get', ...R, namespace: 'a', name: 'x' }])
    expect(templateAccess('lib', 't')).toEqual([{ verb: 'get', ...R, namespace: 'lib', name: 't' }])
    expect(deleteAccess('a', 'x', false)).toEqual([{ verb: 'delete', ...R, namespace: 'a', name: 'x' }])
    expect(deleteAccess('a', 'x', true)).toEqual([{ verb: 'delete', ...R, namespace: 'a', name: 'x' }, { verb: 'patch', ...R, namespace: 'a', name: 'x' }])
  })

  it('deploy: create or update, then get on each Secret named by envSecret (workloads, tests) and mcp.tokenSecret, once each', () => {
    const spec = {
      workloads: [
        { name: 'a', envSecret: [{ secretName: 'db' }, { secretName: 'api' }], mcp: { tokenSecret: { secretName: 'tok' } } },
        { name: 'b', envSecret: [{ secretName: 'db' }] },
      ],
      tests: [{ name: 't', envSecret: [{ secretName: 'test-only' }] }],
    }
    expect(deployAccess('a', 'x', false, spec)).toEqual([
      { verb: 'create', ...R, namespace: 'a', name: 'x' },
      ...['api', 'db', 'test-only', 'tok'].map((name) => ({ verb: 'get', group: '', resource: 'secrets', namespace: 'a', name })),
    ])
    expect(deployAccess('a', 'x', true, {})).toEqual([{ verb: 'update', ...R, namespace: 'a', name: 'x' }])
  })

  it('finds Secret names in any shape a caller sends, ignoring what is not one', () => {
    expect(secretNamesOf(null)).toEqual([])
    expect(secretNamesOf({ workloads: 'x', tests: [null, 1, { envSecret: {} }] })).toEqual([])
    expect(secretNamesOf({ workloads: [{ envSecret: [{ secretName: '' }, { secretName: 3 }, { secretName: 'ok' }] }] })).toEqual(['ok'])
  })
})

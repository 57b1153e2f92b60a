import { describe, expect, it } from 'vitest'
import fc from 'fast-check'
import { parseRegistry, removeEntry, renderRegistry, upsertEntry, type RegistryEntry } from '../../shared/mcp/plan/registry.js'

const github: RegistryEntry = { name: 'github', url: 'http://localhost:8002', auth: 'bearer', icon: 'gh', category: 'scm', secretRef: 'github-mcp-token' }

// The shape Helm renders from a values list: YAML, not JSON, with keys purko does not know.
const helmYaml = `- name: lumino
  url: http://lumino.ai-agents.svc:8080
  auth: none
  category: observability
  description: logs and metrics
- name: github
  url: http://localhost:8002
  auth: bearer
  secretRef: github-mcp-token
`

describe('parseRegistry', () => {
  it('reads absent and blank content as an empty registry', () => {
    expect(parseRegistry(undefined)).toEqual({ entries: [] })
    expect(parseRegistry('  \n')).toEqual({ entries: [] })
    expect(parseRegistry('[]')).toEqual({ entries: [] })
  })

  it('reads the JSON purko writes', () => {
    expect(parseRegistry(renderRegistry([github]))).toEqual({ entries: [github] })
  })

  it("reads Helm's YAML list and keeps keys it does not know", () => {
    const { entries, error } = parseRegistry(helmYaml)
    expect(error).toBeUndefined()
    expect(entries.map((e) => e.name)).toEqual(['lumino', 'github'])
    expect(entries[0]).toMatchObject({ description: 'logs and metrics', category: 'observability' })
  })

  it('reads an entry without auth as auth none', () => {
    expect(parseRegistry('- {name: a, url: "http://a"}').entries).toEqual([{ name: 'a', url: 'http://a', auth: 'none' }])
  })

  it.each([
    ['text that is neither YAML nor JSON', '{"name": "a", '],
    ['a map instead of a list', 'servers:\n  - name: a\n'],
    ['a scalar', 'hello'],
    ['an item without a name', '- url: http://a\n'],
    ['an item without a url', '- name: a\n'],
    ['an item that is a string', '- a\n'],
    ['a name that is a number', '- {name: 3, url: "http://a"}'],
    ['an icon that is a map', '- {name: a, url: "http://a", icon: {x: 1}}'],
  ])('reports %s as an error with no entries, without throwing', (_, text) => {
    const parsed = parseRegistry(text)
    expect(parsed.entries).toEqual([])
    expect(parsed.error).toEqual(expect.any(String))
  })
})

const AGENTS = 'ai-agents'

describe('upsertEntry and removeEntry', () => {
  const others = parseRegistry(helmYaml).entries.filter((e) => e.name !== 'github')
  const mine = { ...github, namespace: AGENTS }

  it('appends a new server after the entries of other writers', () => {
    expect(upsertEntry(others, mine, AGENTS).map((e) => e.name)).toEqual(['lumino', 'github'])
  })

  it("replaces its owner's entry in place (one without a namespace is the agent namespace's) and drops later duplicates", () => {
    const old = { ...github, url: 'http://old' }
    const result = upsertEntry([old, ...others, { ...old }], mine, AGENTS)
    expect(result).toEqual([mine, ...others])
  })

  it('never replaces or removes the entry of a server of the same name in another namespace', () => {
    const platform = { ...github, namespace: AGENTS }
    const impostor = { ...github, url: 'https://attacker.example/mcp', namespace: 'evil' }
    const helmOne = { ...github }
    expect(upsertEntry([platform, ...others], impostor, AGENTS)).toEqual([platform, ...others, impostor])
    expect(upsertEntry([helmOne], impostor, AGENTS)).toEqual([helmOne, impostor])
    expect(removeEntry([platform, impostor, helmOne], { namespace: 'evil', name: 'github' }, AGENTS)).toEqual([platform, helmOne])
    expect(removeEntry([platform, impostor, helmOne], { namespace: AGENTS, name: 'github' }, AGENTS)).toEqual([impostor])
  })

  it('takes over what `claims` says is its own, and nothing else', () => {
    const legacy = { name: 'web', url: 'http://web.team.svc:8000/mcp', auth: 'none' }
    const entry = { ...legacy, namespace: 'team' }
    const claims = (e: RegistryEntry) => e === legacy
    expect(upsertEntry([legacy, ...others], entry, AGENTS, claims)).toEqual([entry, ...others])
    expect(removeEntry([legacy, ...others], { namespace: 'team', name: 'web' }, AGENTS, claims)).toEqual(others)
  })

  it('renders 2-space-indented JSON that reads back the same', () => {
    const text = renderRegistry(upsertEntry(others, mine, AGENTS))
    expect(text).toContain('\n  {\n    "name": "lumino"')
    expect(parseRegistry(text).entries).toEqual(upsertEntry(others, mine, AGENTS))
  })

  it('reads an entry whose namespace is not a string as an error', () => {
    expect(parseRegistry('- {name: a, url: "http://a", namespace: 3}').error).toEqual(expect.any(String))
  })
})

const name = fc.stringMatching(/^[a-z][a-z0-9-]{0,10}$/)
const namespace = fc.option(fc.constantFrom(AGENTS, 'team', 'evil'), { nil: undefined })
const entry = fc.record({
  name,
  url: fc.webUrl(),
  auth: fc.constantFrom('none', 'bearer'),
  category: fc.option(fc.string(), { nil: undefined }),
  namespace,
  note: fc.option(fc.jsonValue(), { nil: undefined }),
}).map((e) => JSON.parse(JSON.stringify(e)) as RegistryEntry)
const owned = (e: RegistryEntry) => `${e.namespace ?? AGENTS}/${e.name}`

describe('registry properties', () => {
  it("an upsert keeps every other owner's entry and the entry written, a remove keeps every other owner's entry", () => {
    fc.assert(fc.property(fc.uniqueArray(entry, { selector: owned }), entry, (existing, mine) => {
      const key = owned(mine)
      const after = parseRegistry(renderRegistry(upsertEntry(existing, mine, AGENTS))).entries
      expect(after.filter((e) => owned(e) !== key)).toEqual(existing.filter((e) => owned(e) !== key))
      expect(after.filter((e) => owned(e) === key)).toEqual([mine])
      const removed = parseRegistry(renderRegistry(removeEntry(after, { namespace: mine.namespace ?? AGENTS, name: mine.name }, AGENTS))).entries
      expect(removed).toEqual(existing.filter((e) => owned(e) !== key))
    }))
  })

  it('never throws on arbitrary text', () => {
    fc.assert(fc.property(fc.string(), (text) => {
      const parsed = parseRegistry(text)
      if (parsed.error) expect(parsed.entries).toEqual([])
    }))
  })
})

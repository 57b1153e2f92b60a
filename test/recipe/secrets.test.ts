// spec §5.8 copied Secrets (desired shape; bytes come from the caller) and §2.5.
import { describe, expect, it } from 'vitest'
import { copiedSecretManifest, envSecretCopy, sourceSecretAnnotation, tokenSecretCopy, withSecretData } from '../../shared/recipe/plan/secrets.js'
import { RECIPE } from './manifest-fixtures.js'

describe('copied Secrets (spec §5.8)', () => {
  const copy = envSecretCopy(RECIPE, 'sandbox-recipes', 'recipes-demo-shop-web-0f1506de-env', [
    { name: 'DATABASE_PASSWORD', secretName: 'shop-db', key: 'password' },
    { name: 'API_TOKEN', secretName: 'api', key: 'token', optional: true },
    { name: 'DB_USER', secretName: 'shop-db', key: 'user' },
  ])

  it('reads each named key from the recipe namespace and keys the copy by the variable name', () => {
    expect(copy).toEqual({
      kind: 'SecretCopy', namespace: 'sandbox-recipes', name: 'recipes-demo-shop-web-0f1506de-env',
      sources: [
        { namespace: 'recipes-demo', name: 'shop-db', key: 'password', env: 'DATABASE_PASSWORD', optional: false },
        { namespace: 'recipes-demo', name: 'api', key: 'token', env: 'API_TOKEN', optional: true },
        { namespace: 'recipes-demo', name: 'shop-db', key: 'user', env: 'DB_USER', optional: false },
      ],
    })
  })

  it('is an Opaque Secret with the source annotation, the workload label and no data', () => {
    const m = copiedSecretManifest(RECIPE, copy, { workload: 'web' }, 3)
    expect(m).toEqual({
      apiVersion: 'v1', kind: 'Secret', type: 'Opaque',
      metadata: {
        name: 'recipes-demo-shop-web-0f1506de-env', namespace: 'sandbox-recipes',
        labels: {
          'app.kubernetes.io/managed-by': 'kinetic', 'app.kubernetes.io/part-of': 'shop', 'purko.io/recipe': 'shop',
          'purko.io/recipe-namespace': 'recipes-demo', 'purko.io/recipe-uid': RECIPE.uid, 'purko.io/component': 'secret',
          'purko.io/revision': '3', 'purko.io/workload': 'web',
        },
        annotations: { 'purko.io/source-secret': 'recipes-demo/shop-db,recipes-demo/api' },
      },
    })
    expect(sourceSecretAnnotation(copy.sources)).toBe('recipes-demo/shop-db,recipes-demo/api')
  })

  it('gets its bytes from the caller: only the named keys, optional missing ones omitted, required missing ones reported', () => {
    const m = copiedSecretManifest(RECIPE, copy, { workload: 'web' }, 3)
    const { manifest, missing } = withSecretData(m, copy, { 'shop-db': { password: 'cHc=', 'superuser-token': 'eA==' } })
    expect(manifest.data).toEqual({ DATABASE_PASSWORD: 'cHc=' })
    expect(missing.map((s) => `${s.name}/${s.key}`)).toEqual(['shop-db/user'])
  })

  it('copies the MCP token to the single key token', () => {
    expect(tokenSecretCopy(RECIPE, 'mcp-server', 'b-mcp-token', { secretName: 'mcp-auth', key: 'bearer' }).sources)
      .toEqual([{ namespace: 'recipes-demo', name: 'mcp-auth', key: 'bearer', env: 'token', optional: false }])
  })
})

// Serves: the console, people's window onto runs, agents, MCP servers, providers and recipes
// (issue 13): server-rendered pages, two live streams (a run's changes, a step's log) and the
// actions forwarded to run-control. No Trigger: people reach it over HTTP (knative/services/console.yaml).
// Reads: whatever the person may read, with their own rights (ConsoleDeps.kubeFor). Writes nothing to Kubernetes.
import type { Context, Hono } from 'hono'
import { actionRoutes } from '../../shared/console/auth/actions.js'
import { personFor } from '../../shared/console/auth/person.js'
import { signInRoutes } from '../../shared/console/auth/routes.js'
import { loadAssets, type ConsoleAssets } from '../../shared/console/assets.js'
import type { ConsoleDeps, ConsoleRequest, PageResult, Person } from '../../shared/console/context.js'
import { agentPage, agentsPage } from '../../shared/console/pages/agents.js'
import { errorPage, notFoundPage, notIdentifiedPage } from '../../shared/console/pages/errors.js'
import { mcpServersPage } from '../../shared/console/pages/mcpservers.js'
import { providersPage } from '../../shared/console/pages/providers.js'
import { recipePage, recipesPage } from '../../shared/console/pages/recipes.js'
import { workflowListPage } from '../../shared/console/pages/workflows.js'
import { logEventsResponse, runEventsResponse } from '../../shared/console/run/live.js'
import { runPage, stepPage } from '../../shared/console/run/run-page.js'
import { renderDocument } from '../../shared/console/shell.js'
import { baseApp } from '../../shared/http/app.js'

/**
 * Headers on every answer: only our own origin's scripts, styles and images (no inline script,
 * so an escaped value that slipped through still cannot run), never inside a frame.
 */
export const SECURITY_HEADERS: Readonly<Record<string, string>> = {
  'content-security-policy': "default-src 'self'; img-src 'self' data:; frame-ancestors 'none'",
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'same-origin',
}

/** Assets are named by their content hash, so a browser may keep one for good. */
export const ASSET_CACHE_CONTROL = 'public, max-age=31536000, immutable'

type Params = Record<string, string>
type PageHandler = (req: ConsoleRequest, params: Params) => Promise<PageResult>
type StreamHandler = (req: ConsoleRequest, params: Params, signal: AbortSignal) => Promise<Response>

/**
 * The console function. `assets` defaults to bundling the client scripts now (esbuild in
 * development, the pre-built bundle in the image); the first page waits for them.
 */
export function createApp(deps: ConsoleDeps, assets: Promise<ConsoleAssets> = loadAssets()): Hono {
  // Ready once the assets are there, so nobody's first page waits for esbuild (under tsx).
  let assetsReady = false
  const app = baseApp(deps.log, () => {
    if (!assetsReady) currentAssets().catch(() => {})
    return assetsReady
  })
  // A failed bundle is retried on the next request or probe instead of breaking every page for good.
  let loaded: Promise<ConsoleAssets> | undefined
  const track = (p: Promise<ConsoleAssets>) => p.then((a) => { assetsReady = true; return a }, (err: unknown) => {
    loaded = undefined
    deps.log.error({ reason: err instanceof Error ? err.message : String(err) }, 'Could not load the console assets')
    throw err
  })
  loaded = track(assets)
  loaded.catch(() => {})
  const currentAssets = () => (loaded ??= track(loadAssets()))

  app.use('*', async (c, next) => {
    await next()
    for (const [name, value] of Object.entries(SECURITY_HEADERS)) c.res.headers.set(name, value)
  })

  const shellFor = async (person?: Person) => {
    const a = await currentAssets()
    return { config: deps.config, now: deps.now(), assetUrl: (name: string) => a.url(name), ...(person ? { person } : {}) }
  }

  const document = (c: Context, shell: Parameters<typeof renderDocument>[0], result: PageResult) => {
    const markup = c.req.query('fragment') === '1' ? result.body.html : renderDocument(shell, result)
    return c.html(markup, result.status as 200, { 'cache-control': 'no-store' })
  }

  const failure = (err: unknown, person: Person | undefined, c: Context) => {
    const result = errorPage(err, person)
    if (result.status >= 500) deps.log.warn({ path: c.req.path, error: err instanceof Error ? err.name : 'Error', reason: err instanceof Error ? err.message : String(err) }, 'Could not render a console page')
    return result
  }

  // Who is asking, then that person's request; null when nobody is identified (answered already).
  const identify = async (c: Context): Promise<ConsoleRequest | Response> => {
    const person = await personFor(deps, c)
    if (!person) {
      if (deps.config.auth === 'token') {
        const url = new URL(c.req.url)
        return c.redirect(`/signin?next=${encodeURIComponent(url.pathname + url.search)}`, 303)
      }
      return document(c, await shellFor(), notIdentifiedPage(deps.config))
    }
    const a = await currentAssets()
    return { person, kube: deps.kubeFor(person.credential), now: deps.now(), config: deps.config, url: new URL(c.req.url), assetUrl: (name) => a.url(name) }
  }

  const page = (handler: PageHandler) => async (c: Context) => {
    let req: ConsoleRequest | Response
    try {
      req = await identify(c)
    } catch (err) {
      // Who is asking could not be checked (the API server is down): a page saying so, not JSON.
      return document(c, await shellFor(), failure(err, undefined, c))
    }
    if (req instanceof Response) return req
    let result: PageResult
    try {
      result = await handler(req, c.req.param() as Params)
    } catch (err) {
      result = failure(err, req.person, c)
    }
    return document(c, req, result)
  }

  // An EventSource cannot follow a redirect to a sign-in page; it gets the status and stops.
  const stream = (handler: StreamHandler) => async (c: Context) => {
    const person = await personFor(deps, c)
    if (!person) return c.text('Not signed in', 401, { 'cache-control': 'no-store' })
    const a = await currentAssets()
    const req: ConsoleRequest = { person, kube: deps.kubeFor(person.credential), now: deps.now(), config: deps.config, url: new URL(c.req.url), assetUrl: (name) => a.url(name) }
    try {
      return await handler(req, c.req.param() as Params, c.req.raw.signal)
    } catch (err) {
      const result = failure(err, person, c)
      return c.text(result.title, result.status as 200, { 'cache-control': 'no-store' })
    }
  }

  app.route('/', signInRoutes(deps, { assets: currentAssets }))
  app.route('/actions', actionRoutes(deps))

  app.get('/assets/*', async (c) => {
    const asset = (await currentAssets()).get(c.req.path.slice('/assets/'.length))
    if (!asset) return c.text('Not found', 404, { 'cache-control': 'no-store' })
    return c.body(asset.body as Uint8Array<ArrayBuffer>, 200, { 'content-type': asset.type, 'cache-control': ASSET_CACHE_CONTROL })
  })

  app.get('/', (c) => c.redirect('/workflows', 303))
  app.get('/workflows', page((req) => workflowListPage(req)))
  app.get('/workflows/:ns/:name', page((req, p) => runPage(req, p.ns as string, p.name as string)))
  app.get('/workflows/:ns/:name/steps/:step', page((req, p) => stepPage(req, p.ns as string, p.name as string, p.step as string)))
  app.get('/live/workflows/:ns/:name', stream((req, p, signal) => runEventsResponse(req, p.ns as string, p.name as string, req.url.searchParams.get('rv') ?? '', signal)))
  app.get('/live/logs/:ns/:name/:step', stream((req, p, signal) => logEventsResponse(req, p.ns as string, p.name as string, p.step as string, signal)))
  app.get('/agents', page((req) => agentsPage(req)))
  app.get('/agents/:ns/:name', page((req, p) => agentPage(req, p.ns as string, p.name as string)))
  app.get('/mcpservers', page((req) => mcpServersPage(req)))
  app.get('/providers', page((req) => providersPage(req)))
  app.get('/recipes', page((req) => recipesPage(req)))
  app.get('/recipes/:ns/:name', page((req, p) => recipePage(req, p.ns as string, p.name as string)))

  app.notFound(async (c) => {
    const person = await personFor(deps, c).catch(() => null)
    return document(c, await shellFor(person ?? undefined), notFoundPage(`the page ${c.req.path}`))
  })
  return app
}

/**
 * GET /mcpservers: each MCP server's phase, where it is registered, what its last tool discovery
 * found (and why it could not list the tools), its conditions, and the tools it offers.
 */
import type { MCPServer } from '../../schemas/mcpserver.js'
import type { ConsoleRequest, PageResult } from '../context.js'
import { html, join, type Html } from '../html.js'
import { timeTag } from '../time.js'
import { conditionsTable, listVisible, phaseBadge, scrollTable, visibilityNote } from './common.js'

/** What the last tool discovery found, from the ToolsDiscovered condition. */
export interface DiscoveryStanding {
  state: 'listed' | 'failed' | 'waiting'
  /** The condition's reason (`Discovered`, `Unauthorized`, `SecretForbidden`, ...). */
  reason: string
  message: string
}

/** Pure: what the ToolsDiscovered condition says; `waiting` when there is none yet. */
export function discoveryStanding(server: MCPServer): DiscoveryStanding {
  const c = server.status?.conditions?.find((x) => x.type === 'ToolsDiscovered')
  if (!c) return { state: 'waiting', reason: 'Waiting', message: 'discovery not run yet' }
  const state = c.status === 'True' ? 'listed' : c.status === 'False' ? 'failed' : 'waiting'
  return { state, reason: c.reason ?? '', message: c.message ?? '' }
}

/** Pure: the standing as a badge: the reason's text, amber when the tools could not be listed. */
function discoveryBadge(d: DiscoveryStanding): Html {
  return phaseBadge(d.state === 'listed' ? 'Ready' : d.state === 'failed' ? 'Degraded' : 'Pending', d.state === 'listed' ? 'Listed' : d.reason || 'Waiting')
}

function serverSection(server: MCPServer, now: Date): Html {
  const ns = server.metadata.namespace ?? ''
  const name = server.metadata.name ?? ''
  const status = server.status ?? {}
  const tools = status.tools ?? []
  const id = `mcp-${ns}-${name}`.replace(/[^A-Za-z0-9_-]/g, '-')
  const discovery = discoveryStanding(server)
  const toolTable = tools.length > 0
    ? scrollTable(`Tools of ${name}`, ['Tool', 'Description', 'Changes things'], tools.map((t) =>
      html`<tr><td><code>${t.name}</code></td><td>${t.description ?? ''}</td><td>${t.readOnly === true ? 'no (read only)' : t.readOnly === false ? 'yes' : html`<span class="muted">not said</span>`}</td></tr>`))
    : html`<p class="empty">No tools discovered yet.</p>`
  return html`<section class="object" aria-labelledby="${id}">
<h2 id="${id}">${name} <span class="muted">in ${ns}</span> ${phaseBadge(status.phase)}</h2>
<dl class="facts">
<dt>Endpoint</dt><dd>${status.url ?? server.spec.url ?? html`<span class="muted">not registered yet</span>`}</dd>
<dt>Kind</dt><dd>${server.spec.managed === false ? 'unmanaged (an existing endpoint)' : `managed: ${server.spec.image}`}, ${server.spec.transport ?? 'http'}</dd>
<dt>Tools</dt><dd>${status.toolCount ?? tools.length}${status.toolsTruncated ? ' (more than the status keeps)' : ''}</dd>
<dt>Tool discovery</dt><dd>${discoveryBadge(discovery)} ${discovery.message}</dd>
<dt>Last discovery</dt><dd>${timeTag(status.lastDiscovery, now)}${status.lastDiscovery ? '' : 'never'}${status.discoveredTransport ? html` <span class="muted">over ${status.discoveredTransport}</span>` : ''}</dd>
${status.message ? html`<dt>Message</dt><dd>${status.message}</dd>` : ''}
</dl>
${discovery.state === 'failed' ? html`<p class="note" role="note">The server runs, but its tools could not be listed (${discovery.reason}): ${discovery.message}</p>` : ''}
${toolTable}
<details><summary>Conditions</summary>${conditionsTable(status.conditions, (iso) => timeTag(iso, now))}</details>
</section>`
}

/** GET /mcpservers. */
export async function mcpServersPage(req: ConsoleRequest): Promise<PageResult> {
  const visible = await listVisible(req, () => req.kube.listAllMCPServers(), (ns) => req.kube.listMCPServers(ns))
  const servers = [...visible.items].sort((a, b) => (a.metadata.namespace ?? '').localeCompare(b.metadata.namespace ?? '') || (a.metadata.name ?? '').localeCompare(b.metadata.name ?? ''))
  const summary = servers.length > 0
    ? scrollTable('MCP servers', ['Name', 'Namespace', 'Phase', { text: 'Tools', num: true }, 'Tool discovery', 'Last discovery'], servers.map((s) =>
      html`<tr><td><a href="#${`mcp-${s.metadata.namespace ?? ''}-${s.metadata.name ?? ''}`.replace(/[^A-Za-z0-9_-]/g, '-')}">${s.metadata.name ?? ''}</a></td><td>${s.metadata.namespace ?? ''}</td><td>${phaseBadge(s.status?.phase)}</td><td class="num">${s.status?.toolCount ?? s.status?.tools?.length ?? 0}</td><td>${discoveryBadge(discoveryStanding(s))}</td><td>${timeTag(s.status?.lastDiscovery, req.now)}</td></tr>`))
    : html`<p class="empty">No MCP servers to show.</p>`
  return {
    status: 200,
    title: 'MCP servers',
    nav: 'mcpservers',
    body: join([html`<h1>MCP servers</h1>`, visibilityNote(visible, 'MCPServers'), summary, ...servers.map((s) => serverSection(s, req.now))], '\n'),
  }
}

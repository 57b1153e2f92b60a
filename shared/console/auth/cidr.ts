/**
 * IPv4 and IPv6 address ranges (CIDR notation) and whether a peer address falls inside one.
 * Pure. Every address is read as 128 bits, IPv4 as IPv4-mapped IPv6 (`::ffff:a.b.c.d`), so an
 * IPv4 range matches the mapped form Node reports for IPv4 peers on a dual-stack socket.
 */

/** A parsed range: the network's first 128-bit address and how many leading bits must match. */
export interface Cidr {
  /** As written in the configuration (for messages). */
  text: string
  network: bigint
  prefix: number
}

const IPV4_MAPPED = 0xffffn << 32n
const ALL_ONES = (1n << 128n) - 1n

function parseIpv4(text: string): bigint | null {
  const parts = text.split('.')
  if (parts.length !== 4) return null
  let value = 0n
  for (const part of parts) {
    // Leading zeros are refused: some parsers read them as octal, so their meaning is unclear.
    if (!/^(0|[1-9][0-9]{0,2})$/.test(part)) return null
    const octet = Number(part)
    if (octet > 255) return null
    value = (value << 8n) | BigInt(octet)
  }
  return value
}

function parseGroups(text: string): number[] | null {
  if (text === '') return []
  const groups: number[] = []
  for (const group of text.split(':')) {
    if (!/^[0-9a-f]{1,4}$/i.test(group)) return null
    groups.push(parseInt(group, 16))
  }
  return groups
}

function parseIpv6(text: string): bigint | null {
  let rest = text
  let tail: number[] = []
  // A dotted IPv4 tail stands for the last two groups (`::ffff:10.0.0.1`).
  const lastColon = rest.lastIndexOf(':')
  if (rest.slice(lastColon + 1).includes('.')) {
    const v4 = parseIpv4(rest.slice(lastColon + 1))
    if (v4 === null) return null
    tail = [Number(v4 >> 16n), Number(v4 & 0xffffn)]
    rest = rest.slice(0, lastColon + 1)
    if (rest.endsWith(':') && !rest.endsWith('::')) rest = rest.slice(0, -1)
  }
  const halves = rest.split('::')
  if (halves.length > 2) return null
  const head = parseGroups(halves[0] ?? '')
  const after = halves.length === 2 ? parseGroups(halves[1] ?? '') : []
  if (head === null || after === null) return null
  const given = head.length + after.length + tail.length
  let groups: number[]
  if (halves.length === 2) {
    if (given > 7) return null
    groups = [...head, ...new Array<number>(8 - given).fill(0), ...after, ...tail]
  } else {
    if (given !== 8) return null
    groups = [...head, ...tail]
  }
  return groups.reduce((value, group) => (value << 16n) | BigInt(group), 0n)
}

/**
 * Pure: an address as 128 bits (IPv4 as IPv4-mapped), or null when it is not an address. A
 * zone (`fe80::1%eth0`) is dropped: ranges do not name zones.
 */
export function parseAddress(text: string): bigint | null {
  const address = text.trim().replace(/%.*$/, '')
  if (address.includes(':')) return parseIpv6(address)
  const v4 = parseIpv4(address)
  return v4 === null ? null : IPV4_MAPPED | v4
}

/**
 * Pure: a range as `address/prefix` (IPv4 up to /32, IPv6 up to /128); a bare address is a
 * range of one. Null when it does not parse, or when bits beyond the prefix are set
 * (`10.0.0.1/8` is most likely a typo for a host, so it is refused rather than guessed).
 */
export function parseCidr(text: string): Cidr | null {
  const trimmed = text.trim()
  const [address = '', prefixText, ...extra] = trimmed.split('/')
  if (extra.length > 0) return null
  const v4 = !address.includes(':')
  const network = parseAddress(address)
  if (network === null) return null
  const max = v4 ? 32 : 128
  if (prefixText !== undefined && !/^(0|[1-9][0-9]{0,2})$/.test(prefixText)) return null
  const given = prefixText === undefined ? max : Number(prefixText)
  if (given > max) return null
  const prefix = v4 ? 96 + given : given
  if ((network & ~maskOf(prefix) & ALL_ONES) !== 0n) return null
  return { text: trimmed, network, prefix }
}

function maskOf(prefix: number): bigint {
  return prefix === 0 ? 0n : (ALL_ONES << BigInt(128 - prefix)) & ALL_ONES
}

/** Pure: whether the address (as a socket reports it) is inside any of the ranges; false for anything that is not an address. */
export function isInAnyCidr(address: string | undefined, ranges: readonly Cidr[]): boolean {
  if (address === undefined) return false
  const value = parseAddress(address)
  if (value === null) return false
  return ranges.some((r) => (value & maskOf(r.prefix)) === r.network)
}

// Which peers count as the trusted proxy: IPv4 and IPv6 ranges, and the IPv4-mapped IPv6 form
// Node reports for IPv4 peers of a dual-stack socket.
import { describe, expect, it } from 'vitest'
import { isInAnyCidr, parseAddress, parseCidr, type Cidr } from '../../../shared/console/auth/cidr.js'

const ranges = (...texts: string[]): Cidr[] => texts.map((t) => parseCidr(t)!)

describe('CIDR matching', () => {
  it.each([
    ['10.1.2.3', '10.0.0.0/8', true],
    ['11.0.0.1', '10.0.0.0/8', false],
    ['::ffff:10.0.0.1', '10.0.0.0/8', true],
    ['::ffff:192.168.1.1', '10.0.0.0/8', false],
    ['::ffff:a00:1', '10.0.0.0/8', true],
    ['127.0.0.1', '127.0.0.1', true],
    ['127.0.0.2', '127.0.0.1', false],
    ['::1', '::1/128', true],
    ['::1', '127.0.0.1/32', false],
    ['fd00:1234::5', 'fd00::/8', true],
    ['fe80::1%eth0', 'fe80::/10', true],
    ['2001:db8::1', 'fd00::/8', false],
    ['10.0.0.1', '::ffff:0:0/96', true],
    ['203.0.113.9', '0.0.0.0/0', true],
    ['2001:db8::1', '0.0.0.0/0', false],
    ['2001:db8::1', '::/0', true],
    ['1:2:3:4:5:6:7:8', '1:2:3:4::/64', true],
    ['1:2:3:5::', '1:2:3:4::/64', false],
  ])('%s in %s: %s', (address, cidr, inside) => {
    expect(isInAnyCidr(address, ranges(cidr))).toBe(inside)
  })

  it('is inside when any range contains the peer', () => {
    expect(isInAnyCidr('::ffff:172.16.0.4', ranges('10.0.0.0/8', '172.16.0.0/12'))).toBe(true)
  })

  it.each([undefined, '', 'localhost', '10.0.0', '::ffff:999.0.0.1'])('never trusts %s, which is not an address', (address) => {
    expect(isInAnyCidr(address, ranges('0.0.0.0/0', '::/0'))).toBe(false)
  })

  it.each(['10.0.0.0/33', '::/129', '10.0.0.1/8', '300.0.0.0/8', '010.0.0.0/8', 'a.b.c.d', '1:2:3:4:5:6:7:8:9', '1::2::3', '10.0.0.0/8/1', '10.0.0.0/', 'fd00::/08'])(
    'refuses the range %s', (text) => {
      expect(parseCidr(text)).toBeNull()
    })

  it('reads the dotted IPv4 tail of an IPv6 address as its last two groups', () => {
    expect(parseAddress('::ffff:10.0.0.1')).toBe(parseAddress('::ffff:a00:1'))
    expect(parseAddress('10.0.0.1')).toBe(parseAddress('::ffff:10.0.0.1'))
  })
})

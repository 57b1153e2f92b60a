import { createHash } from 'node:crypto'
import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { sha256Hex } from '../../shared/core/sha256.js'

const nodeSha256 = (text: string) => createHash('sha256').update(text).digest('hex')

describe('sha256Hex', () => {
  it.each([
    ['', 'e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855'],
    ['abc', 'ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad'],
  ])('hashes %j to the FIPS 180-4 test vector', (text, hex) => {
    expect(sha256Hex(text)).toBe(hex)
  })

  it.each([[55], [56], [63], [64], [65], [119], [120], [1000]])(
    'agrees with node:crypto across the padding boundary at %i bytes', (length) => {
      const text = 'x'.repeat(length)
      expect(sha256Hex(text)).toBe(nodeSha256(text))
    })

  it('agrees with node:crypto for arbitrary Unicode text', () => {
    fc.assert(fc.property(fc.string({ unit: 'grapheme', maxLength: 200 }), (text) => {
      expect(sha256Hex(text)).toBe(nodeSha256(text))
    }))
  })
})

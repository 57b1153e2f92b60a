// The base image's layer, read back without a registry: what a container of it finds on disk.
import { createHash } from 'node:crypto'
import { describe, expect, it } from 'vitest'
import { CA_BUNDLE, NODE_PATH, baseImageConfig, collectBaseFiles, parseLdd } from '../../scripts/build-base-image.mjs'
import { createTar } from '../../scripts/image-layer.mjs'

const LDD = `	linux-vdso.so.1 (0x00007ffd)
	libdl.so.2 => /lib/x86_64-linux-gnu/libdl.so.2 (0x00007f59)
	libstdc++.so.6 => /lib/x86_64-linux-gnu/libstdc++.so.6 (0x00007f59)
	/lib64/ld-linux-x86-64.so.2 (0x00007f59)
`

describe('the base image', () => {
  it('takes every library ldd lists and the loader, and refuses a library the machine lacks', () => {
    expect(parseLdd(LDD)).toEqual(['/lib/x86_64-linux-gnu/libdl.so.2', '/lib/x86_64-linux-gnu/libstdc++.so.6', '/lib64/ld-linux-x86-64.so.2'])
    expect(() => parseLdd(`${LDD}\tlibicu.so.72 => not found\n`)).toThrow('the Node binary needs a library the machine lacks: libicu.so.72 => not found')
  })

  it('holds node (executable), its libraries, passwd/group with nonroot, a sticky /tmp, the CA bundle and nothing else', () => {
    const { entries, nodeVersion, packages } = collectBaseFiles()
    const byPath = new Map(entries.map((e) => [e.path, e]))
    expect(byPath.get(NODE_PATH.slice(1))).toMatchObject({ type: 'file', mode: 0o755 })
    expect(byPath.get('tmp/')).toMatchObject({ type: 'dir', mode: 0o1777 })
    expect(byPath.get('home/nonroot/')).toMatchObject({ uid: 65532, gid: 65532 })
    expect(String(byPath.get('etc/passwd')?.data)).toMatch(/^nonroot:x:65532:65532:.*:\/home\/nonroot:/m)
    expect(String(byPath.get('etc/group')?.data)).toMatch(/^nonroot:x:65532:$/m)
    expect(String(byPath.get(CA_BUNDLE.slice(1))?.data)).toContain('BEGIN CERTIFICATE')
    const files = entries.filter((e) => e.type === 'file').map((e) => e.path)
    const libraries = files.filter((p) => p.startsWith('lib') || p.startsWith('usr/lib'))
    expect(libraries.length).toBeGreaterThan(0)
    expect(files.filter((p) => !libraries.includes(p)).sort()).toEqual(['etc/group', 'etc/passwd', CA_BUNDLE.slice(1), NODE_PATH.slice(1)].sort())
    expect(nodeVersion).toBe(process.version)
    // Every file is traced to a package (or says it is not): the image says what it is built from.
    expect(packages.length).toBeGreaterThan(0)
    expect(packages.every((p) => /^[a-z0-9][a-z0-9+.-]*=\S+$/.test(p) || p.startsWith('unpackaged:'))).toBe(true)
  })

  it('is the same archive when collected twice, and its config carries no build time', () => {
    const digest = () => createHash('sha256').update(createTar(collectBaseFiles().entries)).digest('hex')
    expect(digest()).toBe(digest())
    const config = baseImageConfig({ diffId: 'sha256:x', nodeVersion: 'v20.0.0', packages: ['libc6=2.36'], architecture: 'amd64' })
    expect(config.created).toBe('1970-01-01T00:00:00Z')
    expect(config.config).toMatchObject({ User: '65532:65532', Labels: { 'dev.kinetic.base.node': 'v20.0.0', 'dev.kinetic.base.packages': 'libc6=2.36' } })
  })
})

// Knative's release configuration as data: ko:// references become our images, CPU requests fit
// a 2-core node, config maps get our settings, CRDs go first.
import { describe, expect, it } from 'vitest'
import { capCpuRequests, deploymentsOf, parseYamlDocs, setConfigMapData, splitFoundation, substituteImages } from '../../cluster/knative/release-config.js'

const RELEASE = `
# a comment-only document is skipped
---
apiVersion: v1
kind: Namespace
metadata: { name: knative-serving }
---
apiVersion: apps/v1
kind: Deployment
metadata: { name: controller, namespace: knative-serving }
spec:
  template:
    spec:
      containers:
        - name: controller
          image: ko://knative.dev/serving/cmd/controller
          env:
            - { name: APISERVER_RA_IMAGE, value: ko://knative.dev/eventing/cmd/apiserver_receive_adapter }
            - { name: AUTH_PROXY_IMAGE, value: ko://knative.dev/eventing/cmd/auth_proxy }
          resources:
            requests: { cpu: 300m, memory: 60Mi }
            limits: { cpu: 1000m, memory: 600Mi }
---
apiVersion: apps/v1
kind: Deployment
metadata: { name: pingsource-mt-adapter, namespace: knative-eventing }
spec:
  replicas: 0
---
apiVersion: v1
kind: ConfigMap
metadata: { name: config-network, namespace: knative-serving }
data:
  _example: "docs"
---
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: { name: services.serving.knative.dev }
`

const docs = parseYamlDocs(RELEASE, 'release.yaml')

describe('the release configuration', () => {
  it('replaces every ko:// reference it has an image for, in images and env values, and names the rest', () => {
    const { docs: out, unresolved } = substituteImages(docs, {
      'knative.dev/serving/cmd/controller': '127.0.0.1:5000/kinetic/knative-serving-controller@sha256:aa',
      'knative.dev/eventing/cmd/apiserver_receive_adapter': '127.0.0.1:5000/kinetic/knative-apiserver-receive-adapter@sha256:bb',
    })
    const container = (out[1]?.doc as any).spec.template.spec.containers[0]
    expect(container.image).toBe('127.0.0.1:5000/kinetic/knative-serving-controller@sha256:aa')
    expect(container.env[0].value).toBe('127.0.0.1:5000/kinetic/knative-apiserver-receive-adapter@sha256:bb')
    expect(unresolved).toEqual(['ko://knative.dev/eventing/cmd/auth_proxy'])
    expect((docs[1]?.doc as any).spec.template.spec.containers[0].image).toBe('ko://knative.dev/serving/cmd/controller')
  })

  it('lowers CPU requests only, keeping memory and limits', () => {
    const [, deployment] = capCpuRequests(docs, '10m')
    expect((deployment?.doc as any).spec.template.spec.containers[0].resources).toEqual({
      requests: { cpu: '10m', memory: '60Mi' },
      limits: { cpu: '1000m', memory: '600Mi' },
    })
  })

  it('adds keys to a release config map and refuses one the release lacks', () => {
    const out = setConfigMapData(docs, 'knative-serving', 'config-network', { 'ingress-class': 'traefik.ingress.networking.knative.dev' })
    expect((out.find((d) => d.doc.kind === 'ConfigMap')?.doc as any).data).toEqual({ _example: 'docs', 'ingress-class': 'traefik.ingress.networking.knative.dev' })
    expect(() => setConfigMapData(docs, 'knative-serving', 'config-domain', { x: '' })).toThrow('ConfigMap knative-serving/config-domain is not in the release configuration')
  })

  it('puts namespaces and CRDs first and lists Deployments with their replicas', () => {
    const { foundation, rest } = splitFoundation(docs)
    expect(foundation.map((d) => d.doc.kind)).toEqual(['Namespace', 'CustomResourceDefinition'])
    expect(rest).toHaveLength(3)
    expect(deploymentsOf(docs)).toEqual([
      { namespace: 'knative-serving', name: 'controller', replicas: 1 },
      { namespace: 'knative-eventing', name: 'pingsource-mt-adapter', replicas: 0 },
    ])
  })

  it('names the file of a document without a name', () => {
    expect(() => parseYamlDocs('apiVersion: v1\nkind: ConfigMap\nmetadata: {}\n', 'x/y.yaml')).toThrow('x/y.yaml: a document without apiVersion, kind or metadata.name')
  })
})

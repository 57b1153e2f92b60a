// Cluster DNS: CoreDNS (built from the Go module registry) as a Deployment in kube-system behind
// the kube-dns Service at the kubelet's clusterDNS address, answering *.svc.cluster.local. It
// listens on 1053 as a non-root user with no capabilities; the Service maps port 53 to it.
import type { KubeObject } from '../../local/knative/kube-http.js'
import { CLUSTER_DNS_IP, CLUSTER_DOMAIN } from './kubelet.js'

const NS = 'kube-system'
const labels = { 'k8s-app': 'kube-dns' }

const COREFILE = `.:1053 {
    errors
    health :8080
    ready :8181
    kubernetes ${CLUSTER_DOMAIN} in-addr.arpa ip6.arpa {
        pods insecure
        fallthrough in-addr.arpa ip6.arpa
    }
    forward . /etc/resolv.conf
    cache 30
    reload
}
`

/** The objects of cluster DNS, with CoreDNS's image by digest. */
export function clusterDnsObjects(image: string): KubeObject[] {
  return [
    { apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name: 'coredns', namespace: NS } },
    {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'ClusterRole',
      metadata: { name: 'kinetic:coredns' },
      rules: [
        { apiGroups: [''], resources: ['services', 'pods', 'namespaces'], verbs: ['list', 'watch'] },
        { apiGroups: ['discovery.k8s.io'], resources: ['endpointslices'], verbs: ['list', 'watch'] },
      ],
    },
    {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'ClusterRoleBinding',
      metadata: { name: 'kinetic:coredns' },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'kinetic:coredns' },
      subjects: [{ kind: 'ServiceAccount', name: 'coredns', namespace: NS }],
    },
    { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'coredns', namespace: NS }, data: { Corefile: COREFILE } },
    {
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      metadata: { name: 'coredns', namespace: NS, labels },
      spec: {
        replicas: 1,
        selector: { matchLabels: labels },
        template: {
          metadata: { labels },
          spec: {
            serviceAccountName: 'coredns',
            // CoreDNS forwards what is not the cluster's to the host's resolver.
            dnsPolicy: 'Default',
            priorityClassName: 'system-cluster-critical',
            securityContext: { runAsNonRoot: true, runAsUser: 65532, runAsGroup: 65532, seccompProfile: { type: 'RuntimeDefault' } },
            containers: [{
              name: 'coredns',
              image,
              args: ['-conf', '/etc/coredns/Corefile'],
              ports: [{ name: 'dns', containerPort: 1053, protocol: 'UDP' }, { name: 'dns-tcp', containerPort: 1053, protocol: 'TCP' }],
              securityContext: { allowPrivilegeEscalation: false, readOnlyRootFilesystem: true, capabilities: { drop: ['ALL'] } },
              readinessProbe: { httpGet: { path: '/ready', port: 8181 }, periodSeconds: 2 },
              livenessProbe: { httpGet: { path: '/health', port: 8080 }, initialDelaySeconds: 10 },
              resources: { requests: { cpu: '50m', memory: '32Mi' }, limits: { memory: '128Mi' } },
              volumeMounts: [{ name: 'config', mountPath: '/etc/coredns', readOnly: true }],
            }],
            volumes: [{ name: 'config', configMap: { name: 'coredns' } }],
          },
        },
      },
    },
    {
      apiVersion: 'v1',
      kind: 'Service',
      metadata: { name: 'kube-dns', namespace: NS, labels: { ...labels, 'kubernetes.io/name': 'CoreDNS' } },
      spec: {
        clusterIP: CLUSTER_DNS_IP,
        selector: labels,
        ports: [
          { name: 'dns', port: 53, targetPort: 1053, protocol: 'UDP' },
          { name: 'dns-tcp', port: 53, targetPort: 1053, protocol: 'TCP' },
        ],
      },
    },
  ]
}

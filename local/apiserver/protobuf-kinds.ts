/**
 * The protobuf messages the embedded server reads, field number by field number: what
 * kubectl's `create` generators send (configmap, secret generic, namespace, serviceaccount,
 * role, clusterrole, rolebinding, clusterrolebinding) and the self reviews of `kubectl auth
 * can-i` (also `--list`) and `kubectl auth whoami`. Field numbers come from the published generated.proto of
 * k8s.io/api and k8s.io/apimachinery.
 */

export type Field =
  | { name: string; type: 'string' | 'bytes' | 'bool' | 'int' | 'time' | 'strings' | 'stringMap' | 'bytesMap' }
  | { name: string; type: 'message' | 'messages'; schema: Schema }

export type Schema = Record<number, Field>

const ownerReference: Schema = {
  1: { name: 'kind', type: 'string' },
  3: { name: 'name', type: 'string' },
  4: { name: 'uid', type: 'string' },
  5: { name: 'apiVersion', type: 'string' },
  6: { name: 'controller', type: 'bool' },
  7: { name: 'blockOwnerDeletion', type: 'bool' },
}

const objectMeta: Schema = {
  1: { name: 'name', type: 'string' },
  2: { name: 'generateName', type: 'string' },
  3: { name: 'namespace', type: 'string' },
  5: { name: 'uid', type: 'string' },
  6: { name: 'resourceVersion', type: 'string' },
  7: { name: 'generation', type: 'int' },
  8: { name: 'creationTimestamp', type: 'time' },
  11: { name: 'labels', type: 'stringMap' },
  12: { name: 'annotations', type: 'stringMap' },
  13: { name: 'ownerReferences', type: 'messages', schema: ownerReference },
  14: { name: 'finalizers', type: 'strings' },
}

const localObjectReference: Schema = { 1: { name: 'name', type: 'string' } }

// authorization.k8s.io/v1
const selectorRequirement: Schema = {
  1: { name: 'key', type: 'string' },
  2: { name: 'operator', type: 'string' },
  3: { name: 'values', type: 'strings' },
}
const selectorAttributes: Schema = {
  1: { name: 'rawSelector', type: 'string' },
  2: { name: 'requirements', type: 'messages', schema: selectorRequirement },
}
const resourceAttributes: Schema = {
  1: { name: 'namespace', type: 'string' },
  2: { name: 'verb', type: 'string' },
  3: { name: 'group', type: 'string' },
  4: { name: 'version', type: 'string' },
  5: { name: 'resource', type: 'string' },
  6: { name: 'subresource', type: 'string' },
  7: { name: 'name', type: 'string' },
  8: { name: 'fieldSelector', type: 'message', schema: selectorAttributes },
  9: { name: 'labelSelector', type: 'message', schema: selectorAttributes },
}
const nonResourceAttributes: Schema = { 1: { name: 'path', type: 'string' }, 2: { name: 'verb', type: 'string' } }

// rbac.authorization.k8s.io/v1 (`kubectl create role|clusterrole|rolebinding|clusterrolebinding`)
const policyRule: Schema = {
  1: { name: 'verbs', type: 'strings' },
  2: { name: 'apiGroups', type: 'strings' },
  3: { name: 'resources', type: 'strings' },
  4: { name: 'resourceNames', type: 'strings' },
  5: { name: 'nonResourceURLs', type: 'strings' },
}
const labelSelector: Schema = {
  1: { name: 'matchLabels', type: 'stringMap' },
  2: { name: 'matchExpressions', type: 'messages', schema: selectorRequirement },
}
const binding: Schema = {
  1: { name: 'metadata', type: 'message', schema: objectMeta },
  2: {
    name: 'subjects', type: 'messages', schema: {
      1: { name: 'kind', type: 'string' },
      2: { name: 'apiGroup', type: 'string' },
      3: { name: 'name', type: 'string' },
      4: { name: 'namespace', type: 'string' },
    },
  },
  3: {
    name: 'roleRef', type: 'message', schema: {
      1: { name: 'apiGroup', type: 'string' },
      2: { name: 'kind', type: 'string' },
      3: { name: 'name', type: 'string' },
    },
  },
}

/** The kinds this server reads as protobuf, by `apiVersion/kind`. */
export const KINDS: Record<string, Schema> = {
  'rbac.authorization.k8s.io/v1/Role': {
    1: { name: 'metadata', type: 'message', schema: objectMeta },
    2: { name: 'rules', type: 'messages', schema: policyRule },
  },
  'rbac.authorization.k8s.io/v1/ClusterRole': {
    1: { name: 'metadata', type: 'message', schema: objectMeta },
    2: { name: 'rules', type: 'messages', schema: policyRule },
    3: { name: 'aggregationRule', type: 'message', schema: { 1: { name: 'clusterRoleSelectors', type: 'messages', schema: labelSelector } } },
  },
  'rbac.authorization.k8s.io/v1/RoleBinding': binding,
  'rbac.authorization.k8s.io/v1/ClusterRoleBinding': binding,
  'authorization.k8s.io/v1/SelfSubjectAccessReview': {
    1: { name: 'metadata', type: 'message', schema: objectMeta },
    2: {
      name: 'spec', type: 'message', schema: {
        1: { name: 'resourceAttributes', type: 'message', schema: resourceAttributes },
        2: { name: 'nonResourceAttributes', type: 'message', schema: nonResourceAttributes },
      },
    },
  },
  'authorization.k8s.io/v1/SelfSubjectRulesReview': {
    1: { name: 'metadata', type: 'message', schema: objectMeta },
    2: { name: 'spec', type: 'message', schema: { 1: { name: 'namespace', type: 'string' } } },
  },
  'authentication.k8s.io/v1/SelfSubjectReview': {
    1: { name: 'metadata', type: 'message', schema: objectMeta },
  },
  'v1/ConfigMap': {
    1: { name: 'metadata', type: 'message', schema: objectMeta },
    2: { name: 'data', type: 'stringMap' },
    3: { name: 'binaryData', type: 'bytesMap' },
    4: { name: 'immutable', type: 'bool' },
  },
  'v1/Secret': {
    1: { name: 'metadata', type: 'message', schema: objectMeta },
    2: { name: 'data', type: 'bytesMap' },
    3: { name: 'type', type: 'string' },
    4: { name: 'stringData', type: 'stringMap' },
    5: { name: 'immutable', type: 'bool' },
  },
  'v1/Namespace': {
    1: { name: 'metadata', type: 'message', schema: objectMeta },
    2: { name: 'spec', type: 'message', schema: { 1: { name: 'finalizers', type: 'strings' } } },
  },
  'v1/ServiceAccount': {
    1: { name: 'metadata', type: 'message', schema: objectMeta },
    3: { name: 'imagePullSecrets', type: 'messages', schema: localObjectReference },
    4: { name: 'automountServiceAccountToken', type: 'bool' },
  },
}

// Strategic-merge-patch metadata of the built-in kinds Strait serves, transcribed from the
// patchStrategy / patchMergeKey struct tags of k8s.io/api (core/v1, apps/v1, batch/v1) and
// k8s.io/apimachinery (meta/v1 ObjectMeta). Fields without tags are simply absent: their
// lists are replaced wholesale and their objects merge member by member. Notable untagged
// lists: PodSpec.tolerations, PodSpec.readinessGates, Container.envFrom,
// PodStatus.containerStatuses, NodeSpec.taints, Endpoints.subsets, EndpointSlice.endpoints,
// StatefulSetSpec.volumeClaimTemplates.

#include <map>
#include <memory>
#include <string>
#include <utility>

#include "kube/patch.h"

namespace strait::kube {

const PatchSchema* PatchSchema::field(const std::string& name) const {
  auto it = fields.find(name);
  return it == fields.end() ? nullptr : it->second.get();
}

namespace {

using Node = std::shared_ptr<const PatchSchema>;
using Fields = std::map<std::string, Node>;

Node object(Fields fields) {
  auto n = std::make_shared<PatchSchema>();
  n->fields = std::move(fields);
  return n;
}

// patchStrategy "merge" + patchMergeKey on a list of objects; `elementFields` describe the
// members of each element.
Node mergeByKey(std::string key, Fields elementFields = {}) {
  auto n = std::make_shared<PatchSchema>();
  n->mergeList = true;
  n->mergeKey = std::move(key);
  n->fields = std::move(elementFields);
  return n;
}

// patchStrategy "merge,retainKeys" + patchMergeKey.
Node mergeByKeyRetainKeys(std::string key) {
  auto n = std::make_shared<PatchSchema>();
  n->mergeList = true;
  n->retainKeys = true;
  n->mergeKey = std::move(key);
  return n;
}

// patchStrategy "merge" on a list of primitives: merged as a set.
Node primitiveSet() {
  auto n = std::make_shared<PatchSchema>();
  n->mergeList = true;
  return n;
}

// patchStrategy "retainKeys" on an object.
Node retainKeysObject() {
  auto n = std::make_shared<PatchSchema>();
  n->retainKeys = true;
  return n;
}

struct KindKey {
  std::string group;
  std::string kind;
  bool operator<(const KindKey& o) const {
    return group != o.group ? group < o.group : kind < o.kind;
  }
};

std::map<KindKey, Node> buildSchemas() {
  // meta/v1 ObjectMeta.
  const Node objectMeta = object({
      {"ownerReferences", mergeByKey("uid")},
      {"finalizers", primitiveSet()},
  });

  // core/v1 Container and EphemeralContainerCommon carry the same tags.
  const Fields container = {
      {"ports", mergeByKey("containerPort")},
      {"env", mergeByKey("name")},
      {"volumeMounts", mergeByKey("mountPath")},
      {"volumeDevices", mergeByKey("devicePath")},
  };

  const Node podSpec = object({
      {"volumes", mergeByKeyRetainKeys("name")},
      {"initContainers", mergeByKey("name", container)},
      {"containers", mergeByKey("name", container)},
      {"ephemeralContainers", mergeByKey("name", container)},
      {"imagePullSecrets", mergeByKey("name")},
      {"hostAliases", mergeByKey("ip")},
      // listMapKeys are topologyKey+whenUnsatisfiable, but the SMP merge key is topologyKey.
      {"topologySpreadConstraints", mergeByKey("topologyKey")},
      {"schedulingGates", mergeByKey("name")},
      {"resourceClaims", mergeByKeyRetainKeys("name")},
      {"evictionResponders", mergeByKey("name")},
  });

  const Node podStatus = object({
      {"conditions", mergeByKey("type")},
      {"hostIPs", mergeByKey("ip")},
      {"podIPs", mergeByKey("ip")},
      {"resourceClaimStatuses", mergeByKeyRetainKeys("name")},
      {"nodeAllocatableResourceClaimStatuses", mergeByKey("resourceClaimName")},
  });

  const Node podTemplateSpec = object({{"metadata", objectMeta}, {"spec", podSpec}});
  const Node conditionsByType = object({{"conditions", mergeByKey("type")}});
  const Node metadataOnly = object({{"metadata", objectMeta}});

  // Workloads whose spec holds a pod template and whose status holds typed conditions.
  const Node workload = object({
      {"metadata", objectMeta},
      {"spec", object({{"template", podTemplateSpec}})},
      {"status", conditionsByType},
  });

  std::map<KindKey, Node> schemas;
  schemas[{"", "Pod"}] =
      object({{"metadata", objectMeta}, {"spec", podSpec}, {"status", podStatus}});
  schemas[{"", "PodTemplate"}] = object({{"metadata", objectMeta}, {"template", podTemplateSpec}});
  schemas[{"", "ReplicationController"}] = workload;
  schemas[{"apps", "Deployment"}] = object({
      {"metadata", objectMeta},
      {"spec", object({{"template", podTemplateSpec}, {"strategy", retainKeysObject()}})},
      {"status", conditionsByType},
  });
  schemas[{"apps", "ReplicaSet"}] = workload;
  schemas[{"apps", "StatefulSet"}] = workload;
  schemas[{"apps", "DaemonSet"}] = workload;
  schemas[{"batch", "Job"}] = workload;
  schemas[{"batch", "CronJob"}] = object({
      {"metadata", objectMeta},
      {"spec",
       object({{"jobTemplate", object({{"metadata", objectMeta},
                                       {"spec", object({{"template", podTemplateSpec}})}})}})},
  });
  schemas[{"", "Service"}] = object({
      {"metadata", objectMeta},
      {"spec", object({{"ports", mergeByKey("port")}})},
      {"status", conditionsByType},
  });
  schemas[{"", "Node"}] = object({
      {"metadata", objectMeta},
      {"spec", object({{"podCIDRs", primitiveSet()}})},
      {"status", object({{"conditions", mergeByKey("type")}, {"addresses", mergeByKey("type")}})},
  });
  schemas[{"", "Namespace"}] = object({{"metadata", objectMeta}, {"status", conditionsByType}});
  schemas[{"", "PersistentVolumeClaim"}] =
      object({{"metadata", objectMeta}, {"status", conditionsByType}});
  schemas[{"", "ServiceAccount"}] =
      object({{"metadata", objectMeta}, {"secrets", mergeByKey("name")}});
  for (const char* kind : {"ConfigMap", "Secret", "Endpoints", "Event"}) {
    schemas[{"", kind}] = metadataOnly;
  }
  schemas[{"discovery.k8s.io", "EndpointSlice"}] = metadataOnly;
  schemas[{"events.k8s.io", "Event"}] = metadataOnly;
  schemas[{"coordination.k8s.io", "Lease"}] = metadataOnly;
  // admissionregistration.k8s.io/v1: webhooks merge by name (+patchMergeKey=name,
  // +patchStrategy=merge), so a client's patch of one field keeps what the server or an
  // agent set in the others (a caBundle).
  for (const char* kind : {"MutatingWebhookConfiguration", "ValidatingWebhookConfiguration"}) {
    schemas[{"admissionregistration.k8s.io", kind}] =
        object({{"metadata", objectMeta}, {"webhooks", mergeByKey("name")}});
  }
  // rbac.authorization.k8s.io/v1: rules, subjects and roleRef carry no patch strategy
  // (lists are replaced whole), so only the metadata merges.
  for (const char* kind : {"Role", "ClusterRole", "RoleBinding", "ClusterRoleBinding"}) {
    schemas[{"rbac.authorization.k8s.io", kind}] = metadataOnly;
  }
  return schemas;
}

}  // namespace

const PatchSchema* schemaForKind(const std::string& group, const std::string& kind) {
  static const std::map<KindKey, Node> schemas = buildSchemas();
  auto it = schemas.find(KindKey{group, kind});
  return it == schemas.end() ? nullptr : it->second.get();
}

}  // namespace strait::kube

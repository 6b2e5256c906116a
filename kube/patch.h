#pragma once
// The three PATCH formats the Kubernetes API accepts, applied to JSON documents:
//   application/merge-patch+json           -> applyMergePatch          (RFC 7386)
//   application/json-patch+json            -> applyJsonPatch           (RFC 6902)
//   application/strategic-merge-patch+json -> applyStrategicMergePatch (Kubernetes SMP)
//
// All functions are pure: they never modify their arguments, never throw, never block, and
// may be called concurrently from any thread. Malformed input yields an Error whose code is
// the one kube-apiserver answers with (see each function) and whose message says what was
// wrong and where. Documents nested deeper than kMaxPatchNestingDepth are rejected with
// BadRequest rather than risk exhausting the stack.

#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "kube/status.h"

namespace strait::kube {

// Deepest object/array nesting accepted in any document handed to the functions below.
inline constexpr int kMaxPatchNestingDepth = 1000;

// Most operations one JSON patch may hold (kube-apiserver's limit); more is
// RequestEntityTooLarge.
inline constexpr size_t kMaxJsonPatchOperations = 10000;

// RFC 7386 JSON merge patch: objects merge recursively, null deletes a member, any other
// patch value (arrays included) replaces the target. Errors only for over-deep documents.
Result<nlohmann::json> applyMergePatch(const nlohmann::json& target, const nlohmann::json& patch);

// RFC 6902 JSON patch: `ops` is an array of {op, path, from?, value?} with op one of add,
// remove, replace, move, copy, test; paths are RFC 6901 JSON pointers ("~0" = "~",
// "~1" = "/", "-" = past the end of an array). Either every operation applies or none does:
// the first failing operation makes the whole call fail.
// Errors: BadRequest when `ops` is not an array of objects (apiserver fails to decode it);
// Invalid (422) when an operation is malformed, its path is missing or out of range, or a
// test fails; RequestEntityTooLarge for more than kMaxJsonPatchOperations operations.
Result<nlohmann::json> applyJsonPatch(const nlohmann::json& target, const nlohmann::json& ops);

// Strategic-merge-patch metadata of one field, i.e. the Go struct tags patchStrategy and
// patchMergeKey of k8s.io/api types, arranged as a tree that mirrors the JSON document.
// Immutable once built; schemaForKind hands out process-lifetime instances.
struct PatchSchema {
  // patchStrategy "merge" on a list: lists of objects merge element-wise by mergeKey,
  // lists of primitives merge as sets. Without it a patch list replaces the whole list.
  bool mergeList = false;
  // patchStrategy "replace" on an object: the patch object replaces the field wholesale.
  bool replaceObject = false;
  // patchStrategy "retainKeys". Informational when applying: the $retainKeys directive in a
  // patch is honoured wherever it appears, as upstream does.
  bool retainKeys = false;
  // patchMergeKey, for lists of objects with mergeList.
  std::string mergeKey;
  // Metadata of the members of this object, or of each element's members for a list of
  // objects. Members not listed have no strategy (objects merge, lists are replaced).
  std::map<std::string, std::shared_ptr<const PatchSchema>> fields;

  // The child named `name`, or nullptr.
  const PatchSchema* field(const std::string& name) const;
};

// The schema of a built-in kind (group "" is core), or nullptr when the kind is unknown,
// e.g. a custom resource. kube-apiserver refuses strategic merge patches for such kinds
// with 415 UnsupportedMediaType ("strategic merge patch format is not supported"); the
// caller decides whether to do the same. Covers Pod, PodTemplate, ReplicationController,
// Deployment, ReplicaSet, StatefulSet, DaemonSet, Job, CronJob, Service, Node, Namespace,
// ConfigMap, Secret, ServiceAccount, Endpoints, EndpointSlice, Event (core and
// events.k8s.io), Lease and PersistentVolumeClaim. The pointer lives for the whole process.
const PatchSchema* schemaForKind(const std::string& group, const std::string& kind);

// Kubernetes strategic merge patch of `original` by `patch` (both JSON objects), following
// k8s.io/apimachinery/pkg/util/strategicpatch as kube-apiserver applies it: lists marked
// mergeList merge by key (or as sets), null deletes, and the directives $patch
// (replace|delete on objects; replace|delete elements in merging lists),
// $deleteFromPrimitiveList/<list>, $setElementOrder/<list> and $retainKeys are honoured and
// never appear in the result.
// Errors: BadRequest when either document is not an object, a directive is malformed
// ($patch: merge included, which upstream rejects too), a merging-list element lacks its
// merge key or element types are mixed; Invalid (422) for lists of lists.
Result<nlohmann::json> applyStrategicMergePatch(const nlohmann::json& original,
                                                const nlohmann::json& patch,
                                                const PatchSchema& schema);

}  // namespace strait::kube

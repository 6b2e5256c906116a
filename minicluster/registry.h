#pragma once
// What the minicluster API server serves: the built-in resources, resources added by
// CustomResourceDefinitions, and the documents derived from them — discovery (legacy and
// aggregated), the OpenAPI v3 documents kubectl apply needs, Table conversion for
// `kubectl get`, and the selectable fields of each kind.
//
// Thread-safe: lookups may run concurrently with addCustom/removeCustom.

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "kube/status.h"

namespace strait::minicluster {

using json = nlohmann::json;

struct ResourceInfo {
  std::string group;     // "" for core
  std::string version;   // "v1"
  std::string resource;  // plural, "pods"
  std::string kind;      // "Pod"
  std::string listKind;  // "PodList"
  std::string singular;  // "pod"
  bool namespaced = true;
  std::vector<std::string> shortNames;   // {"po"}
  std::vector<std::string> categories;   // {"all"}
  std::vector<std::string> verbs;        // create delete deletecollection get list patch update watch
  std::vector<std::string> subresources; // "status", "binding", "log", "exec", "eviction", "scale"
  bool custom = false;                   // from a CRD
  // CRD printer columns (additionalPrinterColumns of the served version), if any.
  json printerColumns = json::array();

  std::string apiVersion() const { return group.empty() ? version : group + "/" + version; }
  // "pods" for core, "deployments.apps" otherwise (the CRD naming convention).
  std::string groupResource() const { return group.empty() ? resource : resource + "." + group; }
};
using ResourceInfoPtr = std::shared_ptr<const ResourceInfo>;

class Registry {
 public:
  // Built-in resources of the foundation issue are registered on construction.
  Registry();
  ~Registry();

  // Resolves group/version/resource; null if unknown.
  ResourceInfoPtr find(const std::string& group, const std::string& version,
                       const std::string& resource) const;
  // Resolves by group+kind (any served version); null if unknown.
  ResourceInfoPtr findKind(const std::string& group, const std::string& kind) const;
  std::vector<ResourceInfoPtr> all() const;

  // Adds/replaces the resources served by a CRD object (apiextensions.k8s.io/v1 JSON).
  // Fails with Invalid naming the field if the CRD is malformed.
  kube::Status addCustom(const json& crd);
  // Removes the resources of the CRD named `crdName` ("widgets.example.com").
  void removeCustom(const std::string& crdName);

  // Discovery documents (JSON bodies).
  json apiVersions() const;                 // GET /api  (APIVersions)
  json apiGroupList() const;                // GET /apis (APIGroupList)
  // GET /api/v1 or /apis/G/V (APIResourceList); nullopt if the group/version is unknown.
  std::optional<json> apiResourceList(const std::string& group, const std::string& version) const;
  // Aggregated discovery (apidiscovery.k8s.io APIGroupDiscoveryList) for /api (legacy=true)
  // or /apis (legacy=false). `apiVersion` is "apidiscovery.k8s.io/v2" or ".../v2beta1".
  json aggregatedDiscovery(bool legacy, const std::string& apiVersion) const;

  // OpenAPI v3: the index at /openapi/v3 and the document for "api/v1" or "apis/G/V";
  // nullopt if unknown. Enough for kubectl apply's default validation (each kind has a
  // schema with x-kubernetes-group-version-kind, each resource path a patch operation with
  // a fieldValidation parameter).
  json openApiIndex() const;
  std::optional<json> openApiDocument(const std::string& groupVersionPath) const;
  // /openapi/v2: every group-version's paths and schemas in one Swagger 2.0 document.
  json openApiV2Document() const;

  // Table conversion (meta.k8s.io/v1 Table) with the upstream columns; `objects` are full
  // objects; each row carries cells and a PartialObjectMetadata `object` (or the full
  // object when includeObject == "Object"). `listMeta` goes to the table's metadata.
  json toTable(const ResourceInfo& info, const std::vector<json>& objects,
               const json& listMeta, const std::string& includeObject = "Metadata") const;

  // Selectable field values of an object of this resource: always metadata.name and
  // metadata.namespace; per kind the upstream field-selector fields (pods: spec.nodeName,
  // spec.restartPolicy, spec.schedulerName, spec.serviceAccountName, spec.hostNetwork,
  // status.phase, status.podIP, status.nominatedNodeName; events: involvedObject.*, reason,
  // type, source; secrets: type; nodes: spec.unschedulable; namespaces: status.phase; ...).
  std::map<std::string, std::string> fieldsOf(const ResourceInfo& info, const json& obj) const;
  // Whether `field` is selectable for this resource (unknown field = 400 in a selector).
  bool isSelectableField(const ResourceInfo& info, const std::string& field) const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace strait::minicluster

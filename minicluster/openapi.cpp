// OpenAPI v3 documents for /openapi/v3/api/v1 and /openapi/v3/apis/G/V.
//
// What clients read from them (kubectl 1.32):
//  - apply's query-param verifier walks `paths`, takes the first `patch` operation whose
//    `x-kubernetes-group-version-kind` (a single object on operations) matches the kind, and
//    looks for a parameter named `fieldValidation`; with it kubectl sends
//    fieldValidation=Strict and leaves validation to the server.
//  - apply's patcher computes a strategic merge patch from the schema if the patch
//    operation's requestBody offers application/strategic-merge-patch+json. Our schemas are
//    deliberately shallow (spec/status preserve unknown fields), so doing that would fail on
//    the first nested field and print "warning: error calculating patch from openapi v3
//    spec". We therefore do not advertise strategic-merge-patch in the document; kubectl
//    then uses its compiled-in types for built-in kinds and JSON merge patch for CRDs, which
//    is what it does against upstream for CRDs as well.
//  - explain finds the schema in `components.schemas` by `x-kubernetes-group-version-kind`
//    (a list on schemas) and follows `$ref`/`allOf`.
//
// Pure functions of their inputs; called by Registry (registry.cpp) with a snapshot.

#include <openssl/evp.h>

#include <algorithm>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "minicluster/registry_internal.h"

namespace strait::minicluster::detail {


namespace {

const char* kMetaPrefix = "io.k8s.apimachinery.pkg.apis.meta.v1.";

std::string ref(const std::string& schemaName) { return "#/components/schemas/" + schemaName; }

json refTo(const std::string& schemaName) { return json{{"$ref", ref(schemaName)}}; }

// allOf-wrapped reference, the form upstream uses for a property with a default.
json propertyRef(const std::string& schemaName, const std::string& description) {
  return json{{"allOf", json::array({refTo(schemaName)})},
              {"default", json::object()},
              {"description", description}};
}

json stringProp(const std::string& description) {
  return json{{"type", "string"}, {"description", description}};
}

json openObject(const std::string& description) {
  return json{{"type", "object"},
              {"description", description},
              {"x-kubernetes-preserve-unknown-fields", true}};
}

json stringMap(const std::string& description) {
  return json{{"type", "object"},
              {"description", description},
              {"additionalProperties", json{{"type", "string"}, {"default", ""}}}};
}

// Schema name prefix for a built-in group's kinds: "io.k8s.api.apps.v1.".
std::string builtinPackage(const std::string& group, const std::string& version) {
  if (group == "apiextensions.k8s.io") {
    return "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions." + version + ".";
  }
  std::string g = group.empty() ? "core" : group;
  const std::string suffix = ".k8s.io";
  if (g.size() > suffix.size() && g.compare(g.size() - suffix.size(), suffix.size(), suffix) == 0) {
    g.erase(g.size() - suffix.size());
  }
  if (g == "rbac.authorization") g = "rbac";  // Go package k8s.io/api/rbac/v1
  return "io.k8s.api." + g + "." + version + ".";
}

// Schema name prefix for a CRD's kinds: "com.example.v1." for example.com/v1.
std::string customPackage(const std::string& group, const std::string& version) {
  std::vector<std::string> parts;
  size_t start = 0;
  while (true) {
    size_t dot = group.find('.', start);
    parts.push_back(group.substr(start, dot == std::string::npos ? std::string::npos : dot - start));
    if (dot == std::string::npos) break;
    start = dot + 1;
  }
  std::string out;
  for (auto it = parts.rbegin(); it != parts.rend(); ++it) out += *it + ".";
  return out + version + ".";
}

std::string packageOf(const ResourceInfo& r) {
  return r.custom ? customPackage(r.group, r.version) : builtinPackage(r.group, r.version);
}

json gvkList(const ResourceInfo& r, const std::string& kind) {
  return json::array({json{{"group", r.group}, {"version", r.version}, {"kind", kind}}});
}

// --- meta/v1 schemas every document references. ---

void addMetaSchemas(json& schemas) {
  schemas[std::string(kMetaPrefix) + "Time"] = {
      {"type", "string"},
      {"format", "date-time"},
      {"description", "Time is a wrapper around time.Time, serialized as RFC 3339."}};
  schemas[std::string(kMetaPrefix) + "OwnerReference"] = {
      {"type", "object"},
      {"description", "OwnerReference contains information to identify an owning object."},
      {"required", json::array({"apiVersion", "kind", "name", "uid"})},
      {"properties",
       {{"apiVersion", stringProp("API version of the referent.")},
        {"blockOwnerDeletion",
         {{"type", "boolean"}, {"description", "Block deletion of the owner."}}},
        {"controller",
         {{"type", "boolean"}, {"description", "If true, this reference points to the controller."}}},
        {"kind", stringProp("Kind of the referent.")},
        {"name", stringProp("Name of the referent.")},
        {"uid", stringProp("UID of the referent.")}}},
      {"x-kubernetes-map-type", "atomic"}};
  schemas[std::string(kMetaPrefix) + "ManagedFieldsEntry"] =
      openObject("ManagedFieldsEntry is a workflow-id, a FieldSet and the group version of the "
                 "resource that the fieldset applies to.");
  json objectMetaProps = {
      {"annotations", stringMap("Annotations is an unstructured key value map.")},
      {"creationTimestamp",
       propertyRef(std::string(kMetaPrefix) + "Time", "Time the object was created.")},
      {"deletionGracePeriodSeconds",
       {{"type", "integer"},
        {"format", "int64"},
        {"description", "Seconds allowed for graceful termination."}}},
      {"deletionTimestamp",
       propertyRef(std::string(kMetaPrefix) + "Time", "Time the object will be deleted.")},
      {"finalizers",
       {{"type", "array"},
        {"description", "Must be empty before the object is deleted from the registry."},
        {"items", {{"type", "string"}, {"default", ""}}},
        {"x-kubernetes-list-type", "set"}}},
      {"generateName", stringProp("Optional prefix for a server-generated name.")},
      {"generation",
       {{"type", "integer"},
        {"format", "int64"},
        {"description", "A sequence number representing a specific generation of the desired "
                        "state."}}},
      {"labels", stringMap("Map of string keys and values for organizing objects.")},
      {"managedFields",
       {{"type", "array"},
        {"description", "Field ownership for server-side apply."},
        {"items", propertyRef(std::string(kMetaPrefix) + "ManagedFieldsEntry", "")}}},
      {"name", stringProp("Name must be unique within a namespace.")},
      {"namespace", stringProp("Namespace defines the space within which each name must be "
                               "unique.")},
      {"ownerReferences",
       {{"type", "array"},
        {"description", "List of objects depended by this object."},
        {"items", propertyRef(std::string(kMetaPrefix) + "OwnerReference", "")},
        {"x-kubernetes-list-map-keys", json::array({"uid"})},
        {"x-kubernetes-list-type", "map"},
        {"x-kubernetes-patch-merge-key", "uid"},
        {"x-kubernetes-patch-strategy", "merge"}}},
      {"resourceVersion", stringProp("An opaque value that represents the internal version of "
                                     "this object.")},
      {"selfLink", stringProp("Deprecated.")},
      {"uid", stringProp("UID is the unique in time and space value for this object.")}};
  schemas[std::string(kMetaPrefix) + "ObjectMeta"] = {
      {"type", "object"},
      {"description", "ObjectMeta is metadata that all persisted resources must have."},
      {"properties", objectMetaProps}};
  schemas[std::string(kMetaPrefix) + "ListMeta"] = {
      {"type", "object"},
      {"description", "ListMeta describes metadata that synthetic resources must have."},
      {"properties",
       {{"continue", stringProp("Continue token for the next page.")},
        {"remainingItemCount",
         {{"type", "integer"}, {"format", "int64"}, {"description", "Items not yet returned."}}},
        {"resourceVersion", stringProp("Version of the list.")},
        {"selfLink", stringProp("Deprecated.")}}}};
  schemas[std::string(kMetaPrefix) + "Patch"] = {
      {"type", "object"},
      {"description", "Patch is provided to give a concrete name and type to the Kubernetes "
                      "PATCH request body."}};
  schemas[std::string(kMetaPrefix) + "Status"] = openObject("Status is a return value for calls "
                                                            "that don't return other objects.");
  schemas[std::string(kMetaPrefix) + "DeleteOptions"] =
      openObject("DeleteOptions may be provided when deleting an API object.");
}

// Top-level fields of built-in kinds that have no spec/status pair.
json extraTopLevel(const ResourceInfo& r) {
  const std::string& k = r.kind;
  if (k == "ConfigMap") {
    return {{"data", stringMap("Configuration data.")},
            {"binaryData", stringMap("Binary configuration data, base64.")},
            {"immutable", {{"type", "boolean"}, {"description", "Immutable data."}}}};
  }
  if (k == "Secret") {
    return {{"data", stringMap("Secret data, base64.")},
            {"stringData", stringMap("Write-only string data.")},
            {"type", stringProp("Used to facilitate programmatic handling of secret data.")},
            {"immutable", {{"type", "boolean"}, {"description", "Immutable data."}}}};
  }
  if (k == "Binding") return {{"target", openObject("The target object to bind to.")}};
  if (k == "Endpoints") {
    return {{"subsets", {{"type", "array"}, {"items", openObject("An endpoint subset.")}}}};
  }
  if (k == "EndpointSlice") {
    return {{"addressType", stringProp("Type of address carried by this slice.")},
            {"endpoints", {{"type", "array"}, {"items", openObject("An endpoint.")}}},
            {"ports", {{"type", "array"}, {"items", openObject("An endpoint port.")}}}};
  }
  if (k == "ServiceAccount") {
    return {{"automountServiceAccountToken", {{"type", "boolean"}}},
            {"imagePullSecrets", {{"type", "array"}, {"items", openObject("A reference.")}}},
            {"secrets", {{"type", "array"}, {"items", openObject("A reference.")}}}};
  }
  if (r.group == "rbac.authorization.k8s.io") {
    json strings = {{"type", "array"}, {"items", {{"type", "string"}, {"default", ""}}}};
    json rule = {{"type", "object"},
                 {"description", "PolicyRule holds information that describes a policy rule."},
                 {"required", json::array({"verbs"})},
                 {"properties",
                  {{"apiGroups", strings},
                   {"nonResourceURLs", strings},
                   {"resourceNames", strings},
                   {"resources", strings},
                   {"verbs", strings}}}};
    if (k == "Role") return {{"rules", {{"type", "array"}, {"items", rule}}}};
    if (k == "ClusterRole") {
      return {{"rules", {{"type", "array"}, {"items", rule}}},
              {"aggregationRule",
               {{"type", "object"},
                {"properties",
                 {{"clusterRoleSelectors",
                   {{"type", "array"}, {"items", openObject("A label selector.")}}}}}}}};
    }
    json roleRef = {{"type", "object"},
                    {"required", json::array({"apiGroup", "kind", "name"})},
                    {"properties",
                     {{"apiGroup", stringProp("APIGroup is the group for the resource being "
                                              "referenced")},
                      {"kind", stringProp("Kind is the type of resource being referenced")},
                      {"name", stringProp("Name is the name of resource being referenced")}}}};
    json subject = {{"type", "object"},
                    {"required", json::array({"kind", "name"})},
                    {"properties",
                     {{"apiGroup", stringProp("")},
                      {"kind", stringProp("")},
                      {"name", stringProp("")},
                      {"namespace", stringProp("")}}}};
    return {{"roleRef", roleRef}, {"subjects", {{"type", "array"}, {"items", subject}}}};
  }
  if (k == "MutatingWebhookConfiguration" || k == "ValidatingWebhookConfiguration") {
    return {{"webhooks", {{"type", "array"}, {"items", openObject("A webhook.")}}}};
  }
  if (k == "Event") {
    json out = json::object();
    for (const char* f : {"action", "message", "reason", "reportingComponent",
                          "reportingInstance", "type"}) {
      out[f] = stringProp("");
    }
    for (const char* f : {"eventTime", "firstTimestamp", "lastTimestamp"}) {
      out[f] = {{"type", "string"}, {"format", "date-time"}};
    }
    out["count"] = {{"type", "integer"}, {"format", "int32"}};
    for (const char* f : {"involvedObject", "related", "series", "source"}) {
      out[f] = openObject("");
    }
    return out;
  }
  return json::object();
}

json builtinKindSchema(const ResourceInfo& r) {
  json props = {
      {"apiVersion", stringProp("APIVersion defines the versioned schema of this representation "
                                "of an object.")},
      {"kind", stringProp("Kind is a string value representing the REST resource this object "
                          "represents.")},
      {"metadata", propertyRef(std::string(kMetaPrefix) + "ObjectMeta",
                               "Standard object's metadata.")},
  };
  json extra = extraTopLevel(r);
  if (extra.empty()) {
    props["spec"] = openObject("Specification of the desired behavior of the " + r.kind + ".");
    props["status"] = openObject("Most recently observed status of the " + r.kind + ".");
  } else {
    props.update(extra);
  }
  return json{{"type", "object"},
              {"description", r.kind + " (" + r.apiVersion() + ")."},
              {"properties", props},
              {"x-kubernetes-group-version-kind", gvkList(r, r.kind)}};
}

json customKindSchema(const ResourceInfo& r, const json* given) {
  json s;
  if (given != nullptr && given->is_object()) {
    s = *given;
  } else {
    s = {{"type", "object"}, {"x-kubernetes-preserve-unknown-fields", true}};
  }
  if (!s.contains("type")) s["type"] = "object";
  if (!s.contains("properties") || !s["properties"].is_object()) {
    s["properties"] = json::object();
    if (given == nullptr) {
      s["properties"]["spec"] = openObject("");
      s["properties"]["status"] = openObject("");
    }
  }
  json& props = s["properties"];
  if (!props.contains("apiVersion")) props["apiVersion"] = stringProp("APIVersion of the object.");
  if (!props.contains("kind")) props["kind"] = stringProp("Kind of the object.");
  // Like upstream, metadata always means ObjectMeta whatever the CRD's schema says.
  props["metadata"] = propertyRef(std::string(kMetaPrefix) + "ObjectMeta",
                                  "Standard object's metadata.");
  s["x-kubernetes-group-version-kind"] = gvkList(r, r.kind);
  return s;
}

json listSchema(const ResourceInfo& r, const std::string& itemSchema) {
  return json{{"type", "object"},
              {"description", r.listKind + " is a list of " + r.kind + "."},
              {"required", json::array({"items"})},
              {"properties",
               {{"apiVersion", stringProp("APIVersion of the list.")},
                {"items", {{"type", "array"}, {"items", propertyRef(itemSchema, "")}}},
                {"kind", stringProp("Kind of the list.")},
                {"metadata", propertyRef(std::string(kMetaPrefix) + "ListMeta",
                                         "Standard list metadata.")}}},
              {"x-kubernetes-group-version-kind", gvkList(r, r.listKind)}};
}

// --- paths ---

json queryParam(const std::string& name, const std::string& type, const std::string& description) {
  return json{{"name", name},
              {"in", "query"},
              {"description", description},
              {"schema", {{"type", type}, {"uniqueItems", true}}}};
}

json pathParam(const std::string& name, const std::string& description) {
  return json{{"name", name},
              {"in", "path"},
              {"description", description},
              {"required", true},
              {"schema", {{"type", "string"}, {"uniqueItems", true}}}};
}

json dryRunParam() {
  return queryParam("dryRun", "string",
                    "When present, indicates that modifications should not be persisted. Valid "
                    "values are: - All: all dry run stages will be processed");
}
json fieldManagerParam() {
  return queryParam("fieldManager", "string",
                    "fieldManager is a name associated with the actor or entity that is making "
                    "these changes.");
}
json fieldValidationParam() {
  return queryParam("fieldValidation", "string",
                    "fieldValidation instructs the server on how to handle objects in the request "
                    "containing unknown or duplicate fields. Valid values are: Ignore, Warn, "
                    "Strict.");
}

json jsonContent(const std::string& schemaName) {
  json schema = refTo(schemaName);
  return json{{"application/json", {{"schema", schema}}},
              {"application/yaml", {{"schema", schema}}}};
}

json responses(const std::string& schemaName, std::initializer_list<const char*> codes) {
  json out = json::object();
  for (const char* code : codes) {
    std::string c = code;
    out[c] = {{"description", c == "201" ? "Created" : c == "202" ? "Accepted" : "OK"},
              {"content", jsonContent(schemaName)}};
  }
  out["401"] = {{"description", "Unauthorized"}};
  return out;
}

struct OpContext {
  const ResourceInfo& r;
  std::string kindSchema;
  std::string listSchema;
  std::string opSuffix;  // "CoreV1NamespacedPod"
  std::string tag;       // "core_v1"
};

json operation(const OpContext& c, const std::string& action, const std::string& opId,
               const std::string& description, json parameters, json resp) {
  return json{{"tags", json::array({c.tag})},
              {"description", description},
              {"operationId", opId},
              {"parameters", std::move(parameters)},
              {"responses", std::move(resp)},
              {"x-kubernetes-action", action},
              {"x-kubernetes-group-version-kind",
               {{"group", c.r.group}, {"version", c.r.version}, {"kind", c.r.kind}}}};
}

json writeBody(const std::string& schemaName) {
  return json{{"content", {{"*/*", {{"schema", refTo(schemaName)}}}}}, {"required", true}};
}

json patchBody() {
  json patch = {{"schema", refTo(std::string(kMetaPrefix) + "Patch")}};
  return json{{"content",
               {{"application/apply-patch+yaml", patch},
                {"application/json-patch+json", patch},
                {"application/merge-patch+json", patch}}},
              {"required", true}};
}

bool has(const ResourceInfo& r, const char* verb) {
  return std::find(r.verbs.begin(), r.verbs.end(), verb) != r.verbs.end();
}

std::string capitalize(std::string s) {
  if (!s.empty()) s[0] = static_cast<char>(std::toupper(static_cast<unsigned char>(s[0])));
  return s;
}

// "apps" -> "Apps", "certificates.k8s.io" -> "Certificates", "example.com" -> "ExampleCom".
std::string groupIdent(const std::string& group) {
  if (group.empty()) return "Core";
  std::string g = group;
  const std::string suffix = ".k8s.io";
  if (g.size() > suffix.size() && g.compare(g.size() - suffix.size(), suffix.size(), suffix) == 0) {
    g.erase(g.size() - suffix.size());
  }
  std::string out;
  bool up = true;
  for (char ch : g) {
    if (ch == '.' || ch == '-') {
      up = true;
      continue;
    }
    out += up ? static_cast<char>(std::toupper(static_cast<unsigned char>(ch))) : ch;
    up = false;
  }
  return out;
}

void addPaths(json& paths, const ResourceInfo& r, const std::string& kindSchema,
              const std::string& listSchemaName) {
  const std::string base = r.group.empty() ? "/api/" + r.version : "/apis/" + r.apiVersion();
  const std::string nsPart = r.namespaced ? "/namespaces/{namespace}" : "";
  const std::string listPath = base + nsPart + "/" + r.resource;
  const std::string itemPath = listPath + "/{name}";
  const std::string scope = r.namespaced ? "Namespaced" : "";
  OpContext c{r, kindSchema, listSchemaName,
              groupIdent(r.group) + capitalize(r.version) + scope + r.kind,
              (r.group.empty() ? std::string("core") : r.group) + "_" + r.version};
  json pretty = queryParam("pretty", "string", "If 'true', then the output is pretty printed.");
  json nsParam = pathParam("namespace", "object name and auth scope, such as for teams and "
                                        "projects");
  json nameParam = pathParam("name", "name of the " + r.kind);

  // Collection.
  json list = json::object();
  if (has(r, "list")) {
    list["get"] = operation(
        c, "list", "list" + c.opSuffix, "list or watch objects of kind " + r.kind,
        json::array({queryParam("allowWatchBookmarks", "boolean", "Request watch bookmarks."),
                     queryParam("continue", "string", "Continue token from a previous list."),
                     queryParam("fieldSelector", "string", "Restrict by fields."),
                     queryParam("labelSelector", "string", "Restrict by labels."),
                     queryParam("limit", "integer", "Maximum number of responses."),
                     queryParam("resourceVersion", "string", "Resource version constraint."),
                     queryParam("resourceVersionMatch", "string", "How to match resourceVersion."),
                     queryParam("sendInitialEvents", "boolean", "Initial events for watch."),
                     queryParam("timeoutSeconds", "integer", "Timeout for the call."),
                     queryParam("watch", "boolean", "Watch for changes.")}),
        responses(listSchemaName, {"200"}));
  }
  if (has(r, "create")) {
    json op = operation(c, "post", "create" + c.opSuffix, "create a " + r.kind,
                        json::array({dryRunParam(), fieldManagerParam(), fieldValidationParam()}),
                        responses(kindSchema, {"200", "201", "202"}));
    op["requestBody"] = writeBody(kindSchema);
    list["post"] = std::move(op);
  }
  if (has(r, "deletecollection")) {
    list["delete"] =
        operation(c, "deletecollection", "deleteCollection" + c.opSuffix,
                  "delete collection of " + r.kind,
                  json::array({dryRunParam(), queryParam("fieldSelector", "string", ""),
                               queryParam("labelSelector", "string", ""),
                               queryParam("gracePeriodSeconds", "integer", ""),
                               queryParam("propagationPolicy", "string", "")}),
                  responses(std::string(kMetaPrefix) + "Status", {"200"}));
  }
  if (!list.empty()) {
    list["parameters"] = r.namespaced ? json::array({nsParam, pretty}) : json::array({pretty});
    paths[listPath] = std::move(list);
  }
  // All-namespaces list of a namespaced resource.
  if (r.namespaced && has(r, "list")) {
    json all = json::object();
    all["get"] = operation(c, "list", "list" + groupIdent(r.group) + capitalize(r.version) +
                                          r.kind + "ForAllNamespaces",
                           "list or watch objects of kind " + r.kind,
                           json::array({queryParam("fieldSelector", "string", ""),
                                        queryParam("labelSelector", "string", ""),
                                        queryParam("limit", "integer", ""),
                                        queryParam("watch", "boolean", "")}),
                           responses(listSchemaName, {"200"}));
    all["parameters"] = json::array({pretty});
    paths[base + "/" + r.resource] = std::move(all);
  }

  // Item, and the status subresource with the same operations.
  auto itemOps = [&](const std::string& path, const std::string& what, bool withDelete) {
    json item = json::object();
    if (has(r, "get")) {
      item["get"] = operation(c, "get", "read" + c.opSuffix + what, "read the specified " + r.kind,
                              json::array(), responses(kindSchema, {"200"}));
    }
    if (has(r, "update")) {
      json op = operation(c, "put", "replace" + c.opSuffix + what,
                          "replace the specified " + r.kind,
                          json::array({dryRunParam(), fieldManagerParam(), fieldValidationParam()}),
                          responses(kindSchema, {"200", "201"}));
      op["requestBody"] = writeBody(kindSchema);
      item["put"] = std::move(op);
    }
    if (has(r, "patch")) {
      json op = operation(
          c, "patch", "patch" + c.opSuffix + what, "partially update the specified " + r.kind,
          json::array({dryRunParam(), fieldManagerParam(), fieldValidationParam(),
                       queryParam("force", "boolean",
                                  "Force is going to \"force\" Apply requests. It must be unset "
                                  "for non-apply patch requests.")}),
          responses(kindSchema, {"200", "201"}));
      op["requestBody"] = patchBody();
      item["patch"] = std::move(op);
    }
    if (withDelete && has(r, "delete")) {
      json op = operation(c, "delete", "delete" + c.opSuffix, "delete a " + r.kind,
                          json::array({dryRunParam(),
                                       queryParam("gracePeriodSeconds", "integer", ""),
                                       queryParam("propagationPolicy", "string", "")}),
                          responses(std::string(kMetaPrefix) + "Status", {"200", "202"}));
      op["requestBody"] = writeBody(std::string(kMetaPrefix) + "DeleteOptions");
      op["requestBody"]["required"] = false;
      item["delete"] = std::move(op);
    }
    if (item.empty()) return;
    item["parameters"] = r.namespaced ? json::array({nameParam, nsParam, pretty})
                                      : json::array({nameParam, pretty});
    paths[path] = std::move(item);
  };
  itemOps(itemPath, "", true);
  if (std::find(r.subresources.begin(), r.subresources.end(), "status") != r.subresources.end()) {
    itemOps(itemPath + "/status", "Status", false);
  }
}

}  // namespace

json openApiDocumentFor(const std::string& group, const std::string& version,
                        const std::vector<ResourceInfoPtr>& resources,
                        const std::map<std::string, json>& crdSchemas) {
  json schemas = json::object();
  addMetaSchemas(schemas);
  json paths = json::object();
  for (const auto& rp : resources) {
    const ResourceInfo& r = *rp;
    const std::string pkg = packageOf(r);
    const std::string kindName = pkg + r.kind;
    const std::string listName = pkg + r.listKind;
    if (r.custom) {
      auto it = crdSchemas.find(r.resource);
      schemas[kindName] = customKindSchema(r, it == crdSchemas.end() ? nullptr : &it->second);
    } else {
      schemas[kindName] = builtinKindSchema(r);
    }
    schemas[listName] = listSchema(r, kindName);
    addPaths(paths, r, kindName, listName);
  }
  return json{{"openapi", "3.0.0"},
              {"info", {{"title", "Kubernetes"}, {"version", "v1.32.0"}}},
              {"paths", paths},
              {"components", {{"schemas", schemas}}}};
}

namespace {

// "#/components/schemas/X" -> "#/definitions/X" everywhere in `j`.
void v2Refs(json& j) {
  static const std::string from = "#/components/schemas/";
  if (j.is_object()) {
    for (auto& [k, v] : j.items()) {
      if (k == "$ref" && v.is_string() && v.get<std::string>().rfind(from, 0) == 0) {
        v = "#/definitions/" + v.get<std::string>().substr(from.size());
      } else {
        v2Refs(v);
      }
    }
  } else if (j.is_array()) {
    for (auto& v : j) v2Refs(v);
  }
}

// An OpenAPI 3 operation in Swagger 2.0 form: parameter schemas inlined, the request body as
// a "body" parameter, response content as a response schema.
json v2Operation(const json& op) {
  json out = op;
  json params = json::array();
  for (const auto& p : op.value("parameters", json::array())) {
    json q = p;
    if (q.contains("schema")) {
      for (auto& [k, v] : q["schema"].items()) q[k] = v;
      q.erase("schema");
    }
    params.push_back(std::move(q));
  }
  if (op.contains("requestBody")) {
    const json& content = op["requestBody"].value("content", json::object());
    json schema = json::object();
    if (!content.empty()) schema = content.begin()->value("schema", json::object());
    params.push_back({{"name", "body"}, {"in", "body"}, {"required", true}, {"schema", schema}});
    json consumes = json::array();
    for (auto& [type, v] : content.items()) consumes.push_back(type);
    out["consumes"] = consumes;
    out.erase("requestBody");
  }
  out["parameters"] = std::move(params);
  json responses = json::object();
  const json opResponses = op.value("responses", json::object());
  for (auto& [code, r] : opResponses.items()) {
    json v2 = {{"description", r.value("description", "")}};
    const json& content = r.value("content", json::object());
    if (!content.empty()) v2["schema"] = content.begin()->value("schema", json::object());
    responses[code] = std::move(v2);
  }
  out["responses"] = std::move(responses);
  return out;
}

}  // namespace

json openApiV2From(const std::vector<json>& v3Documents) {
  json definitions = json::object();
  json paths = json::object();
  for (const auto& doc : v3Documents) {
    for (auto& [name, schema] : doc["components"]["schemas"].items()) definitions[name] = schema;
    for (auto& [path, item] : doc["paths"].items()) {
      json v2 = json::object();
      for (auto& [key, value] : item.items()) {
        if (key == "parameters") {
          json params = json::array();
          for (const auto& p : value) {
            json q = p;
            if (q.contains("schema")) {
              for (auto& [k, v] : q["schema"].items()) q[k] = v;
              q.erase("schema");
            }
            params.push_back(std::move(q));
          }
          v2[key] = std::move(params);
        } else if (value.is_object()) {
          v2[key] = v2Operation(value);
        } else {
          v2[key] = value;
        }
      }
      paths[path] = std::move(v2);
    }
  }
  json out = {{"swagger", "2.0"},
              {"info", {{"title", "Kubernetes"}, {"version", "v1.32.0"}}},
              {"paths", std::move(paths)},
              {"definitions", std::move(definitions)}};
  v2Refs(out);
  return out;
}

std::string openApiHash(const json& doc) {
  const std::string text = doc.dump();
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  if (EVP_Digest(text.data(), text.size(), digest, &len, EVP_sha512(), nullptr) != 1) {
    // Fall back to a content hash that is still deterministic.
    return std::to_string(std::hash<std::string>{}(text));
  }
  static const char* hex = "0123456789ABCDEF";
  std::string out;
  out.reserve(len * 2);
  for (unsigned int i = 0; i < len; ++i) {
    out += hex[digest[i] >> 4];
    out += hex[digest[i] & 0xF];
  }
  return out;
}

}  // namespace strait::minicluster::detail

#pragma once
// REST semantics of the minicluster API server, independent of HTTP: the verbs over the
// store for any registered resource, with the rules of upstream's generic registry
// (resourceVersion checks, status subresources, graceful deletion, finalizers, dry-run,
// generateName, field validation). Used by the HTTP front end and by the in-process
// controllers (garbage collector, namespace controller).
//
// Thread-safe: every method may be called concurrently.

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "kube/selector.h"
#include "kube/status.h"
#include "minicluster/admission.h"
#include "minicluster/registry.h"
#include "minicluster/store.h"

namespace strait::minicluster {

using json = nlohmann::json;

enum class FieldValidation { Ignore, Warn, Strict };

struct WriteOptions {
  bool dryRun = false;
  FieldValidation fieldValidation = FieldValidation::Warn;
  std::string subresource;  // "", "status", "scale", "approval", "finalize"
  std::string fieldManager;
  UserInfo user;  // the requester, for admission; empty = the API server's own controllers
};

struct ListOptions {
  std::optional<kube::LabelSelector> labelSelector;
  std::optional<kube::FieldSelector> fieldSelector;
  int64_t limit = 0;          // 0 = no limit
  std::string continueToken;  // from a previous page's metadata.continue
  std::string resourceVersion;
  std::string resourceVersionMatch;
};

struct ListPage {
  std::vector<ObjectPtr> items;
  uint64_t rv = 0;
  std::string continueToken;    // empty when this is the last page
  int64_t remainingItemCount = -1;
};

struct DeleteOptions {
  std::optional<int64_t> gracePeriodSeconds;
  std::string propagationPolicy;  // "", Background, Foreground, Orphan
  std::optional<std::string> preconditionUid;
  std::optional<std::string> preconditionResourceVersion;
  bool dryRun = false;
  UserInfo user;
};

struct DeleteResult {
  ObjectPtr object;      // final (deleted) or updated (deletion pending) version
  bool deleted = false;  // true: gone from the store; false: deletion pending
};

class Rest {
 public:
  Rest(Store& store, Registry& registry);

  // Admission run on every create, update and delete (mutating before validation,
  // validating after). Set once before the first request; null (the default) = none. Not
  // owned; must outlive this Rest.
  void setAdmission(Admission* admission) { admission_ = admission; }

  Result<ObjectPtr> get(const ResourceInfo& info, const std::string& ns,
                        const std::string& name) const;
  Result<ListPage> list(const ResourceInfo& info, const std::string& ns,
                        const ListOptions& opts) const;
  // `warnings` receives field-validation warnings (fieldValidation=Warn).
  Result<ObjectPtr> create(const ResourceInfo& info, const std::string& ns, json obj,
                           const WriteOptions& opts, std::vector<std::string>* warnings);
  // PUT. Creates when absent only for kinds that allow create-on-update.
  Result<ObjectPtr> update(const ResourceInfo& info, const std::string& ns,
                           const std::string& name, json obj, const WriteOptions& opts,
                           std::vector<std::string>* warnings);
  // PATCH with a content type (json-patch, merge-patch, strategic-merge-patch, apply-patch).
  // Apply creates when absent.
  Result<ObjectPtr> patch(const ResourceInfo& info, const std::string& ns,
                          const std::string& name, const std::string& contentType,
                          const std::string& body, const WriteOptions& opts,
                          std::vector<std::string>* warnings);
  // A read-modify-write from controllers: `mutate` edits the object; no-op if unchanged.
  Result<ObjectPtr> mutate(const ResourceInfo& info, const std::string& ns,
                           const std::string& name, const std::string& subresource,
                           const std::function<kube::Status(json&)>& mutate);
  Result<DeleteResult> remove(const ResourceInfo& info, const std::string& ns,
                              const std::string& name, const DeleteOptions& opts);

  // Whether an object matches label and field selectors.
  bool matches(const Object& o, const ListOptions& opts) const;
  // Store key of an object and the list prefix of a resource in a namespace ("" = all).
  static std::string key(const ResourceInfo& info, const std::string& ns, const std::string& name);
  static std::string prefix(const ResourceInfo& info, const std::string& ns);

  // Status details helpers for error messages ("pods \"x\" not found").
  static kube::Error notFound(const ResourceInfo& info, const std::string& name);

 private:
  Result<ObjectPtr> write(const ResourceInfo& info, const std::string& ns,
                          const std::string& name, const std::string& subresource, bool dryRun,
                          const std::function<Result<json>(const json* current)>& build,
                          bool allowCreate, const UserInfo& user = {});
  NewObject seal(const ResourceInfo& info, json& obj, uint64_t rv) const;
  kube::Status checkNamespace(const ResourceInfo& info, const std::string& ns) const;

  Store& store_;
  Registry& registry_;
  Admission* admission_ = nullptr;
};

}  // namespace strait::minicluster

#include "minicluster/rest.h"

#include <openssl/evp.h>
#include <openssl/rand.h>

#include <algorithm>
#include <chrono>
#include <mutex>
#include <random>
#include <set>
#include <thread>

#include "kube/base64.h"
#include "kube/json_parse.h"
#include "kube/object.h"
#include "kube/patch.h"
#include "kube/yaml_json.h"
#include "minicluster/apply.h"
#include "minicluster/json_scan.h"
#include "minicluster/pod_security_admission.h"
#include "minicluster/strategy.h"

namespace strait::minicluster {
namespace {

using kube::Code;
using kube::makeError;

constexpr int kMaxWriteRetries = 64;

std::string generateSuffix() {
  static const char alphabet[] = "bcdfghjklmnpqrstvwxz2456789";
  unsigned char buf[5];
  RAND_bytes(buf, sizeof(buf));
  std::string s;
  for (unsigned char c : buf) s += alphabet[c % (sizeof(alphabet) - 1)];
  return s;
}

// Internal marker: the stored object changed between read and write; retry.
constexpr const char* kRetryMarker = "\x01retry";

bool isRetry(const kube::Error& e) { return e.code == Code::Conflict && e.message == kRetryMarker; }

std::string conflictMessage(const ResourceInfo& info, const std::string& name) {
  return "Operation cannot be fulfilled on " + info.groupResource() + " \"" + name +
         "\": the object has been modified; please apply your changes to the latest version "
         "and try again";
}

Result<json> parseBody(const std::string& body, bool yaml) {
  if (kube::bracketDepth(body) > kube::kMaxJsonDepth) {
    return makeError(Code::BadRequest, "error decoding patch: nested too deeply");
  }
  if (yaml) return kube::yamlToJson(body);
  auto r = kube::parseJson(body);
  if (!r) return makeError(Code::BadRequest, "error decoding patch: " + r.error().message);
  return r;
}

kube::Error alreadyExists(const ResourceInfo& info, const std::string& name) {
  auto e = makeError(Code::AlreadyExists, info.groupResource() + " \"" + name + "\" already exists");
  e.name = name;
  e.kind = info.resource;
  return e;
}

// A patch may not change metadata.uid (upstream's update validation: the field is
// immutable, 422); the kubelet puts the Pod's uid in its status patches as a precondition.
kube::Status patchKeepsUid(const ResourceInfo& info, const std::string& name, const json& cur,
                           const json& patched) {
  if (!patched.contains("metadata") || !patched["metadata"].is_object()) {
    return kube::Status::OK();
  }
  const json& meta = patched["metadata"];
  if (!meta.contains("uid") || !meta["uid"].is_string()) return kube::Status::OK();
  const std::string uid = meta["uid"].get<std::string>();
  const std::string stored = kube::getUid(cur);
  if (uid.empty() || uid == stored) return kube::Status::OK();
  const std::string kind = info.group.empty() ? info.kind : info.kind + "." + info.group;
  kube::Cause c{"FieldValueInvalid", "metadata.uid",
                "Invalid value: \"" + uid + "\": field is immutable"};
  auto e = makeError(Code::Invalid, kind + " \"" + name + "\" is invalid: " + c.field + ": " +
                                        c.message);
  e.name = name;
  e.kind = info.kind;
  e.causes.push_back(std::move(c));
  return e;
}

// After mutating admission on create: the server-set identity of the object stays.
void keepServerFields(json& obj, const ResourceInfo& info, const std::string& ns,
                      const json& before) {
  if (!obj.is_object()) obj = json::object();
  obj["kind"] = info.kind;
  obj["apiVersion"] = info.apiVersion();
  json& meta = obj["metadata"];
  if (!meta.is_object()) meta = json::object();
  for (const char* k : {"name", "uid", "creationTimestamp", "generation"}) {
    if (before.contains(k)) meta[k] = before[k];
  }
  if (info.namespaced) meta["namespace"] = ns;
}

bool allowsCreateOnUpdate(const ResourceInfo& info) {
  return info.group == "coordination.k8s.io" ||
         (info.group.empty() && (info.resource == "endpoints" || info.resource == "events"));
}

}  // namespace

Rest::Rest(Store& store, Registry& registry) : store_(store), registry_(registry) {}

std::string Rest::key(const ResourceInfo& info, const std::string& ns, const std::string& name) {
  return prefix(info, info.namespaced ? ns : "") + name;
}

std::string Rest::prefix(const ResourceInfo& info, const std::string& ns) {
  std::string p = "/" + (info.group.empty() ? std::string("core") : info.group) + "/" +
                  info.resource + "/";
  if (!info.namespaced) return p + "/";
  if (!ns.empty()) p += ns + "/";
  return p;
}

kube::Error Rest::notFound(const ResourceInfo& info, const std::string& name) {
  auto e = makeError(Code::NotFound, info.groupResource() + " \"" + name + "\" not found");
  e.name = name;
  e.kind = info.resource;
  return e;
}

Result<ObjectPtr> Rest::get(const ResourceInfo& info, const std::string& ns,
                            const std::string& name) const {
  auto r = store_.get(key(info, ns, name));
  if (!r) return notFound(info, name);
  return r;
}

bool Rest::matches(const Object& o, const ListOptions& opts) const {
  if (opts.labelSelector && !opts.labelSelector->matches(o.labels)) return false;
  if (opts.fieldSelector) {
    // As kube::FieldSelector::matches, on the stored (flat) field map: a missing field is "".
    for (const auto& r : opts.fieldSelector->requirements()) {
      auto it = o.fields.find(r.field);
      const bool equal = it == o.fields.end() ? r.value.empty() : it->second == r.value;
      if (equal != (r.op == kube::SelectorOp::Equals)) return false;
    }
  }
  return true;
}

Result<ListPage> Rest::list(const ResourceInfo& info, const std::string& ns,
                            const ListOptions& opts) const {
  if (opts.fieldSelector) {
    for (const auto& req : opts.fieldSelector->requirements()) {
      if (!registry_.isSelectableField(info, req.field)) {
        return makeError(Code::BadRequest, "field label not supported: " + req.field);
      }
    }
  }
  // resourceVersion semantics for list: "" = latest, "0" = any, N = not older than N.
  if (!opts.resourceVersion.empty() && opts.resourceVersion != "0") {
    uint64_t want = 0;
    try {
      want = std::stoull(opts.resourceVersion);
    } catch (...) {
      return makeError(Code::BadRequest,
                       "invalid resource version \"" + opts.resourceVersion + "\"");
    }
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(3);
    while (store_.revision() < want) {
      if (std::chrono::steady_clock::now() > deadline) {
        return makeError(Code::ServerTimeout,
                         "Too large resource version: " + opts.resourceVersion +
                             ", current: " + std::to_string(store_.revision()));
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    if (opts.resourceVersionMatch == "Exact" && want != store_.revision() &&
        want < store_.compactedRevision()) {
      return makeError(Code::Gone, "too old resource version: " + opts.resourceVersion);
    }
  }

  std::string startAfter;
  uint64_t tokenRv = 0;
  if (!opts.continueToken.empty()) {
    auto decoded = kube::base64Decode(opts.continueToken);
    json tok;
    if (decoded) tok = json::parse(*decoded, nullptr, false);
    if (!decoded || tok.is_discarded() || !tok.is_object() || !tok.contains("rv") ||
        !tok.contains("start") || !tok["rv"].is_number_unsigned() || !tok["start"].is_string()) {
      return makeError(Code::BadRequest, "continue key is not valid: malformed token");
    }
    tokenRv = tok["rv"].get<uint64_t>();
    startAfter = tok["start"].get<std::string>();
    if (tokenRv < store_.compactedRevision()) {
      return makeError(Code::Gone,
                       "The provided continue parameter is too old to display a consistent list "
                       "result. You can start a new list without the continue parameter.");
    }
  }

  std::string p = prefix(info, ns);
  auto all = store_.list(p, [&](const Object& o) {
    if (!startAfter.empty() && o.key <= startAfter) return false;
    return matches(o, opts);
  });
  ListPage page;
  page.rv = tokenRv ? tokenRv : all.rv;
  if (opts.limit > 0 && static_cast<int64_t>(all.items.size()) > opts.limit) {
    page.items.assign(all.items.begin(), all.items.begin() + opts.limit);
    json tok = {{"rv", page.rv}, {"start", page.items.back()->key}};
    page.continueToken = kube::base64Encode(tok.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
    page.remainingItemCount = static_cast<int64_t>(all.items.size()) - opts.limit;
  } else {
    page.items = std::move(all.items);
  }
  return page;
}

namespace {

// The stored form of `obj` (whose metadata.resourceVersion is set): compact JSON, labels and
// the selectable fields.
NewObject serialize(const ResourceInfo& info, const json& obj, const Registry& registry) {
  NewObject out;
  out.json = obj.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  out.json.shrink_to_fit();  // kept for the object's lifetime: no spare capacity
  if (obj["metadata"].contains("labels") && obj["metadata"]["labels"].is_object()) {
    for (auto& [k, v] : obj["metadata"]["labels"].items()) {
      if (v.is_string()) out.labels[k] = v.get<std::string>();
    }
  }
  // A missing field selects as "", so empty values need not be kept (memory per object).
  auto fields = registry.fieldsOf(info, obj);
  std::erase_if(fields, [](const auto& kv) { return kv.second.empty(); });
  out.fields.reserve(fields.size());
  for (auto& [k, v] : fields) out.fields.emplace_hint(out.fields.end(), k, std::move(v));
  return out;
}

// An object serialized before the store's write lock is taken: its JSON carries
// resourceVersion "0" at [rvBegin, rvEnd), so that under the lock only the revision is
// spliced in (sealAt) instead of copying and dumping the tree there. rvEnd == 0 when the span
// was not found (then sealAt parses and dumps again).
struct Presealed {
  NewObject object;
  size_t rvBegin = 0, rvEnd = 0;
};

// Sets obj's metadata.resourceVersion to "0" and serializes it with its labels and fields.
Presealed preseal(const ResourceInfo& info, json& obj, const Registry& registry) {
  obj["metadata"]["resourceVersion"] = "0";
  Presealed p;
  p.object = serialize(info, obj, registry);
  const std::string_view text = p.object.json;
  auto meta = jsonMember(text, "metadata");
  auto rv = meta ? jsonMember(*meta, "resourceVersion") : std::nullopt;
  if (rv && *rv == "\"0\"") {
    p.rvBegin = static_cast<size_t>(rv->data() - text.data());
    p.rvEnd = p.rvBegin + rv->size();
  }
  return p;
}

// The presealed object at revision `rv`; moves out of `p` (once per Presealed). Cheap: meant
// for the store's write callback, under its lock.
NewObject sealAt(Presealed& p, uint64_t rv) {
  NewObject out = std::move(p.object);
  const std::string value = "\"" + std::to_string(rv) + "\"";
  if (p.rvEnd == 0) {
    json obj = json::parse(out.json);
    obj["metadata"]["resourceVersion"] = std::to_string(rv);
    out.json = obj.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
    out.json.shrink_to_fit();
    return out;
  }
  std::string text;
  text.reserve(out.json.size() - (p.rvEnd - p.rvBegin) + value.size());
  text.append(out.json, 0, p.rvBegin);
  text += value;
  text.append(out.json, p.rvEnd, std::string::npos);
  out.json = std::move(text);
  return out;
}

}  // namespace

NewObject Rest::seal(const ResourceInfo& info, json& obj, uint64_t rv) const {
  obj["metadata"]["resourceVersion"] = std::to_string(rv);
  return serialize(info, obj, registry_);
}

kube::Status Rest::checkNamespace(const ResourceInfo& info, const std::string& ns) const {
  if (!info.namespaced) return kube::Status::OK();
  if (ns.empty()) {
    return makeError(Code::BadRequest, "the namespace of the object must be set for " +
                                           info.groupResource());
  }
  auto nsObj = store_.get("/core/namespaces//" + ns);
  if (!nsObj) return makeError(Code::NotFound, "namespaces \"" + ns + "\" not found");
  json n = json::parse((*nsObj)->json);
  if (n["metadata"].contains("deletionTimestamp")) {
    return makeError(Code::Forbidden, "unable to create new content in namespace " + ns +
                                          " because it is being terminated");
  }
  return kube::Status::OK();
}

namespace {

// Checks apiVersion/kind of a body against the resource addressed by the URL.
kube::Status checkTypeMeta(const ResourceInfo& info, const json& obj, const char* what) {
  if (!obj.is_object()) {
    return makeError(Code::BadRequest, std::string(what) + " must be a JSON object");
  }
  std::string kind = obj.contains("kind") && obj["kind"].is_string() ? obj["kind"] : "";
  std::string apiVersion =
      obj.contains("apiVersion") && obj["apiVersion"].is_string() ? obj["apiVersion"] : "";
  if (!kind.empty() && kind != info.kind) {
    return makeError(Code::BadRequest, "the kind of the object (" + kind +
                                           ") does not match the resource " +
                                           info.groupResource() + " (kind " + info.kind + ")");
  }
  if (!apiVersion.empty() && apiVersion != info.apiVersion()) {
    return makeError(Code::BadRequest, "the API version in the data (" + apiVersion +
                                           ") does not match the expected API version (" +
                                           info.apiVersion() + ")");
  }
  if (obj.contains("metadata") && !obj["metadata"].is_object()) {
    return makeError(Code::BadRequest, "metadata must be a JSON object");
  }
  return kube::Status::OK();
}

kube::Status fieldValidation(const ResourceInfo& info, const json& obj, FieldValidation mode,
                             std::vector<std::string>* warnings) {
  if (mode == FieldValidation::Ignore) return kube::Status::OK();
  auto unknown = unknownFields(info, obj);
  if (unknown.empty()) return kube::Status::OK();
  if (mode == FieldValidation::Strict) {
    std::string msg = "strict decoding error: ";
    for (size_t i = 0; i < unknown.size(); ++i) {
      msg += (i ? ", " : "") + std::string("unknown field \"") + unknown[i] + "\"";
    }
    return makeError(Code::BadRequest, msg);
  }
  if (warnings) {
    for (const auto& f : unknown) warnings->push_back("unknown field \"" + f + "\"");
  }
  return kube::Status::OK();
}

}  // namespace

namespace {

// Service creates are serialized so that two of them never take the same ClusterIP or
// nodePort between the check and the write.
std::mutex g_serviceAllocation;

// kube-apiserver's allocators: a ClusterIP (10.96.0.0/12) and nodePorts (30000-32767) are
// unique across Services. Values the client asked for are refused when taken, with
// upstream's messages; values the defaults picked at random are drawn again. Pure but for
// the store read and the random draws.
kube::Status allocateServiceAddresses(Store& store, json& obj, const std::string& askedIp,
                                      const std::set<int>& askedPorts, const std::string& selfKey) {
  std::set<std::string> ips;
  std::set<int> ports;
  for (const auto& o : store.list("/core/services/").items) {
    // A Service of the same name keeps its addresses: the create then fails AlreadyExists.
    if (o->key == selfKey) continue;
    json svc = json::parse(o->json, nullptr, false);
    if (!svc.is_object()) continue;
    const json& spec = svc.value("spec", json::object());
    if (spec.contains("clusterIP") && spec["clusterIP"].is_string()) ips.insert(spec["clusterIP"]);
    for (const auto& p : spec.value("ports", json::array())) {
      if (p.is_object() && p.contains("nodePort") && p["nodePort"].is_number_integer()) {
        ports.insert(p["nodePort"].get<int>());
      }
    }
  }
  json& spec = obj["spec"];
  static thread_local std::mt19937 rng{std::random_device{}()};
  if (spec.contains("clusterIP") && spec["clusterIP"].is_string()) {
    std::string ip = spec["clusterIP"];
    if (ip != "None" && ips.count(ip)) {
      if (!askedIp.empty()) {
        return makeError(Code::Invalid,
                         "Service \"" + kube::getName(obj) + "\" is invalid: spec.clusterIPs: " +
                             "Invalid value: []string{\"" + ip + "\"}: failed to allocate IP " + ip +
                             ": provided IP is already allocated");
      }
      for (int tries = 0; ips.count(ip) && tries < 100000; ++tries) {
        uint32_t v = (10u << 24) | (96u << 16) | (2 + rng() % ((1u << 20) - 4));
        ip = std::to_string(v >> 24) + "." + std::to_string((v >> 16) & 255) + "." +
             std::to_string((v >> 8) & 255) + "." + std::to_string(v & 255);
      }
      spec["clusterIP"] = ip;
      spec["clusterIPs"] = json::array({ip});
    }
  }
  if (spec.contains("ports") && spec["ports"].is_array()) {
    for (auto& p : spec["ports"]) {
      if (!p.is_object() || !p.contains("nodePort") || !p["nodePort"].is_number_integer()) continue;
      int port = p["nodePort"];
      if (ports.count(port)) {
        if (askedPorts.count(port)) {
          return makeError(Code::Invalid,
                           "Service \"" + kube::getName(obj) + "\" is invalid: " +
                               "spec.ports[0].nodePort: Invalid value: " + std::to_string(port) +
                               ": provided port is already allocated");
        }
        for (int tries = 0; ports.count(port) && tries < 100000; ++tries) {
          port = 30000 + static_cast<int>(rng() % 2768);
        }
        p["nodePort"] = port;
      }
      ports.insert(port);
    }
  }
  return kube::Status::OK();
}

}  // namespace

Result<ObjectPtr> Rest::create(const ResourceInfo& info, const std::string& ns, json obj,
                               const WriteOptions& opts, std::vector<std::string>* warnings) {
  if (auto s = checkTypeMeta(info, obj, "the request body"); !s) return s.error();
  if (auto s = fieldValidation(info, obj, opts.fieldValidation, warnings); !s) return s.error();
  obj["kind"] = info.kind;
  obj["apiVersion"] = info.apiVersion();
  json& meta = obj["metadata"];
  if (!meta.is_object()) meta = json::object();
  std::string objNs = meta.value("namespace", "");
  if (info.namespaced) {
    if (!objNs.empty() && !ns.empty() && objNs != ns) {
      return makeError(Code::BadRequest,
                       "the namespace of the provided object does not match the namespace sent "
                       "on the request");
    }
    std::string effective = ns.empty() ? objNs : ns;
    if (auto s = checkNamespace(info, effective); !s) return s.error();
    meta["namespace"] = effective;
  } else {
    meta.erase("namespace");
  }
  const std::string nsName = info.namespaced ? meta["namespace"].get<std::string>() : "";
  for (const char* k : {"uid", "resourceVersion", "deletionTimestamp",
                        "deletionGracePeriodSeconds", "selfLink"}) {
    meta.erase(k);
  }
  meta["creationTimestamp"] = kube::rfc3339Now();
  meta["uid"] = kube::newUid();
  const bool service = info.group.empty() && info.resource == "services";
  std::string askedIp;
  std::set<int> askedPorts;
  if (service && obj.contains("spec") && obj["spec"].is_object()) {
    const json& spec = obj["spec"];
    if (spec.contains("clusterIP") && spec["clusterIP"].is_string()) askedIp = spec["clusterIP"];
    for (const auto& p : spec.value("ports", json::array())) {
      if (p.is_object() && p.contains("nodePort") && p["nodePort"].is_number_integer()) {
        askedPorts.insert(p["nodePort"].get<int>());
      }
    }
  }
  prepareForCreate(info, obj);
  std::unique_lock<std::mutex> allocation(g_serviceAllocation, std::defer_lock);
  if (service && obj.contains("spec") && obj["spec"].is_object()) {
    allocation.lock();
    std::string self = key(info, nsName, obj["metadata"].value("name", ""));
    if (auto s = allocateServiceAddresses(store_, obj, askedIp, askedPorts, self); !s) {
      return s.error();
    }
  }

  std::string generateName = meta.value("generateName", "");
  bool generated = meta.value("name", "").empty() && !generateName.empty();
  for (int attempt = 0; attempt < 8; ++attempt) {
    // `obj` may be replaced by mutating admission: address its metadata afresh each time.
    if (generated) obj["metadata"]["name"] = generateName + generateSuffix();
    AdmissionAttributes attrs{"CREATE", &info, opts.subresource, nsName,
                              obj["metadata"].value("name", ""), nullptr, opts.dryRun,
                              opts.user};
    if (admission_ && attempt == 0) {
      const json metaBefore = obj["metadata"];
      if (auto s = admission_->mutate(attrs, &obj); !s) return s.error();
      keepServerFields(obj, info, nsName, metaBefore);
    }
    if (auto s = validateObject(info, obj, true); !s) return s.error();
    if (admission_ && attempt == 0) {
      if (auto s = admission_->validate(attrs, &obj); !s) return s.error();
    }
    if (attempt == 0) {
      if (auto s = admitPodSecurity(store_, attrs, obj, warnings); !s) return s.error();
    }
    std::string name = obj["metadata"]["name"];
    if (opts.dryRun) {
      if (store_.get(key(info, nsName, name))) {
        return alreadyExists(info, name);
      }
      json copy = obj;
      auto sealed = seal(info, copy, store_.revision());
      auto o = std::make_shared<Object>();
      o->key = key(info, nsName, name);
      o->json = std::move(sealed.json);
      o->labels = std::move(sealed.labels);
      o->fields = std::move(sealed.fields);
      return ObjectPtr(o);
    }
    Presealed sealed = preseal(info, obj, registry_);
    auto r = store_.create(key(info, nsName, name), [&](const ObjectPtr&, uint64_t rv) {
      return Result<NewObject>(sealAt(sealed, rv));
    });
    if (r) return r;
    if (r.error().code == Code::AlreadyExists) {
      if (generated) continue;
      return alreadyExists(info, name);
    }
    return r.error();
  }
  return makeError(Code::AlreadyExists,
                   "could not generate a unique name from generateName \"" + generateName + "\"");
}

Result<ObjectPtr> Rest::write(const ResourceInfo& info, const std::string& ns,
                              const std::string& name, const std::string& subresource,
                              bool dryRun,
                              const std::function<Result<json>(const json* current)>& build,
                              bool allowCreate, const UserInfo& user) {
  const std::string k = key(info, ns, name);
  for (int attempt = 0; attempt < kMaxWriteRetries; ++attempt) {
    auto cur = store_.get(k);
    if (!cur) {
      if (!allowCreate) return notFound(info, name);
      auto obj = build(nullptr);
      if (!obj) return obj.error();
      WriteOptions o;
      o.dryRun = dryRun;
      o.fieldValidation = FieldValidation::Ignore;
      o.user = user;
      auto created = create(info, ns, std::move(*obj), o, nullptr);
      if (!created && created.error().code == Code::AlreadyExists) continue;
      return created;
    }
    const ObjectPtr current = *cur;
    json old = json::parse(current->json);
    auto built = build(&old);
    if (!built) return built.error();
    json obj = std::move(*built);
    if (auto s = checkTypeMeta(info, obj, "the request body"); !s) return s.error();
    obj["kind"] = info.kind;
    obj["apiVersion"] = info.apiVersion();
    if (!obj.contains("metadata") || !obj["metadata"].is_object()) obj["metadata"] = json::object();
    std::string bodyName = obj["metadata"].value("name", "");
    if (!bodyName.empty() && bodyName != name) {
      return makeError(Code::BadRequest, "the name of the object (" + bodyName +
                                             ") does not match the name on the URL (" + name +
                                             ")");
    }
    std::string bodyNs = obj["metadata"].value("namespace", "");
    if (info.namespaced && !bodyNs.empty() && bodyNs != ns) {
      return makeError(Code::BadRequest,
                       "the namespace of the provided object does not match the namespace sent "
                       "on the request");
    }
    // Optimistic concurrency: a resourceVersion in the body must match the stored one.
    std::string bodyRv = obj["metadata"].value("resourceVersion", "");
    if (!bodyRv.empty() && bodyRv != std::to_string(current->rv)) {
      return makeError(Code::Conflict, conflictMessage(info, name));
    }
    prepareForUpdate(info, subresource, obj, old);
    AdmissionAttributes attrs{"UPDATE", &info, subresource, ns, name, &old, dryRun, user};
    if (admission_) {
      if (auto s = admission_->mutate(attrs, &obj); !s) return s.error();
      prepareForUpdate(info, subresource, obj, old);  // webhooks may not touch server fields
    }
    if (auto s = validateObject(info, obj, false, &old); !s) return s.error();
    if (admission_) {
      if (auto s = admission_->validate(attrs, &obj); !s) return s.error();
    }
    if (auto s = admitPodSecurity(store_, attrs, obj, nullptr); !s) return s.error();
    obj["metadata"]["resourceVersion"] = old["metadata"]["resourceVersion"];
    if (obj == old) return current;  // no-op: no new resourceVersion, no event
    if (dryRun) {
      auto o = std::make_shared<Object>(*current);
      o->json = obj.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
      return ObjectPtr(o);
    }
    const auto& m = obj["metadata"];
    // As upstream's ShouldDeleteDuringUpdate: only once the grace period is over (a kubelet
    // updates a terminating Pod's status during its grace period).
    bool finalizersDone = m.contains("deletionTimestamp") &&
                          (!m.contains("finalizers") || m["finalizers"].empty()) &&
                          !(m.contains("deletionGracePeriodSeconds") &&
                            m["deletionGracePeriodSeconds"].is_number_integer() &&
                            m["deletionGracePeriodSeconds"].get<int64_t>() > 0);
    Presealed sealed = preseal(info, obj, registry_);
    if (finalizersDone) {
      auto r = store_.remove(k, [&](const ObjectPtr& c, uint64_t rv) -> Result<NewObject> {
        if (c->rv != current->rv) return makeError(Code::Conflict, kRetryMarker);
        return sealAt(sealed, rv);
      });
      if (!r && isRetry(r.error())) continue;
      return r;
    }
    auto r = store_.update(k, [&](const ObjectPtr& c, uint64_t rv) -> Result<NewObject> {
      if (c->rv != current->rv) return makeError(Code::Conflict, kRetryMarker);
      return sealAt(sealed, rv);
    });
    if (!r && isRetry(r.error())) continue;
    if (!r && r.error().code == Code::NotFound) return notFound(info, name);
    return r;
  }
  return makeError(Code::Conflict, conflictMessage(info, name));
}

Result<ObjectPtr> Rest::update(const ResourceInfo& info, const std::string& ns,
                               const std::string& name, json obj, const WriteOptions& opts,
                               std::vector<std::string>* warnings) {
  if (auto s = checkTypeMeta(info, obj, "the request body"); !s) return s.error();
  if (auto s = fieldValidation(info, obj, opts.fieldValidation, warnings); !s) return s.error();
  if (obj.contains("metadata") && obj["metadata"].is_object()) {
    std::string bodyName = obj["metadata"].value("name", "");
    if (!bodyName.empty() && bodyName != name) {
      return makeError(Code::BadRequest, "the name of the object (" + bodyName +
                                             ") does not match the name on the URL (" + name +
                                             ")");
    }
  }
  bool allowCreate = opts.subresource.empty() && allowsCreateOnUpdate(info);
  return write(info, ns, name, opts.subresource, opts.dryRun,
               [&](const json*) -> Result<json> { return obj; }, allowCreate, opts.user);
}

Result<ObjectPtr> Rest::mutate(const ResourceInfo& info, const std::string& ns,
                               const std::string& name, const std::string& subresource,
                               const std::function<kube::Status(json&)>& fn) {
  return write(info, ns, name, subresource, false,
               [&](const json* cur) -> Result<json> {
                 json obj = *cur;
                 if (auto s = fn(obj); !s) return s.error();
                 return obj;
               },
               false);
}

Result<ObjectPtr> Rest::patch(const ResourceInfo& info, const std::string& ns,
                              const std::string& name, const std::string& contentType,
                              const std::string& body, const WriteOptions& opts,
                              std::vector<std::string>* warnings) {
  std::string type = contentType.substr(0, contentType.find(';'));
  while (!type.empty() && type.back() == ' ') type.pop_back();
  const bool apply = type == "application/apply-patch+yaml";
  if (type != "application/json-patch+json" && type != "application/merge-patch+json" &&
      type != "application/strategic-merge-patch+json" && !apply) {
    return makeError(Code::UnsupportedMediaType,
                     "the body of the request was in an unknown format - accepted media types "
                     "include: application/json-patch+json, application/merge-patch+json, "
                     "application/apply-patch+yaml, application/strategic-merge-patch+json");
  }
  const kube::PatchSchema* schema = nullptr;
  if (type == "application/strategic-merge-patch+json" || apply) {
    schema = info.custom ? nullptr : kube::schemaForKind(info.group, info.kind);
    if (!schema && type == "application/strategic-merge-patch+json") {
      return makeError(Code::UnsupportedMediaType,
                       "strategic merge patch format is not supported");
    }
  }
  auto patchDoc = parseBody(body, apply);
  if (!patchDoc) return patchDoc.error();
  json patchJson = std::move(*patchDoc);
  if (apply) {
    if (auto s = checkTypeMeta(info, patchJson, "the applied configuration"); !s) {
      return s.error();
    }
    if (auto s = fieldValidation(info, patchJson, opts.fieldValidation, warnings); !s) {
      return s.error();
    }
    if (!patchJson.contains("metadata") || !patchJson["metadata"].is_object() ||
        patchJson["metadata"].value("name", "") != name) {
      return makeError(Code::BadRequest,
                       "metadata.name of the applied configuration must be \"" + name + "\"");
    }
  } else if (type != "application/json-patch+json" && !patchJson.is_object()) {
    return makeError(Code::BadRequest, "the patch must be a JSON object");
  }
  const std::string manager = opts.fieldManager;
  if (apply && manager.empty()) {
    return makeError(Code::BadRequest,
                     "PATCH with application/apply-patch+yaml requires the fieldManager "
                     "query parameter");
  }
  const json appliedSet = apply ? appliedFieldSet(patchJson, schema) : json::object();
  return write(
      info, ns, name, opts.subresource, opts.dryRun,
      [&](const json* cur) -> Result<json> {
        if (!apply) {
          Result<json> patched =
              type == "application/json-patch+json"    ? kube::applyJsonPatch(*cur, patchJson)
              : type == "application/merge-patch+json" ? kube::applyMergePatch(*cur, patchJson)
                                                       : kube::applyStrategicMergePatch(
                                                             *cur, patchJson, *schema);
          if (patched) {
            if (kube::Status s = patchKeepsUid(info, name, *cur, *patched); !s) return s.error();
          }
          return patched;
        }
        // Server-side apply (see apply.h): merge the applied configuration into the live
        // object (strategic merge for built-in kinds, merge patch for custom resources), then
        // drop what this manager applied before and no longer applies.
        if (!cur) {
          json obj = patchJson;
          if (info.namespaced) obj["metadata"]["namespace"] = ns;
          recordApply(obj, manager, info.apiVersion(), appliedSet, kube::rfc3339Now());
          return obj;
        }
        auto merged = schema ? kube::applyStrategicMergePatch(*cur, patchJson, *schema)
                             : kube::applyMergePatch(*cur, patchJson);
        if (!merged) return merged;
        json before = managedApplySet(*cur, manager);
        if (before != appliedSet) {
          removeFieldSet(*merged, removedFields(before, appliedSet));
          recordApply(*merged, manager, info.apiVersion(), appliedSet, kube::rfc3339Now());
        }
        return merged;
      },
      apply && opts.subresource.empty(), opts.user);
}

Result<DeleteResult> Rest::remove(const ResourceInfo& info, const std::string& ns,
                                  const std::string& name, const DeleteOptions& opts) {
  const std::string k = key(info, ns, name);
  for (int attempt = 0; attempt < kMaxWriteRetries; ++attempt) {
    auto cur = store_.get(k);
    if (!cur) return notFound(info, name);
    const ObjectPtr current = *cur;
    json obj = json::parse(current->json);
    if (admission_ && attempt == 0) {
      AdmissionAttributes attrs{"DELETE", &info, "", ns, name, &obj, opts.dryRun, opts.user};
      if (auto s = admission_->mutate(attrs, nullptr); !s) return s.error();
      if (auto s = admission_->validate(attrs, nullptr); !s) return s.error();
    }
    json& meta = obj["metadata"];
    if (opts.preconditionUid && *opts.preconditionUid != meta.value("uid", "")) {
      return makeError(Code::Conflict, "Precondition failed: UID in precondition: " +
                                           *opts.preconditionUid +
                                           ", UID in object meta: " + meta.value("uid", ""));
    }
    if (opts.preconditionResourceVersion &&
        *opts.preconditionResourceVersion != std::to_string(current->rv)) {
      return makeError(Code::Conflict,
                       "Precondition failed: ResourceVersion in precondition: " +
                           *opts.preconditionResourceVersion +
                           ", ResourceVersion in object meta: " + std::to_string(current->rv));
    }
    bool changed = false;
    json finalizers = meta.contains("finalizers") && meta["finalizers"].is_array()
                          ? meta["finalizers"]
                          : json::array();
    auto addFinalizer = [&](const char* f) {
      if (std::find(finalizers.begin(), finalizers.end(), f) == finalizers.end()) {
        finalizers.push_back(f);
        changed = true;
      }
    };
    auto dropFinalizer = [&](const char* f) {
      auto it = std::find(finalizers.begin(), finalizers.end(), f);
      if (it != finalizers.end()) {
        finalizers.erase(it);
        changed = true;
      }
    };
    const bool alreadyDeleting = meta.contains("deletionTimestamp");
    if (opts.propagationPolicy == "Foreground") {
      addFinalizer("foregroundDeletion");
      dropFinalizer("orphan");
    } else if (opts.propagationPolicy == "Orphan") {
      addFinalizer("orphan");
      dropFinalizer("foregroundDeletion");
    } else if (opts.propagationPolicy == "Background" && !alreadyDeleting) {
      dropFinalizer("orphan");
      dropFinalizer("foregroundDeletion");
    }
    // Graceful deletion (pods): grace from options, else the spec, 0 when unscheduled or
    // terminal.
    int64_t grace = 0;
    if (info.group.empty() && info.resource == "pods") {
      const json spec = obj.value("spec", json::object());
      grace = opts.gracePeriodSeconds ? *opts.gracePeriodSeconds
                                      : spec.value("terminationGracePeriodSeconds", 30);
      std::string phase = obj.contains("status") ? obj["status"].value("phase", "") : "";
      if (spec.value("nodeName", "").empty() || phase == "Succeeded" || phase == "Failed") {
        grace = 0;
      }
      if (grace < 0) grace = 0;
      if (alreadyDeleting && meta.contains("deletionGracePeriodSeconds") &&
          meta["deletionGracePeriodSeconds"].is_number() &&
          meta["deletionGracePeriodSeconds"].get<int64_t>() <= grace) {
        grace = meta["deletionGracePeriodSeconds"].get<int64_t>();
        if (grace > 0 && !changed) return DeleteResult{current, false};
      }
    } else if (info.group.empty() && info.resource == "namespaces") {
      // Namespaces always go through termination: the namespace controller empties them.
      if (!alreadyDeleting) {
        changed = true;
      }
      obj["status"]["phase"] = "Terminating";
      grace = 0;
      const json spec = obj.value("spec", json::object());
      if (spec.contains("finalizers") && spec["finalizers"].is_array() &&
          !spec["finalizers"].empty()) {
        grace = 1;  // not deleted until spec.finalizers empties
      }
    }

    const bool immediate = grace == 0 && finalizers.empty();
    if (immediate) {
      if (opts.dryRun) return DeleteResult{current, true};
      if (!obj["metadata"].contains("deletionTimestamp")) {
        obj["metadata"]["deletionTimestamp"] = kube::rfc3339Now();
        obj["metadata"]["deletionGracePeriodSeconds"] = 0;
      }
      Presealed sealed = preseal(info, obj, registry_);
      auto r = store_.remove(k, [&](const ObjectPtr& c, uint64_t rv) -> Result<NewObject> {
        if (c->rv != current->rv) return makeError(Code::Conflict, kRetryMarker);
        return sealAt(sealed, rv);
      });
      if (!r && isRetry(r.error())) continue;
      if (!r && r.error().code == Code::NotFound) return notFound(info, name);
      if (!r) return r.error();
      return DeleteResult{*r, true};
    }
    // Deletion pending: record the timestamp, grace and finalizers.
    if (!alreadyDeleting || (info.resource == "pods" &&
                             meta.value("deletionGracePeriodSeconds", int64_t{-1}) != grace)) {
      auto when = std::chrono::system_clock::now() + std::chrono::seconds(
                                                          info.resource == "pods" ? grace : 0);
      meta["deletionTimestamp"] = kube::rfc3339(when);
      meta["deletionGracePeriodSeconds"] = info.resource == "pods" ? grace : 0;
      changed = true;
    }
    if (!changed) return DeleteResult{current, false};
    meta["finalizers"] = finalizers;
    if (finalizers.empty()) meta.erase("finalizers");
    if (opts.dryRun) {
      auto o = std::make_shared<Object>(*current);
      o->json = obj.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
      return DeleteResult{ObjectPtr(o), false};
    }
    Presealed sealed = preseal(info, obj, registry_);
    auto r = store_.update(k, [&](const ObjectPtr& c, uint64_t rv) -> Result<NewObject> {
      if (c->rv != current->rv) return makeError(Code::Conflict, kRetryMarker);
      return sealAt(sealed, rv);
    });
    if (!r && isRetry(r.error())) continue;
    if (!r && r.error().code == Code::NotFound) return notFound(info, name);
    if (!r) return r.error();
    return DeleteResult{*r, false};
  }
  return makeError(Code::Conflict, conflictMessage(info, name));
}

}  // namespace strait::minicluster

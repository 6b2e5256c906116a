#include "vnode/node_controller.h"

#include <spdlog/spdlog.h>

#include "kube/api_error.h"
#include "kube/event.h"
#include "kube/object.h"
#include "reflection/labels.h"

namespace strait::vnode {

using nlohmann::json;
namespace res = kube::resources;

class NodeController::ClientLeaseStore : public LeaseStore {
 public:
  explicit ClientLeaseStore(kube::Client& c) : c_(c) {}
  kube::Result<json> get(const std::string& name) override {
    return c_.get(res::kLeases, kNodeLeaseNamespace, name);
  }
  kube::Result<json> create(const json& lease) override {
    return c_.create(res::kLeases, kNodeLeaseNamespace, lease);
  }
  kube::Result<json> update(const json& lease) override {
    return c_.update(res::kLeases, kNodeLeaseNamespace, lease);
  }

 private:
  kube::Client& c_;
};

NodeController::NodeController(kube::Client& client, NodeControllerOptions opts)
    : client_(client), opts_(std::move(opts)), name_(virtualNodeName(opts_.node.providerName)),
      leaseStore_(std::make_unique<ClientLeaseStore>(client)),
      lease_(std::make_unique<LeaseRenewer>(*leaseStore_, name_, LeaseRenewer::WallClock{},
                                            opts_.leaseInterval)) {}

NodeController::~NodeController() { stop(); }

kube::Status NodeController::validate() const {
  if (kube::Status s = validateConfig(opts_.node); !s.ok()) return s;
  auto bad = [](const char* field, const char* msg) {
    return kube::makeError(kube::Code::Invalid, std::string("node controller: ") + field + ": " + msg,
                           field);
  };
  if (!opts_.grant) return bad("grant", "required");
  if (!opts_.provider) return bad("provider", "required");
  if (!opts_.health) return bad("health", "required");
  if (opts_.pollInterval.count() <= 0) return bad("pollInterval", "must be positive");
  if (opts_.leaseInterval.count() <= 0) return bad("leaseInterval", "must be positive");
  return kube::Status::OK();
}

namespace {

// Everything but heartbeat times: equal means no write is needed.
json comparable(const json& node) {
  json c = json::object();
  if (!node.is_object()) return c;
  c["labels"] = node.contains("metadata") ? node["metadata"].value("labels", json::object())
                                          : json::object();
  c["spec"] = node.value("spec", json::object());
  json status = node.value("status", json::object());
  if (status.contains("conditions") && status["conditions"].is_array()) {
    for (json& cond : status["conditions"]) {
      if (cond.is_object()) cond.erase("lastHeartbeatTime");
    }
  }
  c["status"] = std::move(status);
  return c;
}

// `stored` with our labels and taint applied, keeping what others added.
json mergeOwned(const json& stored, const json& built) {
  json out = stored;
  for (auto& [k, v] : built["metadata"]["labels"].items()) out["metadata"]["labels"][k] = v;
  json taints = json::array();
  const std::string ourKey(reflection::kVirtualNodeTaintKey);
  if (stored.contains("spec") && stored["spec"].is_object() && stored["spec"].contains("taints") &&
      stored["spec"]["taints"].is_array()) {
    for (const json& t : stored["spec"]["taints"]) {
      if (t.is_object() && t.value("key", json("")) == ourKey) continue;
      taints.push_back(t);
    }
  }
  if (built["spec"].contains("taints")) {
    for (const json& t : built["spec"]["taints"]) taints.push_back(t);
  }
  if (!out.contains("spec") || !out["spec"].is_object()) out["spec"] = json::object();
  if (taints.empty()) {
    out["spec"].erase("taints");
  } else {
    out["spec"]["taints"] = std::move(taints);
  }
  return out;
}

}  // namespace

void NodeController::tunnelEvent(const json& node, const peering::TunnelCondition& tunnel) {
  spdlog::info("event=vnode_tunnel_changed node={} up={} reason={} message=\"{}\"", name_,
               tunnel.up, tunnel.reason, tunnel.message);
  kube::EventFields f;
  f.involvedObject = kube::objectReference(node);
  f.type = tunnel.up ? "Normal" : "Warning";
  f.reason = tunnel.up ? "TunnelUp" : "TunnelDown";
  f.message = tunnel.up ? "the tunnel to the provider is up: " + tunnel.message
                        : "the tunnel to the provider is down (" + tunnel.reason +
                              "): " + tunnel.message;
  f.component = "strait-vnode";
  f.host = name_;
  kube::Result<json> r = client_.create(res::kEvents, "default", kube::makeEvent(f));
  if (!r.ok()) {
    spdlog::warn("event=node_event_failed node={} reason={} error=\"{}\"", name_, f.reason,
                 r.error().message);
  }
}

kube::Status NodeController::syncNode() {
  const auto now = std::chrono::system_clock::now();
  const ProviderSummary provider = opts_.provider();
  const ResourceMap allocatable = virtualAllocatable(opts_.grant(), provider.pooledFree);
  const Readiness readiness = opts_.health->readiness();

  json stored;
  {
    base::MutexLock lock(mu_);
    stored = node_;
  }
  if (stored.is_null()) {
    kube::Result<json> got = client_.get(res::kNodes, "", name_);
    if (got.ok()) {
      stored = *got;
    } else if (!kube::isNotFound(got.error())) {
      return got.error();
    }
  }
  const peering::TunnelCondition tunnel =
      opts_.tunnel ? opts_.tunnel() : peering::TunnelCondition();
  json built = buildNode(opts_.node, allocatable, provider, readiness, stored, now, tunnel);

  if (stored.is_null()) {
    kube::Result<json> created = client_.create(res::kNodes, "", built);
    if (!created.ok()) return created.error();
    if (tunnel.up) tunnelEvent(*created, tunnel);
    spdlog::info("event=vnode_registered node={} ready={} allocatable=\"{}\"", name_,
                 readiness.ready, peering::formatResources(allocatable));
    base::MutexLock lock(mu_);
    node_ = *created;
    lastStatusWrite_ = std::chrono::steady_clock::now();
    ++writes_;
    lease_->setNodeUid(kube::getUid(node_));
    return kube::Status::OK();
  }
  lease_->setNodeUid(kube::getUid(stored));

  // Metadata and spec: our labels and taint, others' kept.
  json merged = mergeOwned(stored, built);
  if (merged["metadata"].value("labels", json()) != stored["metadata"].value("labels", json()) ||
      merged.value("spec", json()) != stored.value("spec", json())) {
    kube::Result<json> updated = client_.update(res::kNodes, "", merged);
    if (!updated.ok()) {
      base::MutexLock lock(mu_);
      node_ = json();  // re-read next round (Conflict or otherwise)
      return updated.error();
    }
    stored = *updated;
    base::MutexLock lock(mu_);
    node_ = stored;
    ++writes_;
  }

  bool statusDue;
  {
    base::MutexLock lock(mu_);
    statusDue = std::chrono::steady_clock::now() - lastStatusWrite_ >= opts_.statusInterval;
  }
  json withStatus = stored;
  withStatus["status"] = built["status"];
  if (!statusDue && comparable(withStatus)["status"] == comparable(stored)["status"]) {
    base::MutexLock lock(mu_);
    node_ = stored;
    return kube::Status::OK();
  }
  if (nodeReadyStatus(stored) != nodeReadyStatus(withStatus)) {
    spdlog::info("event=vnode_ready_changed node={} ready={} reason={} message=\"{}\"", name_,
                 nodeReadyStatus(withStatus), readiness.reason, readiness.message);
  }
  kube::Result<json> updated = kube::updateStatus(client_, res::kNodes, "", withStatus);
  if (updated.ok()) {
    const json* before = nullptr;
    const json storedConditions = stored.value("/status/conditions"_json_pointer, json::array());
    for (const json& c : storedConditions) {
      if (c.is_object() && c.value("type", "") == "TunnelUp") before = &c;
    }
    // A flip, or a tunnel already up when the condition first appears (no flip to see).
    if (before ? before->value("status", "") != (tunnel.up ? "True" : "False") : tunnel.up) {
      tunnelEvent(*updated, tunnel);
    }
  }
  base::MutexLock lock(mu_);
  if (!updated.ok()) {
    node_ = json();
    return updated.error();
  }
  node_ = *updated;
  lastStatusWrite_ = std::chrono::steady_clock::now();
  ++writes_;
  return kube::Status::OK();
}

std::chrono::milliseconds NodeController::renewLease() { return lease_->tick(); }

kube::Status NodeController::start() {
  if (kube::Status s = validate(); !s.ok()) return s;
  base::MutexLock lock(mu_);
  if (thread_.joinable()) return kube::Status::OK();
  thread_ = std::jthread([this](std::stop_token st) { run(st); });
  return kube::Status::OK();
}

void NodeController::stop() {
  std::jthread t;
  {
    base::MutexLock lock(mu_);
    t = std::move(thread_);
  }
  if (t.joinable()) {
    t.request_stop();
    cv_.notify_all();
    t.join();
  }
}

void NodeController::run(std::stop_token stop) {
  auto nextLease = std::chrono::steady_clock::now();
  while (!stop.stop_requested()) {
    if (kube::Status s = syncNode(); !s.ok()) {
      // Another writer updated the Node first; the next sync reads it (routine).
      spdlog::log(kube::isStaleVersionConflict(s.error()) ? spdlog::level::debug
                                                          : spdlog::level::warn,
                  "event=vnode_sync_failed node={} code={} error=\"{}\"", name_,
                  kube::reasonOf(s.code()), s.error().message);
    }
    auto now = std::chrono::steady_clock::now();
    if (now >= nextLease) nextLease = now + renewLease();
    auto wake = std::min(std::chrono::steady_clock::now() + opts_.pollInterval, nextLease);
    base::UniqueLock lock(mu_);
    cv_.wait_until(lock, stop, wake, [] { return false; });
  }
}

json NodeController::lastNode() const {
  base::MutexLock lock(mu_);
  return node_;
}

uint64_t NodeController::writes() const {
  base::MutexLock lock(mu_);
  return writes_;
}

}  // namespace strait::vnode

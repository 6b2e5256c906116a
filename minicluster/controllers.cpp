#include "minicluster/controllers.h"
#include "minicluster/json_scan.h"
#include "minicluster/loop_thread.h"
#include "minicluster/watch_gather.h"

#include <spdlog/spdlog.h>

#include <atomic>
#include <chrono>
#include <map>
#include <set>
#include <thread>

namespace strait::minicluster {
namespace {

using kube::Code;

// Splits a store key "/group/resource/ns/name" into its parts.
struct KeyParts {
  std::string group, resource, ns, name;
};

std::optional<KeyParts> splitKey(const std::string& key) {
  std::vector<std::string> parts;
  size_t i = 1;
  while (parts.size() < 3) {
    size_t j = key.find('/', i);
    if (j == std::string::npos) return std::nullopt;
    parts.push_back(key.substr(i, j - i));
    i = j + 1;
  }
  KeyParts k{parts[0] == "core" ? "" : parts[0], parts[1], parts[2], key.substr(i)};
  return k;
}

class ControllersImpl : public Controllers {
 public:
  ControllersImpl(Store& store, Registry& registry, Rest& rest)
      : store_(store), registry_(registry), rest_(rest) {}
  ~ControllersImpl() override { stop(); }

  void start() override { loop_.start([this] { run(); }); }

  void stop() override { loop_.stop(); }

 private:
  // State below is touched only by the controller thread.
  struct Node {
    std::string key;
    std::vector<std::string> owners;  // owner uids
    bool deleting = false;
    std::vector<std::string> finalizers;
  };

  ResourceInfoPtr infoFor(const KeyParts& k) const {
    for (const auto& r : registry_.all()) {
      if (r->group == k.group && r->resource == k.resource) return r;
    }
    return nullptr;
  }

  void track(const ObjectPtr& o) {
    // Only the metadata is read: parsing just it spares a whole tree per write.
    auto metaText = jsonMember(o->json, "metadata");
    if (!metaText) return;
    const json m = json::parse(*metaText, nullptr, false);
    if (m.is_discarded() || !m.is_object()) return;
    std::string uid = m.value("uid", "");
    if (uid.empty()) return;
    untrackKey(o->key);
    Node n;
    n.key = o->key;
    if (m.contains("ownerReferences") && m["ownerReferences"].is_array()) {
      for (const auto& ref : m["ownerReferences"]) {
        if (ref.is_object() && ref.contains("uid")) n.owners.push_back(ref.value("uid", ""));
      }
    }
    n.deleting = m.contains("deletionTimestamp");
    if (m.contains("finalizers") && m["finalizers"].is_array()) {
      for (const auto& f : m["finalizers"]) {
        if (f.is_string()) n.finalizers.push_back(f);
      }
    }
    for (const auto& owner : n.owners) {
      dependents_[owner].insert(uid);
      // A dependent created after its owner vanished (a controller acting on a stale cache,
      // e.g. a ReplicaSet re-creating Pods while being deleted): upstream's attemptToDelete
      // on an absent owner. processOrphans() looks again after the batch, so an owner
      // listed later in the same batch is not mistaken for a gone one.
      if (!nodes_.count(owner)) orphaned_.insert(owner);
    }
    if (n.deleting) dirty_.insert(uid);
    if (k8sNamespace(o->key) && n.deleting) terminating_.insert(o->key);
    auto [it, added] = nodes_.try_emplace(uid);
    if (!added) keyToUid_.erase(std::string_view(it->second.key));  // the uid under another key
    it->second = std::move(n);
    keyToUid_[it->second.key] = it->first;
  }

  void untrackKey(const std::string& key) {
    auto it = keyToUid_.find(std::string_view(key));
    if (it == keyToUid_.end()) return;
    std::string uid(it->second);
    keyToUid_.erase(it);
    auto n = nodes_.find(uid);
    if (n != nodes_.end()) {
      for (const auto& owner : n->second.owners) {
        auto d = dependents_.find(owner);
        if (d != dependents_.end()) d->second.erase(uid);
      }
      nodes_.erase(n);
    }
    // Dependents of a vanished owner need attention.
    if (dependents_.count(uid)) orphaned_.insert(uid);
  }

  static bool k8sNamespace(const std::string& key) { return key.rfind("/core/namespaces/", 0) == 0; }

  void run() {
    auto listed = store_.list("/");
    for (const auto& o : listed.items) track(o);
    auto w = store_.watch("/", listed.rv);
    if (!w) {
      spdlog::error("event=controllers_watch_failed error=\"{}\"", w.error().message);
      return;
    }
    // Owners that vanished before we started: their uids are referenced but not present.
    for (const auto& [owner, deps] : dependents_) {
      if (!nodes_.count(owner)) orphaned_.insert(owner);
    }
    auto lastSweep = std::chrono::steady_clock::now();
    while (!loop_.stopping()) {
      auto ev = nextGathered(**w, std::chrono::milliseconds(200));
      if ((*w)->ended()) {
        spdlog::warn("event=controllers_watch_ended action=restart");
        resync(w);
        continue;
      }
      while (ev) {
        if ((*ev)->type == EventType::Deleted) {
          untrackKey((*ev)->object->key);
        } else {
          track((*ev)->object);
        }
        ev = (*w)->next(std::chrono::milliseconds(0));
      }
      processOrphans();
      processDeleting();
      auto now = std::chrono::steady_clock::now();
      if (!terminating_.empty() && now - lastSweep > std::chrono::milliseconds(500)) {
        lastSweep = now;
        processNamespaces();
      }
    }
  }

  void resync(Result<std::unique_ptr<Watch>>& w) {
    keyToUid_.clear();  // before the nodes it views
    nodes_.clear();
    dependents_.clear();
    auto listed = store_.list("/");
    for (const auto& o : listed.items) track(o);
    for (const auto& [owner, deps] : dependents_) {
      if (!nodes_.count(owner)) orphaned_.insert(owner);
    }
    w = store_.watch("/", listed.rv);
  }

  // Dependents whose owner is gone: drop the reference, delete when no owner remains.
  void processOrphans() {
    auto owners = std::move(orphaned_);
    orphaned_.clear();
    for (const auto& owner : owners) {
      if (nodes_.count(owner)) continue;
      auto it = dependents_.find(owner);
      if (it == dependents_.end()) continue;
      std::set<std::string> deps = it->second;
      dependents_.erase(it);
      for (const auto& uid : deps) {
        auto n = nodes_.find(uid);
        if (n == nodes_.end()) continue;
        bool otherOwnerAlive = false;
        for (const auto& o : n->second.owners) {
          if (o != owner && nodes_.count(o)) otherOwnerAlive = true;
        }
        if (otherOwnerAlive) {
          removeOwnerRef(n->second.key, owner);
        } else {
          deleteKey(n->second.key, "Background");
        }
      }
    }
  }

  // Owners being deleted with the orphan or foregroundDeletion finalizer.
  void processDeleting() {
    auto uids = std::move(dirty_);
    dirty_.clear();
    for (const auto& uid : uids) {
      auto n = nodes_.find(uid);
      if (n == nodes_.end() || !n->second.deleting) continue;
      const auto& f = n->second.finalizers;
      bool orphan = std::find(f.begin(), f.end(), "orphan") != f.end();
      bool foreground = std::find(f.begin(), f.end(), "foregroundDeletion") != f.end();
      if (!orphan && !foreground) continue;
      std::set<std::string> deps;
      if (auto d = dependents_.find(uid); d != dependents_.end()) deps = d->second;
      std::string ownerKey = n->second.key;
      if (orphan) {
        for (const auto& dep : deps) {
          if (auto dn = nodes_.find(dep); dn != nodes_.end()) removeOwnerRef(dn->second.key, uid);
        }
        removeFinalizer(ownerKey, "orphan");
      } else {
        bool remaining = false;
        for (const auto& dep : deps) {
          auto dn = nodes_.find(dep);
          if (dn == nodes_.end()) continue;
          remaining = true;
          if (!dn->second.deleting) deleteKey(dn->second.key, "Foreground");
        }
        if (!remaining) {
          removeFinalizer(ownerKey, "foregroundDeletion");
        } else {
          retryLater_.insert(uid);
        }
      }
    }
    for (const auto& uid : retryLater_) dirty_.insert(uid);
    retryLater_.clear();
  }

  // Empties terminating namespaces, then clears their "kubernetes" finalizer.
  void processNamespaces() {
    auto keys = terminating_;
    auto nsInfo = registry_.find("", "v1", "namespaces");
    for (const auto& key : keys) {
      auto parts = splitKey(key);
      auto cur = store_.get(key);
      if (!parts || !cur) {
        terminating_.erase(key);
        continue;
      }
      const std::string ns = parts->name;
      bool remaining = false;
      for (const auto& info : registry_.all()) {
        if (!info->namespaced) continue;
        auto items = store_.list(Rest::prefix(*info, ns)).items;
        for (const auto& o : items) {
          remaining = true;
          json obj = json::parse(o->json, nullptr, false);
          if (obj.is_discarded() || obj["metadata"].contains("deletionTimestamp")) continue;
          DeleteOptions d;
          d.propagationPolicy = "Background";
          auto r = rest_.remove(*info, ns, obj["metadata"].value("name", ""), d);
          if (!r && r.error().code != Code::NotFound) {
            spdlog::warn("event=namespace_content_delete_failed namespace={} key={} error=\"{}\"",
                         ns, o->key, r.error().message);
          }
        }
      }
      if (remaining) continue;
      auto r = rest_.mutate(*nsInfo, "", ns, "finalize", [](json& obj) {
        json& f = obj["spec"]["finalizers"];
        json kept = json::array();
        if (f.is_array()) {
          for (const auto& x : f) {
            if (x != "kubernetes") kept.push_back(x);
          }
        }
        f = kept;
        return kube::Status::OK();
      });
      if (!r) continue;
      json obj = json::parse((*r)->json);
      if (obj["spec"]["finalizers"].empty()) {
        DeleteOptions d;
        auto del = rest_.remove(*nsInfo, "", ns, d);
        if (del && del->deleted) {
          terminating_.erase(key);
          spdlog::info("event=namespace_deleted namespace={}", ns);
        }
      }
    }
  }

  void removeOwnerRef(const std::string& key, const std::string& ownerUid) {
    mutateKey(key, [&](json& obj) {
      json& refs = obj["metadata"]["ownerReferences"];
      json kept = json::array();
      if (refs.is_array()) {
        for (const auto& r : refs) {
          if (r.value("uid", "") != ownerUid) kept.push_back(r);
        }
      }
      if (kept.empty()) {
        obj["metadata"].erase("ownerReferences");
      } else {
        refs = kept;
      }
      return kube::Status::OK();
    });
  }

  void removeFinalizer(const std::string& key, const std::string& finalizer) {
    mutateKey(key, [&](json& obj) {
      json& f = obj["metadata"]["finalizers"];
      json kept = json::array();
      if (f.is_array()) {
        for (const auto& x : f) {
          if (x != finalizer) kept.push_back(x);
        }
      }
      f = kept;
      return kube::Status::OK();
    });
  }

  void mutateKey(const std::string& key, const std::function<kube::Status(json&)>& fn) {
    auto parts = splitKey(key);
    if (!parts) return;
    auto info = infoFor(*parts);
    if (!info) return;
    auto r = rest_.mutate(*info, parts->ns, parts->name, "", fn);
    if (!r && r.error().code != Code::NotFound) {
      spdlog::warn("event=gc_update_failed key={} error=\"{}\"", key, r.error().message);
    }
  }

  void deleteKey(const std::string& key, const std::string& propagation) {
    auto parts = splitKey(key);
    if (!parts) return;
    auto info = infoFor(*parts);
    if (!info) return;
    DeleteOptions d;
    d.propagationPolicy = propagation;
    auto r = rest_.remove(*info, parts->ns, parts->name, d);
    if (!r && r.error().code != Code::NotFound) {
      spdlog::warn("event=gc_delete_failed key={} error=\"{}\"", key, r.error().message);
    }
  }

  Store& store_;
  Registry& registry_;
  Rest& rest_;
  LoopThread loop_;

  std::map<std::string, Node> nodes_;                           // uid -> node
  std::map<std::string, std::set<std::string>> dependents_;     // owner uid -> dependent uids
  // key -> uid, both viewing the strings of their nodes_ entry (Node::key and the map's key):
  // an entry is erased before the node it views.
  std::map<std::string_view, std::string_view> keyToUid_;
  std::set<std::string> orphaned_;     // owner uids that vanished
  std::set<std::string> dirty_;        // uids being deleted with GC finalizers
  std::set<std::string> retryLater_;
  std::set<std::string> terminating_;  // namespace keys
};

}  // namespace

std::unique_ptr<Controllers> newControllers(Store& store, Registry& registry, Rest& rest) {
  return std::make_unique<ControllersImpl>(store, registry, rest);
}

}  // namespace strait::minicluster

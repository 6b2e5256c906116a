#pragma once
// In-process cluster for controller tests: the real store, registry, REST layer, garbage
// collector/namespace controller and the workload ControllerManager, no HTTP. Helpers
// create objects through Rest and play the kubelet's part (pod IP, Ready condition).
// Not thread-safe: use from the test thread.

#include <gtest/gtest.h>

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <thread>

#include "kube/pki.h"
#include "minicluster/controller_context.h"
#include "minicluster/controllers.h"
#include "minicluster/registry.h"
#include "minicluster/rest.h"
#include "minicluster/store.h"

namespace strait::minicluster::testing {

using nlohmann::json;
using namespace std::chrono_literals;

// Polls `cond` until true or the deadline (generous: the machine is shared).
inline bool eventually(const std::function<bool()>& cond, std::chrono::milliseconds deadline = 20s) {
  auto end = std::chrono::steady_clock::now() + deadline;
  while (std::chrono::steady_clock::now() < end) {
    if (cond()) return true;
    std::this_thread::sleep_for(10ms);
  }
  return cond();
}

class ControllerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    StoreOptions so;
    so.historyLimit = 100000;
    store_ = newStore(so);
    ASSERT_TRUE(store_->open().ok());
    registry_ = std::make_unique<Registry>();
    rest_ = std::make_unique<Rest>(*store_, *registry_);
    auto ca = kube::makeCa("test-ca");
    ASSERT_TRUE(ca.ok());
    ca_ = *ca;
    for (const char* ns : {"default", "kube-system"}) {
      ASSERT_TRUE(create("", "namespaces", "", {{"metadata", {{"name", ns}}}}).ok());
    }
    gc_ = newControllers(*store_, *registry_, *rest_);
    gc_->start();
    manager_ = std::make_unique<ControllerManager>(*store_, *registry_, *rest_, ca_);
    manager_->start();
  }
  void TearDown() override {
    manager_->stop();
    gc_->stop();
  }

  const ResourceInfo& info(const std::string& group, const std::string& resource) {
    for (const auto& r : registry_->all()) {
      if (r->group == group && r->resource == resource) return *r;
    }
    throw std::runtime_error("no resource " + resource);
  }

  kube::Result<ObjectPtr> create(const std::string& group, const std::string& resource,
                                 const std::string& ns, json obj) {
    return rest_->create(info(group, resource), ns, std::move(obj), WriteOptions{}, nullptr);
  }

  std::optional<json> get(const std::string& group, const std::string& resource,
                          const std::string& ns, const std::string& name) {
    auto r = rest_->get(info(group, resource), ns, name);
    if (!r) return std::nullopt;
    return json::parse((*r)->json);
  }

  std::vector<json> list(const std::string& group, const std::string& resource,
                         const std::string& ns, const std::string& labelSelector = "") {
    ListOptions o;
    if (!labelSelector.empty()) o.labelSelector = *kube::LabelSelector::parse(labelSelector);
    auto page = rest_->list(info(group, resource), ns, o);
    std::vector<json> out;
    if (!page) return out;
    for (const auto& it : page->items) out.push_back(json::parse(it->json));
    return out;
  }

  kube::Result<ObjectPtr> mutate(const std::string& group, const std::string& resource,
                                 const std::string& ns, const std::string& name,
                                 const std::string& sub, const std::function<void(json&)>& fn) {
    return rest_->mutate(info(group, resource), ns, name, sub, [&](json& o) {
      fn(o);
      return kube::Status::OK();
    });
  }

  // What a kubelet would write: Running, an IP, Ready=True (or False).
  void setPodReady(const std::string& ns, const std::string& name, bool ready,
                   const std::string& ip = "") {
    std::string addr = ip.empty() ? "10.0.0." + std::to_string(++ipCounter_) : ip;
    auto r = mutate("", "pods", ns, name, "status", [&](json& p) {
      p["status"]["phase"] = "Running";
      if (!p["status"].contains("podIP")) {
        p["status"]["podIP"] = addr;
        p["status"]["podIPs"] = json::array({{{"ip", addr}}});
      }
      p["status"]["conditions"] = json::array(
          {{{"type", "Ready"}, {"status", ready ? "True" : "False"},
            {"lastTransitionTime", "2026-01-01T00:00:00Z"}}});
    });
    ASSERT_TRUE(r.ok()) << r.error().message;
  }

  // Marks every pod of the namespace matching the selector ready; returns how many.
  int readyAll(const std::string& ns, const std::string& selector) {
    int n = 0;
    for (const auto& p : list("", "pods", ns, selector)) {
      if (p["metadata"].contains("deletionTimestamp")) continue;
      bool ready = false;
      for (const auto& c : p["status"].value("conditions", json::array())) {
        if (c["type"] == "Ready" && c["status"] == "True") ready = true;
      }
      if (!ready) setPodReady(ns, p["metadata"]["name"], true);
      ++n;
    }
    return n;
  }

  std::unique_ptr<Store> store_;
  std::unique_ptr<Registry> registry_;
  std::unique_ptr<Rest> rest_;
  kube::KeyPair ca_;
  std::unique_ptr<Controllers> gc_;
  std::unique_ptr<ControllerManager> manager_;
  int ipCounter_ = 0;
};

}  // namespace strait::minicluster::testing

#include "vnode/lease.h"

#include <gtest/gtest.h>

#include "kube/object.h"

namespace strait::vnode {
namespace {

using namespace std::chrono_literals;
using nlohmann::json;

// An in-memory LeaseStore with resourceVersion checks and injectable failures.
class MemoryLeaseStore : public LeaseStore {
 public:
  kube::Result<json> get(const std::string& name) override {
    ++gets;
    if (failNext) return fail();
    if (stored.is_null()) return kube::makeError(kube::Code::NotFound, "leases \"" + name + "\" not found");
    return stored;
  }
  kube::Result<json> create(const json& lease) override {
    if (failNext) return fail();
    if (!stored.is_null()) return kube::makeError(kube::Code::AlreadyExists, "exists");
    stored = lease;
    kube::setResourceVersion(stored, std::to_string(++rv));
    return stored;
  }
  kube::Result<json> update(const json& lease) override {
    ++updates;
    if (failNext) return fail();
    if (stored.is_null()) return kube::makeError(kube::Code::NotFound, "gone");
    if (kube::getResourceVersion(lease) != kube::getResourceVersion(stored)) {
      return kube::makeError(kube::Code::Conflict, "the object has been modified");
    }
    stored = lease;
    kube::setResourceVersion(stored, std::to_string(++rv));
    return stored;
  }
  kube::Error fail() {
    --failNext;
    return kube::makeError(kube::Code::Unavailable, "connection refused");
  }
  json stored;
  int rv = 0;
  int failNext = 0;
  int gets = 0;
  int updates = 0;
};

TEST(Lease, BuildLeaseLikeTheKubelet) {
  auto now = std::chrono::system_clock::time_point(1764475200s + 123456us);
  json l = buildLease("strait-cloud", "node-uid", json(), now);
  EXPECT_EQ(l["apiVersion"], "coordination.k8s.io/v1");
  EXPECT_EQ(l["metadata"]["namespace"], "kube-node-lease");
  EXPECT_EQ(l["metadata"]["name"], "strait-cloud");
  EXPECT_EQ(l["metadata"]["ownerReferences"][0]["kind"], "Node");
  EXPECT_EQ(l["metadata"]["ownerReferences"][0]["uid"], "node-uid");
  EXPECT_EQ(l["spec"]["holderIdentity"], "strait-cloud");
  EXPECT_EQ(l["spec"]["leaseDurationSeconds"], 40);
  EXPECT_EQ(l["spec"]["renewTime"], "2025-11-30T04:00:00.123456Z");
  EXPECT_EQ(l["spec"]["acquireTime"], l["spec"]["renewTime"]);
  // Taking over someone else's lease counts a transition; renewing our own keeps acquireTime.
  json other = l;
  other["spec"]["holderIdentity"] = "someone";
  other["spec"]["leaseTransitions"] = 2;
  EXPECT_EQ(buildLease("strait-cloud", "", other, now + 10s)["spec"]["leaseTransitions"], 3);
  json again = buildLease("strait-cloud", "", l, now + 10s);
  EXPECT_EQ(again["spec"]["acquireTime"], l["spec"]["acquireTime"]);
  EXPECT_FALSE(again["spec"].contains("leaseTransitions"));
}

TEST(Lease, RenewerCreatesThenRenewsEveryInterval) {
  MemoryLeaseStore store;
  auto t = std::chrono::system_clock::time_point(1764475200s);
  LeaseRenewer r(store, "strait-cloud", [&] { return t; });
  EXPECT_EQ(r.tick(), 10s);
  ASSERT_FALSE(store.stored.is_null());
  t += 10s;
  EXPECT_EQ(r.tick(), 10s);
  EXPECT_EQ(store.stored["spec"]["renewTime"], kube::rfc3339Micro(t));
  EXPECT_EQ(store.gets, 1);  // the cached copy is reused while updates succeed
  EXPECT_EQ(r.lastRenewed(), t);
}

TEST(Lease, FailuresRetrySoonerWithBackoff) {
  MemoryLeaseStore store;
  auto t = std::chrono::system_clock::time_point(1764475200s);
  LeaseRenewer r(store, "strait-cloud", [&] { return t; });
  ASSERT_EQ(r.tick(), 10s);
  store.failNext = 3;
  EXPECT_EQ(r.tick(), 200ms);
  EXPECT_EQ(r.lastError().code(), kube::Code::Unavailable);
  EXPECT_EQ(r.tick(), 400ms);
  EXPECT_EQ(r.tick(), 800ms);
  EXPECT_EQ(r.tick(), 10s);
  EXPECT_TRUE(r.lastError().ok());
}

TEST(Lease, ConflictRereadsTheLease) {
  MemoryLeaseStore store;
  auto t = std::chrono::system_clock::time_point(1764475200s);
  LeaseRenewer r(store, "strait-cloud", [&] { return t; });
  ASSERT_EQ(r.tick(), 10s);
  kube::setResourceVersion(store.stored, "999");  // someone else wrote it
  EXPECT_EQ(r.tick(), 200ms);
  EXPECT_EQ(r.lastError().code(), kube::Code::Conflict);
  EXPECT_EQ(r.tick(), 10s);
  EXPECT_EQ(store.gets, 2);
  store.stored = json();  // deleted behind our back: re-created
  EXPECT_EQ(r.tick(), 200ms);
  EXPECT_EQ(r.tick(), 10s);
  EXPECT_FALSE(store.stored.is_null());
}

}  // namespace
}  // namespace strait::vnode

// The drain behind `strait unpeer --drain` and `strait pool remove --drain`
// (peering/node_drain.h) against a real minicluster with one simulated kubelet: the Pods
// bound to a cordoned node are evicted and waited for; a Pod bound to it while the drain
// waits (as a scheduler that had not yet seen the cordon would) is evicted too, not waited
// for until the deadline; at the deadline the error names each Pod still there.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <thread>

#include "e2e/cluster_fixture.h"
#include "kube/client.h"
#include "kube/kubeconfig.h"
#include "kube/object.h"
#include "peering/node_drain.h"

namespace strait::e2e {
namespace {

using json = nlohmann::json;
using ::testing::HasSubstr;
namespace res = kube::resources;

constexpr const char* kHold = "strait.io/test-hold";

std::unique_ptr<kube::Client> newClientFor(const std::string& kubeconfig) {
  auto cfg = kube::loadKubeconfig({{kubeconfig}, ""});
  if (!cfg.ok()) return nullptr;
  auto c = kube::newClient(*cfg);
  return c.ok() ? std::move(*c) : nullptr;
}

class NodeDrainTest : public ClusterTest {
 public:
  static void SetUpTestSuite() { SetUpTestSuiteWithArgs({"--nodes", "1"}); }

 protected:
  void SetUp() override {
    ClusterTest::SetUp();
    client_ = newClientFor(cluster().kubeconfig());
    ASSERT_TRUE(client_);
    auto nodes = client_->list(res::kNodes, "");
    ASSERT_TRUE(nodes.ok()) << nodes.error().message;
    ASSERT_EQ(nodes->value("items", json::array()).size(), 1u) << nodes->dump();
    node_ = kube::getName((*nodes)["items"][0]);
    auto cordoned = peering::setUnschedulable(*client_, node_, true);
    ASSERT_TRUE(cordoned.ok()) << cordoned.error().message;
  }
  void TearDown() override {
    if (client_) (void)peering::setUnschedulable(*client_, node_, false);
    ClusterTest::TearDown();
  }

  // A Pod bound to the node directly, as the scheduler binds; `hold` adds a finalizer that
  // keeps it (terminating) until release().
  json boundPod(const std::string& name, bool hold = false) const {
    json p = {{"apiVersion", "v1"},
              {"kind", "Pod"},
              {"metadata", {{"name", name}, {"labels", {{"app", "drain"}}}}},
              {"spec",
               {{"nodeName", node_},
                {"terminationGracePeriodSeconds", 1},
                {"containers", json::array({{{"name", "c"}, {"image", "app:1"}}})}}}};
    if (hold) p["metadata"]["finalizers"] = json::array({kHold});
    return p;
  }
  static bool release(kube::Client& c, const std::string& name) {
    return c.patch(res::kPods, "default", name, kube::PatchType::Merge,
                   json{{"metadata", {{"finalizers", nullptr}}}})
        .ok();
  }
  static bool terminatingOrGone(kube::Client& c, const std::string& name) {
    auto p = c.get(res::kPods, "default", name);
    return (!p.ok() && p.code() == kube::Code::NotFound) || (p.ok() && kube::isBeingDeleted(*p));
  }

  std::unique_ptr<kube::Client> client_;
  std::string node_;
};

TEST_F(NodeDrainTest, PodBoundWhileTheDrainWaitsIsEvictedToo) {
  ASSERT_TRUE(client_->create(res::kPods, "default", boundPod("first")).ok());
  // Held until the late Pod exists, so the drain cannot be over before it is bound.
  ASSERT_TRUE(client_->create(res::kPods, "default", boundPod("held", true)).ok());

  auto side = newClientFor(cluster().kubeconfig());
  ASSERT_TRUE(side);
  std::atomic<bool> lateBound{false};
  std::thread binder([&] {
    if (!waitFor([&] { return terminatingOrGone(*side, "first"); }, 30s)) return;
    lateBound = side->create(res::kPods, "default", boundPod("late")).ok();
    release(*side, "held");
  });
  auto drained =
      peering::evictAndWait(*client_, {node_}, std::chrono::steady_clock::now() + 60s);
  binder.join();
  ASSERT_TRUE(lateBound.load());
  ASSERT_TRUE(drained.ok()) << drained.error().message;
  EXPECT_EQ(*drained, 3u);
  auto left = peering::unfinishedPodsOn(*client_, node_);
  ASSERT_TRUE(left.ok()) << left.error().message;
  EXPECT_TRUE(left->empty());
  EXPECT_TRUE(terminatingOrGone(*client_, "late"));
}

TEST_F(NodeDrainTest, AtTheDeadlineTheErrorNamesThePodsLeft) {
  ASSERT_TRUE(client_->create(res::kPods, "default", boundPod("stuck", true)).ok());
  auto drained =
      peering::evictAndWait(*client_, {node_}, std::chrono::steady_clock::now() + 1s);
  ASSERT_FALSE(drained.ok());
  EXPECT_EQ(drained.code(), kube::Code::ServerTimeout);
  EXPECT_THAT(drained.error().message, HasSubstr("default/stuck (" + node_ + ", terminating)"))
      << drained.error().message;
  EXPECT_TRUE(release(*client_, "stuck"));
  EXPECT_TRUE(waitFor(
      [&] { return client_->get(res::kPods, "default", "stuck").code() == kube::Code::NotFound; },
      30s));
}

}  // namespace
}  // namespace strait::e2e

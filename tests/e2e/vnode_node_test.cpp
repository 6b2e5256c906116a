// The virtual node's controller against a real `strait minicluster`, checked with the real
// kubectl: registration (labels, taint, addresses, capacity, conditions), the Lease in
// kube-node-lease renewed, capacity following the provider, Ready following the reflection
// stream with its grace, and taints added by others left alone.

#include <gtest/gtest.h>

#include <atomic>
#include <mutex>
#include <thread>

#include "e2e/cluster_fixture.h"
#include "kube/client.h"
#include "kube/kubeconfig.h"
#include "kube/object.h"
#include "vnode/node_controller.h"

namespace strait::e2e {
namespace {

using json = nlohmann::json;
using namespace std::chrono_literals;

vnode::ResourceMap res(const std::string& text) { return *peering::parseResourceArg(text); }

class VnodeNodeTest : public ClusterTest {
 protected:
  void SetUp() override {
    ClusterTest::SetUp();
    auto cfg = kube::loadKubeconfig({{cluster().kubeconfig()}, ""});
    ASSERT_TRUE(cfg.ok()) << cfg.error().message;
    auto c = kube::newClient(*cfg);
    ASSERT_TRUE(c.ok()) << c.error().message;
    client_ = std::move(*c);
  }

  void setProvider(const std::string& pooled) {
    std::lock_guard<std::mutex> lock(mu_);
    provider_.pooledFree = res(pooled);
    provider_.nodes = {{"p1", res(pooled)}};
    provider_.topologyLabels = {{"topology.kubernetes.io/region", "eu-west"}};
  }

  std::unique_ptr<vnode::NodeController> makeController(const std::string& providerName,
                                                        vnode::StreamHealth& health) {
    vnode::NodeControllerOptions o;
    o.node.providerName = providerName;
    o.node.providerClusterId = "3f2b8c1e-7d4a-4e55-9b1c-0a2d3e4f5a6b";
    o.node.address = "127.0.0.1";
    o.node.kubeletPort = 10250;
    o.pollInterval = 100ms;
    o.leaseInterval = 300ms;
    o.grant = [] { return res("cpu=4,memory=8Gi,pods=110"); };
    o.provider = [this] {
      std::lock_guard<std::mutex> lock(mu_);
      return provider_;
    };
    o.health = &health;
    return std::make_unique<vnode::NodeController>(*client_, o);
  }

  json nodeJson(const std::string& name) {
    CommandResult r = kubectl({"get", "node", name, "-o", "json"});
    if (r.exitCode != 0) return json();
    return json::parse(r.out, nullptr, false);
  }

  std::string readyOf(const json& node) { return vnode::nodeReadyStatus(node); }

  vnode::StreamHealth& makeHealth(std::chrono::milliseconds grace) {
    health_ = std::make_unique<vnode::StreamHealth>(grace);
    return *health_;
  }
  // Keepalives every 100 ms while `up`, as the reflection stream sends them.
  void connect(vnode::StreamHealth& health) {
    health.onConnected();
    up_ = true;
    if (!keepalive_.joinable()) {
      keepalive_ = std::jthread([this, &health](std::stop_token st) {
        while (!st.stop_requested()) {
          if (up_) health.onMessage();
          std::this_thread::sleep_for(100ms);
        }
      });
    }
  }
  void disconnect(vnode::StreamHealth& health) {
    up_ = false;
    health.onDisconnected();
  }
  void TearDown() override {
    keepalive_ = std::jthread();
    ClusterTest::TearDown();
  }

  std::unique_ptr<kube::Client> client_;
  std::mutex mu_;
  vnode::ProviderSummary provider_;
  std::atomic<bool> up_{false};
  std::unique_ptr<vnode::StreamHealth> health_;  // outlives keepalive_ (declared before it)
  std::jthread keepalive_;
};

TEST_F(VnodeNodeTest, RegistersANodeKubectlSeesReady) {
  setProvider("cpu=16,memory=64Gi,pods=440,nvidia.com/gpu=2");
  vnode::StreamHealth& health = makeHealth(10s);
  connect(health);
  auto ctl = makeController("cloud", health);
  ASSERT_TRUE(ctl->start().ok());
  json node;
  ASSERT_TRUE(waitFor([&] {
    node = nodeJson("strait-cloud");
    return readyOf(node) == "True";
  }, 30s)) << node.dump();
  const json& labels = node["metadata"]["labels"];
  EXPECT_EQ(labels["type"], "virtual-kubelet");
  EXPECT_EQ(labels["strait.io/remote-cluster-id"], "3f2b8c1e-7d4a-4e55-9b1c-0a2d3e4f5a6b");
  EXPECT_EQ(labels["kubernetes.io/hostname"], "strait-cloud");
  EXPECT_EQ(labels["topology.kubernetes.io/region"], "eu-west");
  EXPECT_EQ(node["spec"]["taints"][0]["key"], "virtual-node.strait.io/not-allowed");
  EXPECT_EQ(node["spec"]["taints"][0]["effect"], "NoExecute");
  EXPECT_EQ(node["status"]["allocatable"]["cpu"], "4");       // the grant
  EXPECT_EQ(node["status"]["allocatable"]["memory"], "8Gi");  // the grant
  EXPECT_EQ(node["status"]["daemonEndpoints"]["kubeletEndpoint"]["Port"], 10250);
  EXPECT_EQ(node["status"]["addresses"][0]["address"], "127.0.0.1");

  // The wide table shows it like any node.
  CommandResult wide = kubectl({"get", "nodes", "-o", "wide"});
  ASSERT_EQ(wide.exitCode, 0) << wide.describe();
  EXPECT_NE(wide.out.find("strait-cloud"), std::string::npos) << wide.out;
  EXPECT_NE(wide.out.find("Ready"), std::string::npos) << wide.out;

  // The Lease exists, is held by the node, and its renewTime advances.
  std::string firstRenew;
  ASSERT_TRUE(waitFor([&] {
    CommandResult r = kubectl({"get", "lease", "-n", "kube-node-lease", "strait-cloud", "-o",
                               "jsonpath={.spec.holderIdentity} {.spec.renewTime} "
                               "{.metadata.ownerReferences[0].kind}"});
    if (r.exitCode != 0) return false;
    if (r.out.rfind("strait-cloud ", 0) != 0 || r.out.find(" Node") == std::string::npos) {
      return false;
    }
    if (firstRenew.empty()) firstRenew = r.out;
    return r.out != firstRenew;
  }, 30s)) << firstRenew;
  ctl->stop();
}

TEST_F(VnodeNodeTest, CapacityFollowsTheProviderAndReadyFollowsTheStream) {
  setProvider("cpu=16,memory=64Gi,pods=440");
  vnode::StreamHealth& health = makeHealth(1500ms);
  connect(health);
  auto ctl = makeController("edge", health);
  ASSERT_TRUE(ctl->start().ok());
  ASSERT_TRUE(waitFor([&] { return readyOf(nodeJson("strait-edge")) == "True"; }, 30s));

  // A provider node goes away: pooled free drops below the grant.
  setProvider("cpu=2500m,memory=4Gi,pods=110");
  auto changed = std::chrono::steady_clock::now();
  json node;
  ASSERT_TRUE(waitFor([&] {
    auto n = client_->get(kube::resources::kNodes, "", "strait-edge");
    if (!n.ok()) return false;
    node = *n;
    return node["status"]["allocatable"]["cpu"] == "2500m";
  }, 30s)) << node.dump();
  auto followMs = std::chrono::duration_cast<std::chrono::milliseconds>(
                      std::chrono::steady_clock::now() - changed).count();
  EXPECT_LT(followMs, 2000) << "capacity must follow the provider within 2 s";
  RecordProperty("capacity_follow_ms", std::to_string(followMs));
  EXPECT_EQ(node["status"]["allocatable"]["memory"], "4Gi");

  // Someone else taints the node: the controller keeps that taint.
  CommandResult t = kubectl({"taint", "node", "strait-edge", "example.com/maintenance=yes:NoSchedule"});
  ASSERT_EQ(t.exitCode, 0) << t.describe();

  // The stream goes down: Ready stays True during the grace, then turns False.
  disconnect(health);
  auto down = std::chrono::steady_clock::now();
  ASSERT_TRUE(waitFor([&] {
    node = nodeJson("strait-edge");
    return readyOf(node) == "False";
  }, 30s)) << node.dump();
  auto notReadyMs = std::chrono::duration_cast<std::chrono::milliseconds>(
                        std::chrono::steady_clock::now() - down).count();
  EXPECT_GE(notReadyMs, 1000) << "NotReady before the grace";
  bool found = false;
  for (const json& c : node["status"]["conditions"]) {
    if (c["type"] == "Ready") {
      EXPECT_EQ(c["reason"], "ReflectionStreamDown");
      found = true;
    }
  }
  EXPECT_TRUE(found);
  bool othersTaint = false;
  for (const json& taint : node["spec"]["taints"]) {
    if (taint["key"] == "example.com/maintenance") othersTaint = true;
  }
  EXPECT_TRUE(othersTaint) << node["spec"].dump();

  // Reconnected: Ready again.
  connect(health);
  ASSERT_TRUE(waitFor([&] { return readyOf(nodeJson("strait-edge")) == "True"; }, 30s));
  ctl->stop();
}

TEST_F(VnodeNodeTest, BadOptionsAreRefusedByName) {
  vnode::StreamHealth& health = makeHealth(1s);
  auto ctl = makeController("Not_Valid", health);
  kube::Status s = ctl->start();
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().field, "providerName");
}

}  // namespace
}  // namespace strait::e2e

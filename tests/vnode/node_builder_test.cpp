#include "vnode/node_builder.h"

#include <gtest/gtest.h>

namespace strait::vnode {
namespace {

using namespace std::chrono_literals;
using nlohmann::json;

ResourceMap res(const std::string& text) { return *peering::parseResourceArg(text); }

VirtualNodeConfig config() {
  VirtualNodeConfig c;
  c.providerName = "cloud";
  c.providerClusterId = "3f2b8c1e-7d4a-4e55-9b1c-0a2d3e4f5a6b";
  c.address = "10.0.0.9";
  c.kubeletPort = 10250;
  return c;
}

Readiness ready() { return {true, "KubeletReady", "ok"}; }

const json* cond(const json& node, const std::string& type) {
  for (const json& c : node["status"]["conditions"]) {
    if (c["type"] == type) return &c;
  }
  return nullptr;
}

TEST(NodeBuilder, LabelsTaintAddressesAndCapacity) {
  ProviderSummary p;
  p.topologyLabels["topology.kubernetes.io/region"] = "eu-west";
  auto now = std::chrono::system_clock::time_point(1764475200s);
  json n = buildNode(config(), res("cpu=4,memory=8Gi,pods=110,nvidia.com/gpu=1"), p, ready(),
                     json(), now);
  EXPECT_EQ(n["metadata"]["name"], "strait-cloud");
  const json& l = n["metadata"]["labels"];
  EXPECT_EQ(l["type"], "virtual-kubelet");
  EXPECT_EQ(l["strait.io/remote-cluster-id"], config().providerClusterId);
  EXPECT_EQ(l["kubernetes.io/hostname"], "strait-cloud");
  EXPECT_EQ(l["kubernetes.io/os"], "linux");
  EXPECT_EQ(l["kubernetes.io/arch"], "amd64");
  EXPECT_EQ(l["topology.kubernetes.io/region"], "eu-west");
  EXPECT_EQ(n["spec"]["taints"],
            json::parse(R"([{"key":"virtual-node.strait.io/not-allowed","value":"true","effect":"NoExecute"}])"));
  EXPECT_EQ(n["status"]["capacity"]["cpu"], "4");
  EXPECT_EQ(n["status"]["allocatable"]["memory"], "8Gi");
  EXPECT_EQ(n["status"]["allocatable"]["nvidia.com/gpu"], "1");
  EXPECT_EQ(n["status"]["addresses"][0], json({{"type", "InternalIP"}, {"address", "10.0.0.9"}}));
  EXPECT_EQ(n["status"]["addresses"][1]["type"], "Hostname");
  EXPECT_EQ(n["status"]["daemonEndpoints"]["kubeletEndpoint"]["Port"], 10250);
  EXPECT_EQ(n["status"]["nodeInfo"]["kubeletVersion"], "v1.32.0-strait");
  for (const char* t : {"Ready", "MemoryPressure", "DiskPressure", "PIDPressure", "NetworkUnavailable"}) {
    ASSERT_NE(cond(n, t), nullptr) << t;
    EXPECT_EQ((*cond(n, t))["lastHeartbeatTime"], "2025-11-30T04:00:00Z");
  }
  EXPECT_EQ((*cond(n, "Ready"))["status"], "True");
  // No peering sets up a tunnel yet: pod traffic does not cross, as TunnelUp=False says.
  EXPECT_EQ((*cond(n, "NetworkUnavailable"))["status"], "True");
  EXPECT_EQ((*cond(n, "NetworkUnavailable"))["reason"], "TunnelNotConfigured");
  EXPECT_EQ(nodeReadyStatus(n), "True");
}

TEST(NodeBuilder, TaintIsConfigurable) {
  VirtualNodeConfig c = config();
  c.taintEffect = "";
  json n = buildNode(c, res("cpu=1,memory=1Gi"), {}, ready(), json(), {});
  EXPECT_FALSE(n["spec"].contains("taints"));
  c.taintEffect = "NoSchedule";
  n = buildNode(c, res("cpu=1,memory=1Gi"), {}, ready(), json(), {});
  EXPECT_EQ(n["spec"]["taints"][0]["effect"], "NoSchedule");
}

TEST(NodeBuilder, TransitionTimeKeptWhileStatusUnchanged) {
  auto t0 = std::chrono::system_clock::time_point(1764475200s);
  json n0 = buildNode(config(), res("cpu=1,memory=1Gi"), {}, ready(), json(), t0);
  n0["metadata"]["resourceVersion"] = "7";
  n0["metadata"]["uid"] = "node-uid";
  json n1 = buildNode(config(), res("cpu=1,memory=1Gi"), {}, ready(), n0, t0 + 10s);
  EXPECT_EQ((*cond(n1, "Ready"))["lastTransitionTime"], "2025-11-30T04:00:00Z");
  EXPECT_EQ((*cond(n1, "Ready"))["lastHeartbeatTime"], "2025-11-30T04:00:10Z");
  EXPECT_EQ(n1["metadata"]["resourceVersion"], "7");
  EXPECT_EQ(n1["metadata"]["uid"], "node-uid");
  Readiness down{false, "ReflectionStreamDown", "down"};
  json n2 = buildNode(config(), res("cpu=1,memory=1Gi"), {}, down, n1, t0 + 20s);
  EXPECT_EQ((*cond(n2, "Ready"))["status"], "False");
  EXPECT_EQ((*cond(n2, "Ready"))["reason"], "ReflectionStreamDown");
  EXPECT_EQ((*cond(n2, "Ready"))["lastTransitionTime"], "2025-11-30T04:00:20Z");
}

TEST(NodeBuilder, NoCpuOrMemoryIsNotReady) {
  json n = buildNode(config(), res("cpu=0,memory=1Gi,pods=10"), {}, ready(), json(), {});
  EXPECT_EQ(nodeReadyStatus(n), "False");
  EXPECT_EQ((*cond(n, "Ready"))["reason"], "NoCapacity");
}

TEST(NodeBuilder, ConfigValidationNamesTheField) {
  EXPECT_TRUE(validateConfig(config()).ok());
  VirtualNodeConfig c = config();
  c.providerName = "Bad_Name";
  EXPECT_EQ(validateConfig(c).error().field, "providerName");
  c = config();
  c.kubeletPort = 70000;
  EXPECT_EQ(validateConfig(c).error().field, "kubeletPort");
  c = config();
  c.taintEffect = "Sometimes";
  EXPECT_EQ(validateConfig(c).error().field, "taintEffect");
  c = config();
  c.address = "";
  EXPECT_EQ(validateConfig(c).error().field, "address");
  c = config();
  c.extraLabels["bad key!"] = "v";
  EXPECT_EQ(validateConfig(c).error().field, "extraLabels");
}

}  // namespace
}  // namespace strait::vnode

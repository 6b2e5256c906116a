// The virtual node's TunnelUp condition (and NetworkUnavailable, its opposite) from the
// peering's tunnel condition (vnode/node_builder.h); Ready does not follow it.
#include <gtest/gtest.h>

#include "vnode/node_builder.h"

namespace strait::vnode {
namespace {

using namespace std::chrono_literals;
using nlohmann::json;

const json* cond(const json& node, const std::string& type) {
  for (const json& c : node["status"]["conditions"]) {
    if (c["type"] == type) return &c;
  }
  return nullptr;
}

json build(const peering::TunnelCondition& tunnel, const json& previous,
           std::chrono::system_clock::time_point now) {
  VirtualNodeConfig c;
  c.providerName = "cloud";
  c.providerClusterId = "3f2b8c1e-7d4a-4e55-9b1c-0a2d3e4f5a6b";
  c.address = "10.0.0.9";
  return buildNode(c, *peering::parseResourceArg("cpu=4,memory=8Gi,pods=110"), ProviderSummary(),
                   Readiness{true, "KubeletReady", "ok"}, previous, now, tunnel);
}

TEST(NodeTunnelCondition, TunnelUpAndNetworkUnavailableFollowThePeeringsTunnel) {
  auto t0 = std::chrono::system_clock::time_point(1764475200s);
  json down = build({false, "TunnelNotConfigured", "this cluster (home) runs no gateway"}, json(),
                    t0);
  ASSERT_NE(cond(down, "TunnelUp"), nullptr);
  EXPECT_EQ((*cond(down, "TunnelUp"))["status"], "False");
  EXPECT_EQ((*cond(down, "TunnelUp"))["reason"], "TunnelNotConfigured");
  EXPECT_EQ((*cond(down, "TunnelUp"))["message"], "this cluster (home) runs no gateway");
  EXPECT_EQ((*cond(down, "NetworkUnavailable"))["status"], "True");
  EXPECT_EQ((*cond(down, "NetworkUnavailable"))["reason"], "TunnelNotConfigured");
  EXPECT_EQ((*cond(down, "Ready"))["status"], "True");

  json up = build({true, "TunnelEstablished", "a handshake younger than 3 minutes"}, down,
                  t0 + 10s);
  EXPECT_EQ((*cond(up, "TunnelUp"))["status"], "True");
  EXPECT_EQ((*cond(up, "TunnelUp"))["reason"], "TunnelEstablished");
  EXPECT_EQ((*cond(up, "TunnelUp"))["lastTransitionTime"], "2025-11-30T04:00:10Z");
  EXPECT_EQ((*cond(up, "NetworkUnavailable"))["status"], "False");
  EXPECT_EQ((*cond(up, "NetworkUnavailable"))["reason"], "TunnelUp");
  EXPECT_EQ((*cond(up, "Ready"))["status"], "True");

  // Still up later: the transition time stays; down again: it moves, Ready unchanged.
  json still = build({true, "TunnelEstablished", "a handshake younger than 3 minutes"}, up,
                     t0 + 20s);
  EXPECT_EQ((*cond(still, "TunnelUp"))["lastTransitionTime"], "2025-11-30T04:00:10Z");
  json lost = build({false, "HandshakeMissing", "no WireGuard handshake"}, still, t0 + 30s);
  EXPECT_EQ((*cond(lost, "TunnelUp"))["status"], "False");
  EXPECT_EQ((*cond(lost, "TunnelUp"))["reason"], "HandshakeMissing");
  EXPECT_EQ((*cond(lost, "TunnelUp"))["lastTransitionTime"], "2025-11-30T04:00:30Z");
  EXPECT_EQ((*cond(lost, "Ready"))["status"], "True");
}

}  // namespace
}  // namespace strait::vnode

// The tunnel's status as users see it, between two real miniclusters (sim runtime) and two
// real `strait agent` processes: the ForeignCluster's TunnelUp condition and status.network,
// `strait status` (table and -o json), and the virtual node's own TunnelUp condition. First
// with no gateway on either side (the default), then with a real gateway (a TUN device in a
// network namespace of its own) on the provider only; and the agent's refusals of bad
// tunnel flags.
#include <gtest/gtest.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include "e2e/peering_fixture.h"

namespace strait::e2e {
namespace {

using json = nlohmann::json;

class NetworkStatusTest : public TwoClusterTest {
 protected:
  CommandResult peer() {
    return strait({"peer", "--kubeconfig", consumer().kubeconfig(), "--remote-kubeconfig",
                   provider().kubeconfig(), "--cpu", "2", "--memory", "4Gi", "--pods", "20"});
  }
  CommandResult unpeer() {
    return strait({"unpeer", "--kubeconfig", consumer().kubeconfig(), "--remote-kubeconfig",
                   provider().kubeconfig()});
  }
  // The row's tunnel message once it contains `text` (30 s), else the last one.
  std::string waitForTunnelMessage(const Minicluster& c, const std::string& text) {
    std::string last;
    waitFor(
        [&] {
          json row = onlyRow(c);
          last = row.is_object() ? row.value("tunnelMessage", "") : "";
          return last.find(text) != std::string::npos;
        },
        std::chrono::seconds(30));
    return last;
  }
  // "<status> <reason>|<message>" of condition `type` of the only virtual node.
  std::string virtualNodeCondition(const std::string& type) {
    CommandResult r = kubectlOn(
        consumer(), {"get", "nodes", "-l", "type=virtual-kubelet", "-o",
                     "jsonpath={.items[0].status.conditions[?(@.type==\"" + type +
                         "\")].status} {.items[0].status.conditions[?(@.type==\"" + type +
                         "\")].reason}|{.items[0].status.conditions[?(@.type==\"" + type +
                         "\")].message}"});
    return r.exitCode == 0 ? r.out : r.describe();
  }
};

TEST_F(NetworkStatusTest, WithoutGatewaysBothSidesSayTunnelNotConfiguredAndWhy) {
  CommandResult p = peer();
  ASSERT_EQ(p.exitCode, 0) << p.describe();
  const std::string neither = "neither cluster runs a gateway (strait agent --gateway)";
  std::string cm = waitForTunnelMessage(consumer(), neither);
  EXPECT_NE(cm.find(neither), std::string::npos) << cm;
  EXPECT_NE(cm.find("this cluster (consumer) nor the provider cluster provider"),
            std::string::npos)
      << cm;
  std::string pm = waitForTunnelMessage(provider(), neither);
  EXPECT_NE(pm.find("this cluster (provider) nor the consumer cluster"), std::string::npos)
      << pm;

  json row = onlyRow(consumer());
  EXPECT_EQ(row.value("tunnel", ""), "False");
  EXPECT_EQ(row.value("tunnelReason", ""), "TunnelNotConfigured");
  for (const char* k : {"remoteCIDR", "remoteCIDRSeenHere", "remotePublicKey",
                        "latestHandshakeTime", "rxBytes", "txBytes", "tunnelLatencyMs"}) {
    EXPECT_TRUE(row.contains(k)) << k;
    EXPECT_TRUE(row[k].is_null()) << k << ": " << row[k].dump();
  }
  // The table has the tunnel's columns.
  CommandResult table = strait({"status", "--kubeconfig", consumer().kubeconfig()});
  ASSERT_EQ(table.exitCode, 0) << table.describe();
  for (const char* col : {"TUNNEL", "TUNNEL-REASON", "TUNNEL-RTT", "REMOTE-CIDR", "HANDSHAKE",
                          "RX/TX", "TunnelNotConfigured"}) {
    EXPECT_NE(table.out.find(col), std::string::npos) << col << "\n" << table.out;
  }
  // The ForeignCluster as kubectl shows it.
  CommandResult fc = kubectlOn(
      consumer(), {"get", "foreignclusters", "-o",
                   "jsonpath={.items[0].status.conditions[?(@.type==\"TunnelUp\")].reason}"});
  EXPECT_EQ(fc.out, "TunnelNotConfigured") << fc.describe();
  // The virtual node: its own TunnelUp condition, and NetworkUnavailable with it.
  EXPECT_TRUE(waitFor(
      [&] { return virtualNodeCondition("TunnelUp").rfind("False TunnelNotConfigured|", 0) == 0; },
      std::chrono::seconds(30)))
      << virtualNodeCondition("TunnelUp");
  EXPECT_NE(virtualNodeCondition("TunnelUp").find(neither), std::string::npos);
  EXPECT_EQ(virtualNodeCondition("NetworkUnavailable").rfind("True TunnelNotConfigured|", 0), 0u)
      << virtualNodeCondition("NetworkUnavailable");
  // Ready is the reflection stream's, never the tunnel's.
  EXPECT_EQ(virtualNodeCondition("Ready").find("Tunnel"), std::string::npos)
      << virtualNodeCondition("Ready");
  CommandResult u = unpeer();
  EXPECT_EQ(u.exitCode, 0) << u.describe();
  expectNothingLeft();
}

TEST_F(NetworkStatusTest, AGatewayOnTheProviderOnlyNamesTheConsumerAsTheSideWithoutOne) {
  // A network namespace of its own for the provider's gateway: the agent creates its TUN
  // device there and nothing on the host changes.
  const std::string netns = "strait-netctl-" + std::to_string(getpid());
  CommandResult add = runCommand({"ip", "netns", "add", netns}, {}, std::chrono::seconds(10));
  ASSERT_EQ(add.exitCode, 0) << add.describe();
  struct Cleanup {
    std::string name;
    ~Cleanup() { (void)runCommand({"ip", "netns", "del", name}, {}, std::chrono::seconds(10)); }
  } cleanup{netns};
  // The probe address lives in the gateway's namespace (a node's pod bridge address on a
  // real cluster).
  for (std::vector<std::string> cmd :
       {std::vector<std::string>{"ip", "-n", netns, "link", "set", "lo", "up"},
        std::vector<std::string>{"ip", "-n", netns, "addr", "add", "10.244.0.1/32", "dev", "lo"}}) {
    CommandResult r = runCommand(cmd, {}, std::chrono::seconds(10));
    ASSERT_EQ(r.exitCode, 0) << r.describe();
  }
  TempDir uapi("uapi");
  providerAgent().stop();
  std::vector<std::string> args = agentArgs();
  args.insert(args.end(), {"--gateway", "--gateway-netns", "/run/netns/" + netns,
                           "--gateway-endpoint", "127.0.0.1:51999", "--gateway-port", "0",
                           "--gateway-uapi-dir", uapi.path(), "--pod-cidr", "10.244.0.0/16",
                           "--gateway-probe-address", "10.244.0.1"});
  ASSERT_EQ(providerAgent().start(provider().kubeconfig(), "provider", args), "");
  struct Restore {
    ~Restore() {
      providerAgent().stop();
      (void)providerAgent().start(provider().kubeconfig(), "provider", agentArgs());
    }
  } restore;
  // The key Secret is created once and the TUN device exists in that namespace.
  CommandResult key = kubectlOn(provider(), {"get", "secret", "-n", "strait-system",
                                             "strait-gateway-key", "-o", "name"});
  EXPECT_EQ(key.exitCode, 0) << key.describe();
  CommandResult link = runCommand({"ip", "-n", netns, "link", "show", "strait0"}, {},
                           std::chrono::seconds(10));
  EXPECT_EQ(link.exitCode, 0) << link.describe();

  CommandResult p = peer();
  ASSERT_EQ(p.exitCode, 0) << p.describe();
  std::string cm = waitForTunnelMessage(consumer(), "this cluster (consumer) runs no gateway");
  EXPECT_NE(cm.find("this cluster (consumer) runs no gateway"), std::string::npos) << cm;
  std::string pm = waitForTunnelMessage(provider(), "the consumer cluster");
  EXPECT_NE(pm.find("runs no gateway"), std::string::npos) << pm;
  EXPECT_EQ(pm.find("provider"), std::string::npos) << pm;
  json prow = onlyRow(provider());
  EXPECT_EQ(prow.value("tunnelReason", ""), "TunnelNotConfigured");
  EXPECT_EQ(prow.value("localCIDR", json()), json("10.244.0.0/16"));
  CommandResult u = unpeer();
  EXPECT_EQ(u.exitCode, 0) << u.describe();
  expectNothingLeft();
}

TEST_F(NetworkStatusTest, BadTunnelFlagsAreRefusedNamingTheFlag) {
  struct Case {
    std::vector<std::string> args;
    std::string expected;
  };
  const std::vector<Case> cases = {
      {{"--pod-cidr", "10.244.1.0/16"}, "host bits"},
      {{"--remap-pool", "10.240.0.0"}, "not a CIDR"},
      {{"--service-cidr", "fd00::/108"}, "not IPv4"},
      {{"--gateway-port", "70000"}, "--gateway-port"},
      {{"--gateway-interface", "a-name-longer-than-15"}, "not an interface name"},
  };
  for (const Case& c : cases) {
    std::vector<std::string> args = {"agent", "--kubeconfig", consumer().kubeconfig(),
                                     "--cluster-name", "x"};
    args.insert(args.end(), c.args.begin(), c.args.end());
    CommandResult r = strait(args, std::chrono::seconds(20));
    EXPECT_NE(r.exitCode, 0) << r.describe();
    EXPECT_NE((r.out + r.err).find(c.expected), std::string::npos)
        << c.expected << "\n" << r.describe();
  }
}

}  // namespace
}  // namespace strait::e2e

// The tunnel's status as users see it, between two real miniclusters (sim runtime) and two
// real `strait agent` processes: the ForeignCluster's TunnelUp condition and status.network,
// `strait status` (table and -o json), and the virtual node's own TunnelUp condition. First
// with no gateway on either side (the default), then with a real gateway (a TUN device in a
// network namespace of its own) on the provider only; and the agent's refusals of bad
// tunnel flags.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <iostream>

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

TEST_F(NetworkStatusTest, GatewaysOnBothSidesBringTheTunnelUpAndReportItsFigures) {
  // Each agent's gateway in a namespace of its own; the two namespaces joined by a veth pair
  // (the underlay), each with the same pod address plan (10.244.0.1 as the probe address).
  const std::string tag = std::to_string(getpid());
  const std::string hns = "strait-nch-" + tag, cns = "strait-ncc-" + tag;
  const std::string hif = "snh" + tag, cif = "snc" + tag;
  struct Cleanup {
    std::vector<std::string> names;
    ~Cleanup() {
      for (const std::string& n : names) {
        (void)runCommand({"ip", "netns", "del", n}, {}, std::chrono::seconds(10));
      }
    }
  } cleanup{{hns, cns}};
  for (std::vector<std::string> cmd : std::vector<std::vector<std::string>>{
           {"ip", "netns", "add", hns},
           {"ip", "netns", "add", cns},
           {"ip", "link", "add", hif, "netns", hns, "type", "veth", "peer", "name", cif, "netns",
            cns},
           {"ip", "-n", hns, "addr", "add", "192.168.213.1/24", "dev", hif},
           {"ip", "-n", cns, "addr", "add", "192.168.213.2/24", "dev", cif},
           {"ip", "-n", hns, "link", "set", hif, "up"},
           {"ip", "-n", cns, "link", "set", cif, "up"},
           {"ip", "-n", hns, "link", "set", "lo", "up"},
           {"ip", "-n", cns, "link", "set", "lo", "up"},
           {"ip", "-n", hns, "addr", "add", "10.244.0.1/32", "dev", "lo"},
           {"ip", "-n", cns, "addr", "add", "10.244.0.1/32", "dev", "lo"}}) {
    CommandResult r = runCommand(cmd, {}, std::chrono::seconds(10));
    ASSERT_EQ(r.exitCode, 0) << r.describe();
  }
  TempDir uapi("uapi");
  auto gatewayArgs = [&](const std::string& ns, const std::string& address) {
    std::vector<std::string> args = agentArgs();
    args.insert(args.end(), {"--gateway", "--gateway-netns", "/run/netns/" + ns,
                             "--gateway-endpoint", address + ":51820", "--gateway-port", "51820",
                             "--gateway-uapi-dir", uapi.path() + "/" + ns, "--pod-cidr",
                             "10.244.0.0/16", "--gateway-probe-address", "10.244.0.1"});
    return args;
  };
  std::filesystem::create_directories(uapi.path() + "/" + hns);
  std::filesystem::create_directories(uapi.path() + "/" + cns);
  consumerAgent().stop();
  providerAgent().stop();
  // The two agents start side by side (neither needs the other until the peering).
  struct Restore {
    ~Restore() {
      consumerAgent().stop();
      providerAgent().stop();
      (void)inParallel({[] {
                          return providerAgent().start(provider().kubeconfig(), "provider",
                                                       agentArgs());
                        },
                        [] {
                          return consumerAgent().start(consumer().kubeconfig(), "consumer",
                                                       agentArgs());
                        }});
    }
  } restore;
  const std::vector<std::string> providerArgs = gatewayArgs(cns, "192.168.213.2");
  const std::vector<std::string> consumerArgs = gatewayArgs(hns, "192.168.213.1");
  ASSERT_EQ(inParallel({[&] {
                          std::string e = providerAgent().start(provider().kubeconfig(),
                                                                "provider", providerArgs);
                          return e.empty() ? e : "provider agent: " + e;
                        },
                        [&] {
                          std::string e = consumerAgent().start(consumer().kubeconfig(),
                                                                "consumer", consumerArgs);
                          return e.empty() ? e : "consumer agent: " + e;
                        }}),
            "");
  CommandResult p = peer();
  ASSERT_EQ(p.exitCode, 0) << p.describe();

  auto tunnelIs = [&](const Minicluster& c, const std::string& want) {
    json row = onlyRow(c);
    return row.is_object() && row.value("tunnel", "") == want;
  };
  ASSERT_TRUE(waitFor([&] { return tunnelIs(consumer(), "True"); }, std::chrono::seconds(30)))
      << onlyRow(consumer()).dump(2) << "\n" << consumerAgent().logs();
  EXPECT_TRUE(waitFor([&] { return tunnelIs(provider(), "True"); }, std::chrono::seconds(30)))
      << onlyRow(provider()).dump(2);
  // Figures appear with the next status writes.
  ASSERT_TRUE(waitFor(
      [&] {
        json r = onlyRow(consumer());
        return r.is_object() && r["tunnelLatencyMs"].is_number() && r["rxBytes"].is_number() &&
               r["rxBytes"].get<double>() > 0;
      },
      std::chrono::seconds(15)))
      << onlyRow(consumer()).dump(2);
  json row = onlyRow(consumer());
  EXPECT_EQ(row.value("tunnelReason", ""), "TunnelEstablished");
  EXPECT_EQ(row.value("remoteCIDR", json()), json("10.244.0.0/16"));
  EXPECT_EQ(row.value("remoteCIDRSeenHere", json()), json("10.240.0.0/16"));
  EXPECT_EQ(row.value("remapped", json()), json(true));
  EXPECT_EQ(row.value("remoteEndpoint", json()), json("192.168.213.2:51820"));
  EXPECT_TRUE(row["latestHandshakeTime"].is_string()) << row.dump(2);
  EXPECT_TRUE(row["txBytes"].get<double>() > 0);
  CommandResult table = strait({"status", "--kubeconfig", consumer().kubeconfig()});
  EXPECT_NE(table.out.find("10.240.0.0/16=10.244.0.0/16"), std::string::npos) << table.out;
  EXPECT_NE(table.out.find("TunnelEstablished"), std::string::npos) << table.out;
  // The gateway routes the remote's view through its TUN in its namespace.
  CommandResult route = runCommand({"ip", "-n", hns, "route", "show", "10.240.0.0/16"}, {},
                                   std::chrono::seconds(10));
  EXPECT_NE(route.out.find("strait0"), std::string::npos) << route.describe();
  // The virtual node: TunnelUp True, NetworkUnavailable False, an Event TunnelUp.
  EXPECT_TRUE(waitFor([&] { return virtualNodeCondition("TunnelUp").rfind("True ", 0) == 0; },
                      std::chrono::seconds(15)))
      << virtualNodeCondition("TunnelUp");
  EXPECT_EQ(virtualNodeCondition("NetworkUnavailable").rfind("False TunnelUp|", 0), 0u)
      << virtualNodeCondition("NetworkUnavailable");
  auto nodeEvents = [&](const std::string& reason) {
    CommandResult r = kubectlOn(consumer(), {"get", "events", "-n", "default", "--field-selector",
                                             "reason=" + reason, "-o",
                                             "jsonpath={.items[*].involvedObject.kind}"});
    return r.out;
  };
  EXPECT_TRUE(waitFor([&] { return nodeEvents("TunnelUp").find("Node") != std::string::npos; },
                      std::chrono::seconds(15)));

  // Cut the underlay: TunnelUp False within 10 s on the consumer, an Event TunnelDown; heal.
  ASSERT_EQ(runCommand({"ip", "-n", cns, "link", "set", cif, "down"}, {}, std::chrono::seconds(10))
                .exitCode,
            0);
  auto cut = std::chrono::steady_clock::now();
  EXPECT_TRUE(waitFor([&] { return tunnelIs(consumer(), "False"); }, std::chrono::seconds(10)))
      << onlyRow(consumer()).dump(2);
  const double downAfter =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - cut).count();
  std::cout << "tunnel down after cut: " << downAfter << " s\n";
  EXPECT_EQ(onlyRow(consumer()).value("tunnelReason", ""), "ProbeUnanswered");
  EXPECT_TRUE(waitFor([&] { return nodeEvents("TunnelDown").find("Node") != std::string::npos; },
                      std::chrono::seconds(15)));
  ASSERT_EQ(runCommand({"ip", "-n", cns, "link", "set", cif, "up"}, {}, std::chrono::seconds(10))
                .exitCode,
            0);
  EXPECT_TRUE(waitFor([&] { return tunnelIs(consumer(), "True"); }, std::chrono::seconds(30)))
      << onlyRow(consumer()).dump(2);

  // kill -9 of the consumer agent: the restarted one brings the tunnel back with the same key
  // (from its Secret) and the same remap (from the ForeignCluster).
  const json keyBefore = onlyRow(provider()).value("remotePublicKey", json());
  auto ups = [&] {
    const std::string logs = consumerAgent().logs();
    size_t n = 0;
    for (size_t at = logs.find("event=tunnel_up "); at != std::string::npos;
         at = logs.find("event=tunnel_up ", at + 1)) {
      ++n;
    }
    return n;
  };
  const size_t upsBefore = ups();
  consumerAgent().kill();
  auto restarted = std::chrono::steady_clock::now();
  ASSERT_EQ(consumerAgent().restart(), "");
  EXPECT_TRUE(waitFor([&] { return ups() > upsBefore; }, std::chrono::seconds(30)))
      << consumerAgent().logs();
  std::cout << "tunnel up again after the agent's restart: "
            << std::chrono::duration<double>(std::chrono::steady_clock::now() - restarted).count()
            << " s (agent start included)\n";
  EXPECT_EQ(onlyRow(provider()).value("remotePublicKey", json()), keyBefore);
  EXPECT_EQ(onlyRow(consumer()).value("remoteCIDRSeenHere", json()), json("10.240.0.0/16"));

  // Unpeer: no peer, no route left in either namespace.
  CommandResult u = unpeer();
  EXPECT_EQ(u.exitCode, 0) << u.describe();
  expectNothingLeft();
  for (const std::string& ns : {hns, cns}) {
    EXPECT_TRUE(waitFor(
        [&] {
          return runCommand({"ip", "-n", ns, "route", "show", "10.240.0.0/16"}, {},
                            std::chrono::seconds(10))
              .out.empty();
        },
        std::chrono::seconds(15)))
        << ns;
  }
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

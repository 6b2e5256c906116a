// The pure parts of the process runtime: what a container runs, the nftables rules of
// ClusterIP Services and the cluster DNS hosts file. (The runtime itself, as root, is
// tested end to end in tests/e2e/process_runtime_test.cpp.)
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <unistd.h>

#include <nlohmann/json.hpp>

#include "minicluster/cluster_dns.h"
#include "minicluster/netns.h"
#include "minicluster/runtime_process.h"
#include "minicluster/service_proxy.h"

namespace strait::minicluster {
namespace {

using json = nlohmann::json;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Not;

TEST(ContainerArgvTest, CommandAndArgsRunAsGiven) {
  json c = {{"image", "debian"}, {"command", {"sh", "-c"}}, {"args", {"echo hi"}}};
  EXPECT_THAT(containerArgv(c, "/bin/strait"), ElementsAre("sh", "-c", "echo hi"));
}

TEST(ContainerArgvTest, AgnhostImageRunsStraitAgnhostWithItsArgs) {
  json c = {{"image", "registry.k8s.io/e2e-test-images/agnhost:2.52"},
            {"args", {"netexec", "--http-port=8080"}}};
  EXPECT_THAT(containerArgv(c, "/bin/strait"),
              ElementsAre("/bin/strait", "agnhost", "netexec", "--http-port=8080"));
  json digest = {{"image", "mirror.example/agnhost@sha256:abc"}, {"args", {"serve-hostname"}}};
  EXPECT_THAT(containerArgv(digest, "/s"), ElementsAre("/s", "agnhost", "serve-hostname"));
}

TEST(ContainerArgvTest, OtherImagesWithoutCommandServeNetexecOnTheirFirstPort) {
  json c = {{"image", "nginx"}, {"ports", json::array({{{"containerPort", 8081}}, {{"containerPort", 9}}})}};
  EXPECT_THAT(containerArgv(c, "/s"), ElementsAre("/s", "agnhost", "netexec", "--http-port=8081"));
  EXPECT_THAT(containerArgv(json{{"image", "nginx"}}, "/s"),
              ElementsAre("/s", "agnhost", "netexec", "--http-port=80"));
}

TEST(ContainerArgvTest, LocalImageRunsItsBinaryWithTheCommandTailAndArgs) {
  std::map<std::string, std::string> images = {{"strait", "/opt/strait"},
                                               {"example.com/tool:v2", "/opt/tool"}};
  json agent = {{"image", "strait:0.1.0"},
                {"command", {"/usr/local/bin/strait"}},
                {"args", {"agent", "--cluster-name=home"}}};
  EXPECT_THAT(containerArgv(agent, "/s", images),
              ElementsAre("/opt/strait", "agent", "--cluster-name=home"));
  json noCommand = {{"image", "strait@sha256:abc"}, {"args", {"version"}}};
  EXPECT_THAT(containerArgv(noCommand, "/s", images), ElementsAre("/opt/strait", "version"));
  json tagged = {{"image", "example.com/tool:v2"}, {"command", {"/bin/tool", "-v"}}};
  EXPECT_THAT(containerArgv(tagged, "/s", images), ElementsAre("/opt/tool", "-v"));
  // A key with a tag matches only that tag; other images keep their usual meaning.
  json otherTag = {{"image", "example.com/tool:v3"}, {"command", {"/bin/tool"}}};
  EXPECT_THAT(containerArgv(otherTag, "/s", images), ElementsAre("/bin/tool"));
  EXPECT_EQ(localImageBinary("registry.example.com/strait:1", images), "");
}

TEST(ContainerArgvTest, LocalImageFlagIsValidated) {
  auto ok = parseLocalImage("strait=/bin/sh");
  ASSERT_TRUE(ok.ok()) << ok.error().message;
  EXPECT_EQ(ok->first, "strait");
  EXPECT_EQ(ok->second, "/bin/sh");
  char plain[] = "/tmp/strait-local-image-XXXXXX";  // a regular file without execute bits
  int fd = ::mkstemp(plain);
  ASSERT_GE(fd, 0);
  ::close(fd);
  const std::string notExecutable = std::string("strait=") + plain;
  for (const std::string& bad : {std::string("strait"), std::string("=/bin/sh"),
                                 std::string("strait=bin/sh"),
                                 std::string("strait=/nonexistent/strait"), notExecutable,
                                 std::string("strait=/tmp")}) {
    auto r = parseLocalImage(bad);
    EXPECT_FALSE(r.ok()) << bad;
    if (!r.ok()) {
      EXPECT_THAT(r.error().message, HasSubstr("--local-image")) << bad;
    }
  }
  ::unlink(plain);
}

TEST(NetworkNamesTest, MarkerAndPrefixCarryTheClusterName) {
  EXPECT_EQ(networkMarker("a").size(), 8u);
  EXPECT_EQ(networkMarker("a").substr(0, 2), "st");
  EXPECT_NE(networkMarker("a"), networkMarker("b"));
  EXPECT_EQ(namespacePrefix("Home_1"), networkMarker("Home_1") + "-home-1-");
}

json service(const std::string& name, const std::string& ip, json ports, json extra = json::object()) {
  json s = {{"metadata", {{"name", name}, {"namespace", "default"}}},
            {"spec", {{"clusterIP", ip}, {"ports", ports}}}};
  s["spec"].update(extra);
  return s;
}

json slice(const std::string& svc, json endpoints, json ports) {
  return {{"metadata",
           {{"name", svc + "-abc"},
            {"namespace", "default"},
            {"labels", {{"kubernetes.io/service-name", svc}}}}},
          {"addressType", "IPv4"},
          {"endpoints", endpoints},
          {"ports", ports}};
}

TEST(ServiceRulesTest, ClusterIpPortsDnatToReadyEndpointsAtRandom) {
  auto rules = buildServiceRules(
      {service("web", "10.96.0.20", json::array({{{"name", "http"}, {"port", 80}}}))},
      {slice("web",
             json::array({{{"addresses", {"10.244.1.2"}}, {"conditions", {{"ready", true}}}},
                          {{"addresses", {"10.244.2.2"}}, {"conditions", {{"ready", false}}}},
                          {{"addresses", {"10.244.3.2"}}}}),
             json::array({{{"name", "http"}, {"port", 8080}, {"protocol", "TCP"}}}))},
      "cbr0", "10.244.0.0/16");
  // One verdict-map lookup per packet, one chain per Service port.
  EXPECT_THAT(rules, HasSubstr("type ipv4_addr . inet_proto . inet_service : verdict"));
  EXPECT_THAT(rules, HasSubstr("10.96.0.20 . tcp . 80 : goto svc-0"));
  EXPECT_THAT(rules, HasSubstr("ip daddr . meta l4proto . th dport vmap @service-ips"));
  EXPECT_THAT(rules, HasSubstr("meta l4proto tcp dnat ip to numgen random mod 2 map { "
                               "0 : 10.244.1.2 . 8080, 1 : 10.244.3.2 . 8080 }"));
  EXPECT_THAT(rules, Not(HasSubstr("10.244.2.2"))) << "not ready";
  EXPECT_THAT(rules, Not(HasSubstr("-ep-"))) << "endpoint chains only for ClientIP affinity";
  EXPECT_THAT(rules, HasSubstr("ct status dnat oifname \"cbr0\" masquerade"));
  EXPECT_THAT(rules, HasSubstr("ct status dnat ip saddr != 10.244.0.0/16 masquerade"));
  // Endpoints on the underlay answer the node; endpoints behind a tunnel (another cluster's
  // pod CIDR) see the Pod's own address, the only kind of source a tunnel carries.
  EXPECT_THAT(rules, HasSubstr("ct status dnat ip daddr 100.64.0.0/10 masquerade"));
  EXPECT_THAT(rules, Not(HasSubstr("ip daddr != 10.244.0.0/16 masquerade")));
  EXPECT_THAT(rules, Not(HasSubstr("fib daddr type local"))) << "a ClusterIP Service";
  // A whole-table replacement in one transaction.
  EXPECT_EQ(rules.rfind("table ip strait-services\ndelete table ip strait-services\n", 0), 0u);
}

TEST(ServiceRulesTest, NodePortsAnswerOnTheNodesOwnAddresses) {
  auto rules = buildServiceRules(
      {service("web", "10.96.0.20", json::array({{{"port", 80}, {"nodePort", 30080}}}),
               {{"type", "NodePort"}})},
      {slice("web", json::array({{{"addresses", {"10.244.1.2"}}}}),
             json::array({{{"port", 8080}}}))},
      "cbr0", "10.244.0.0/16");
  EXPECT_THAT(rules, HasSubstr("10.96.0.20 . tcp . 80 : goto svc-0"));
  EXPECT_THAT(rules, HasSubstr("fib daddr type local tcp dport 30080 goto svc-0"));
  EXPECT_THAT(rules, HasSubstr("meta l4proto tcp dnat to 10.244.1.2:8080")) << "one endpoint";
}

TEST(ServiceRulesTest, HeadlessAndEndpointlessServicesGetNoRule) {
  auto rules = buildServiceRules(
      {service("headless", "None", json::array({{{"port", 80}}})),
       service("empty", "10.96.0.21", json::array({{{"port", 80}}}))},
      {slice("headless", json::array({{{"addresses", {"10.244.1.2"}}}}),
             json::array({{{"port", 80}}}))},
      "cbr0", "10.244.0.0/16");
  EXPECT_THAT(rules, Not(HasSubstr("dnat to")));
  EXPECT_THAT(rules, Not(HasSubstr("dnat ip to")));
  EXPECT_THAT(rules, Not(HasSubstr("goto svc-")));
  EXPECT_THAT(rules, Not(HasSubstr("elements"))) << "an empty map has no elements line";
}

TEST(ServiceRulesTest, TwoServicesOnOneClusterIpPortDoNotBreakTheTable) {
  json ports = json::array({{{"port", 80}}});
  json endpoints = json::array({{{"addresses", {"10.244.1.2"}}}});
  auto rules = buildServiceRules(
      {service("a", "10.96.0.20", ports), service("b", "10.96.0.20", ports)},
      {slice("a", endpoints, json::array({{{"port", 8080}}})),
       slice("b", endpoints, json::array({{{"port", 8080}}}))},
      "cbr0", "10.244.0.0/16");
  size_t first = rules.find("10.96.0.20 . tcp . 80");
  ASSERT_NE(first, std::string::npos);
  EXPECT_EQ(rules.find("10.96.0.20 . tcp . 80", first + 1), std::string::npos)
      << "a duplicate map element makes nft refuse the whole table";
}

TEST(ServiceRulesTest, ClientIpAffinityRemembersClientsPerEndpoint) {
  auto rules = buildServiceRules(
      {service("web", "10.96.0.20", json::array({{{"port", 53}, {"protocol", "UDP"}}}),
               {{"sessionAffinity", "ClientIP"},
                {"sessionAffinityConfig", {{"clientIP", {{"timeoutSeconds", 60}}}}}})},
      {slice("web", json::array({{{"addresses", {"10.244.1.2"}}}}),
             json::array({{{"port", 5353}, {"protocol", "UDP"}}}))},
      "cbr0", "10.244.0.0/16");
  EXPECT_THAT(rules, HasSubstr("10.96.0.20 . udp . 53 : goto svc-0"));
  EXPECT_THAT(rules, HasSubstr("set svc-0-ep-0-clients {\n    type ipv4_addr; flags dynamic, "
                               "timeout; timeout 60s"));
  EXPECT_THAT(rules, HasSubstr("ip saddr @svc-0-ep-0-clients goto svc-0-ep-0"));
  EXPECT_THAT(rules, HasSubstr("update @svc-0-ep-0-clients { ip saddr }"));
}

TEST(ClusterDnsTest, HostsFileNamesServicesAndHeadlessEndpoints) {
  std::string hosts = buildDnsHosts(
      {service("web", "10.96.0.20", json::array({{{"port", 80}}})),
       service("db", "None", json::array({{{"port", 5432}}}))},
      {slice("db",
             json::array({{{"addresses", {"10.244.1.5"}}},
                          {{"addresses", {"10.244.2.5"}}, {"conditions", {{"ready", false}}}}}),
             json::array({{{"port", 5432}}}))});
  EXPECT_EQ(hosts,
            "10.96.0.20 web.default.svc.cluster.local\n"
            "10.244.1.5 db.default.svc.cluster.local\n");
}

TEST(ClusterDnsTest, ResolvConfIsTheKubeletOne) {
  EXPECT_EQ(podResolvConf("shop"),
            "nameserver 10.96.0.10\nsearch shop.svc.cluster.local svc.cluster.local "
            "cluster.local\noptions ndots:5\n");
}

}  // namespace
}  // namespace strait::minicluster

// vnode/offloading_affinity.h: the node affinity of each strategy, provider and selector,
// checked by which nodes it admits (home nodes, each provider's virtual node).
#include "vnode/offloading_affinity.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>

#include "vnode/toleration_webhook.h"

namespace strait::vnode {
namespace {

using nlohmann::json;
using reflection::PodOffloadingStrategy;
using Labels = std::map<std::string, std::string>;

// Node affinity semantics (In, NotIn, Exists, DoesNotExist, Gt, Lt; terms ORed).
bool requirementHolds(const json& e, const Labels& labels) {
  const std::string key = e["key"];
  const std::string op = e["operator"];
  auto it = labels.find(key);
  std::vector<std::string> values = e.value("values", std::vector<std::string>());
  auto listed = [&] {
    return it != labels.end() &&
           std::find(values.begin(), values.end(), it->second) != values.end();
  };
  if (op == "In") return listed();
  if (op == "NotIn") return !listed();
  if (op == "Exists") return it != labels.end();
  if (op == "DoesNotExist") return it == labels.end();
  if (op == "Gt") return it != labels.end() && std::stol(it->second) > std::stol(values.at(0));
  if (op == "Lt") return it != labels.end() && std::stol(it->second) < std::stol(values.at(0));
  ADD_FAILURE() << "unknown operator " << op;
  return false;
}

bool admits(const std::optional<json>& affinity, const Labels& node) {
  if (!affinity) return true;
  const json& terms = (*affinity)["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
                                 ["nodeSelectorTerms"];
  for (const json& t : terms) {
    bool all = true;
    for (const json& e : t.value("matchExpressions", json::array())) {
      all = all && requirementHolds(e, node);
    }
    if (all) return true;
  }
  return false;
}

const Labels kHome = {{"kubernetes.io/hostname", "home-1"},
                      {"topology.kubernetes.io/region", "eu"}};
Labels vnode(const std::string& provider, const std::string& region, const std::string& tier) {
  Labels l = {{"type", "virtual-kubelet"},
              {"strait.io/remote-cluster-id", provider + "-id"},
              {"kubernetes.io/hostname", "strait-" + provider},
              {"topology.kubernetes.io/region", region}};
  if (!tier.empty()) l["tier"] = tier;
  return l;
}
const Labels kCloudA = vnode("cloud-a", "eu", "gold");
const Labels kCloudB = vnode("cloud-b", "us", "");

Offloading offloading(PodOffloadingStrategy s, std::string provider = "", std::string sel = "") {
  Offloading o;
  o.offloaded = true;
  o.strategy = s;
  o.provider = std::move(provider);
  o.selector = std::move(sel);
  return o;
}

const json kSpec = json::parse(R"({"containers":[{"name":"c"}]})");

TEST(OffloadingAffinityTest, LocalAndRemoteToAnyProviderRestrictsNothing) {
  EXPECT_FALSE(offloadingAffinity(kSpec, offloading(PodOffloadingStrategy::LocalAndRemote)));
}

TEST(OffloadingAffinityTest, RemoteAdmitsOnlyVirtualNodes) {
  auto a = offloadingAffinity(kSpec, offloading(PodOffloadingStrategy::Remote));
  ASSERT_TRUE(a);
  EXPECT_FALSE(admits(a, kHome));
  EXPECT_TRUE(admits(a, kCloudA));
  EXPECT_TRUE(admits(a, kCloudB));
  auto one = offloadingAffinity(kSpec, offloading(PodOffloadingStrategy::Remote, "cloud-b"));
  EXPECT_FALSE(admits(one, kHome));
  EXPECT_FALSE(admits(one, kCloudA));
  EXPECT_TRUE(admits(one, kCloudB));
}

TEST(OffloadingAffinityTest, LocalAdmitsOnlyRealNodes) {
  auto a = offloadingAffinity(kSpec, offloading(PodOffloadingStrategy::Local));
  EXPECT_TRUE(admits(a, kHome));
  EXPECT_FALSE(admits(a, kCloudA));
  EXPECT_FALSE(admits(a, kCloudB));
}

TEST(OffloadingAffinityTest, SelectorChoosesVirtualNodesByTheirLabels) {
  auto gold =
      offloadingAffinity(kSpec, offloading(PodOffloadingStrategy::LocalAndRemote, "", "tier=gold"));
  EXPECT_TRUE(admits(gold, kHome));
  EXPECT_TRUE(admits(gold, kCloudA));
  EXPECT_FALSE(admits(gold, kCloudB));
  auto notEu = offloadingAffinity(
      kSpec, offloading(PodOffloadingStrategy::Remote, "", "topology.kubernetes.io/region!=eu"));
  EXPECT_FALSE(admits(notEu, kHome));  // a home node is not a virtual node
  EXPECT_FALSE(admits(notEu, kCloudA));
  EXPECT_TRUE(admits(notEu, kCloudB));
  auto set = offloadingAffinity(kSpec, offloading(PodOffloadingStrategy::Remote, "",
                                                  "topology.kubernetes.io/region in "
                                                  "(us,asia),!tier"));
  EXPECT_FALSE(admits(set, kCloudA));
  EXPECT_TRUE(admits(set, kCloudB));
}

TEST(OffloadingAffinityTest, UnparsableSelectorAdmitsNoVirtualNode) {
  auto mixed = offloadingAffinity(
      kSpec, offloading(PodOffloadingStrategy::LocalAndRemote, "", "tier in gold"));
  EXPECT_TRUE(admits(mixed, kHome));
  EXPECT_FALSE(admits(mixed, kCloudA));
  auto remote =
      offloadingAffinity(kSpec, offloading(PodOffloadingStrategy::Remote, "", "tier in gold"));
  EXPECT_FALSE(admits(remote, kHome));
  EXPECT_FALSE(admits(remote, kCloudA));
  EXPECT_FALSE(admits(remote, kCloudB));
}

TEST(OffloadingAffinityTest, ThePodsOwnTermsStillHoldOnEveryBranch) {
  json spec = json::parse(R"({"containers":[{"name":"c"}],"affinity":{
    "podAntiAffinity":{"x":1},
    "nodeAffinity":{"requiredDuringSchedulingIgnoredDuringExecution":{"nodeSelectorTerms":[
      {"matchExpressions":[{"key":"topology.kubernetes.io/region","operator":"In","values":["eu"]}]},
      {"matchExpressions":[{"key":"disk","operator":"Exists"}]}]}}}})");
  auto a = offloadingAffinity(
      spec, offloading(PodOffloadingStrategy::LocalAndRemote, "", "topology.kubernetes.io/region"));
  ASSERT_TRUE(a);
  EXPECT_EQ((*a)["podAntiAffinity"], spec["affinity"]["podAntiAffinity"]);
  // Two own terms x two branches.
  EXPECT_EQ(
      (*a)["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"]
          .size(),
      4u);
  EXPECT_TRUE(admits(a, kHome));
  EXPECT_TRUE(admits(a, kCloudA));
  EXPECT_FALSE(admits(a, kCloudB));  // region us fails the Pod's own first term, no disk label
  Labels disky = kCloudB;
  disky["disk"] = "ssd";
  EXPECT_TRUE(admits(a, disky));
}

TEST(OffloadingAffinityTest, SelectorOperatorsMapToNodeSelectorOperators) {
  auto sel = kube::LabelSelector::parse("a=1,b!=2,c in (3,4),d notin (5),e,!f,g>6,h<7");
  ASSERT_TRUE(sel.ok());
  json reqs = nodeSelectorRequirements(*sel);
  std::map<std::string, std::string> ops;
  for (const json& r : reqs) ops[r["key"]] = r["operator"];
  EXPECT_EQ(ops, (std::map<std::string, std::string>{{"a", "In"},
                                                     {"b", "NotIn"},
                                                     {"c", "In"},
                                                     {"d", "NotIn"},
                                                     {"e", "Exists"},
                                                     {"f", "DoesNotExist"},
                                                     {"g", "Gt"},
                                                     {"h", "Lt"}}));
}

TEST(OffloadingAffinityTest, WebhookAddsNoTolerationUnderLocal) {
  json pod = {{"metadata", {{"name", "p"}}}, {"spec", kSpec}};
  json ops = tolerationPatch(pod, offloading(PodOffloadingStrategy::Local), {});
  ASSERT_EQ(ops.size(), 1u) << ops.dump();
  EXPECT_EQ(ops[0]["path"], "/spec/affinity");
  json remoteOps = tolerationPatch(pod, offloading(PodOffloadingStrategy::Remote), {});
  ASSERT_EQ(remoteOps.size(), 2u) << remoteOps.dump();  // the tolerations, then the affinity
  EXPECT_EQ(remoteOps[0]["path"], "/spec/tolerations");
  EXPECT_EQ(remoteOps[1]["path"], "/spec/affinity");
}

TEST(OffloadingAffinityTest, NamespaceRecordCarriesStrategyAndSelector) {
  Offloading o = offloadingOf(json::parse(R"({"metadata":{"name":"demo",
    "labels":{"strait.io/offloaded":"true"},
    "annotations":{"strait.io/pod-offloading-strategy":"Remote",
                   "strait.io/offload-selector":"tier=gold"}}})"));
  EXPECT_EQ(o.strategy, PodOffloadingStrategy::Remote);
  EXPECT_EQ(o.selector, "tier=gold");
  Offloading bad = offloadingOf(json::parse(R"({"metadata":{"name":"demo",
    "labels":{"strait.io/offloaded":"true"},
    "annotations":{"strait.io/pod-offloading-strategy":"Elsewhere"}}})"));
  EXPECT_EQ(bad.strategy, PodOffloadingStrategy::LocalAndRemote);
  EXPECT_FALSE(reflection::parsePodOffloadingStrategy("remote").ok());
  EXPECT_NE(reflection::parsePodOffloadingStrategy("x").error().message.find(
                "LocalAndRemote, Remote or Local"),
            std::string::npos);
}

}  // namespace
}  // namespace strait::vnode

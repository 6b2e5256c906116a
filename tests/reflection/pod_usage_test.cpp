// PodUsage: the provider's running sum of one consumer's Pod requests (reflection/pod_usage.h).
#include "reflection/pod_usage.h"

#include <gtest/gtest.h>

#include <thread>
#include <vector>

namespace strait::reflection {
namespace {

using nlohmann::json;
using peering::ResourceMap;

json pod(const std::string& name, const std::string& cpu, const std::string& phase = "") {
  json p = {{"metadata", {{"namespace", "ns"}, {"name", name}}},
            {"spec", {{"containers", {{{"name", "c"}, {"resources", {{"requests", {{"cpu", cpu}}}}}}}}}}};
  if (!phase.empty()) p["status"] = {{"phase", phase}};
  return p;
}

std::string cpu(const ResourceMap& m) {
  auto it = m.find("cpu");
  return it == m.end() ? "0" : it->second.toString();
}
std::string pods(const ResourceMap& m) {
  auto it = m.find("pods");
  return it == m.end() ? "0" : it->second.toString();
}

// A grant of `limit` CPU.
PodUsage::Check grant(const std::string& limit) {
  return [limit](const json& p, const ResourceMap& used) -> kube::Status {
    kube::Quantity l = *kube::Quantity::parse(limit);
    kube::Quantity ask = peering::podRequests(json::array({p})).at("cpu");
    auto it = used.find("cpu");
    kube::Quantity total = it == used.end() ? ask : *it->second.add(ask);
    if (l < total) return kube::makeError(kube::Code::Forbidden, "over the grant");
    return kube::Status::OK();
  };
}

TEST(PodUsageTest, ObserveReplacesAndForgetSubtracts) {
  PodUsage u;
  u.observe(pod("a", "500m"));
  u.observe(pod("b", "1"));
  EXPECT_EQ(cpu(u.total()), "1500m");
  EXPECT_EQ(pods(u.total()), "2");
  u.observe(pod("a", "250m"));  // an update replaces, never adds
  EXPECT_EQ(cpu(u.total()), "1250m");
  u.observe(pod("b", "1", "Succeeded"));  // terminal: counts as nothing
  EXPECT_EQ(cpu(u.total()), "250m");
  EXPECT_EQ(pods(u.total()), "1");
  u.forget("ns/a");
  u.forget("ns/missing");
  EXPECT_EQ(cpu(u.total()), "0");
  EXPECT_EQ(u.size(), 1u);  // b still known (terminal), so an apply to it is no creation
}

TEST(PodUsageTest, AdmitReservesChecksTheGrantAndReleaseDropsOnlyReservations) {
  PodUsage u;
  u.observe(pod("a", "1"));
  bool reserved = false;
  ASSERT_TRUE(u.admit("ns/b", pod("b", "1"), grant("2"), &reserved).ok());
  EXPECT_TRUE(reserved);
  EXPECT_EQ(cpu(u.total()), "2");
  // The grant is used up: a third Pod is refused, and nothing is reserved for it.
  kube::Status refused = u.admit("ns/c", pod("c", "1"), grant("2"), &reserved);
  EXPECT_EQ(refused.code(), kube::Code::Forbidden);
  EXPECT_FALSE(reserved);
  // A key already counted (an update, or a creation in flight) passes unchecked.
  ASSERT_TRUE(u.admit("ns/a", pod("a", "1"), grant("0"), &reserved).ok());
  EXPECT_FALSE(reserved);
  // b's create failed: its reservation goes; a's observed entry survives a release.
  u.release("ns/b");
  u.release("ns/a");
  EXPECT_EQ(cpu(u.total()), "1");
  // Once the informer saw a reserved Pod, release() leaves it counted.
  ASSERT_TRUE(u.admit("ns/d", pod("d", "1"), grant("2"), &reserved).ok());
  u.observe(pod("d", "1"));
  u.release("ns/d");
  EXPECT_EQ(cpu(u.total()), "2");
}

TEST(PodUsageTest, ConcurrentAdmissionsNeverExceedTheGrant) {
  PodUsage u;
  std::vector<std::thread> threads;
  std::atomic<int> admitted{0};
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 50; ++i) {
        std::string name = "p" + std::to_string(t) + "-" + std::to_string(i);
        bool reserved = false;
        if (u.admit("ns/" + name, pod(name, "100m"), grant("10"), &reserved).ok() && reserved) {
          ++admitted;
        }
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(admitted.load(), 100);  // 10 CPU / 100m
  EXPECT_EQ(cpu(u.total()), "10");
}

}  // namespace
}  // namespace strait::reflection

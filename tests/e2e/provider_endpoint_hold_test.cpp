// The provider's hold of a consumer's reflected endpoints, against a real `strait minicluster`
// with the provider side of the reflection (ProviderApplier) in this process: while the
// consumer's tunnel is down (endpointsHeld) every endpoint of its EndpointSlices is stored
// ready=false, serving=false with the conditions it sent kept in the slice, a slice it applies
// meanwhile is stored held too, and restoreEndpoints puts the kept conditions back once the
// tunnel is up; a slice that is not the consumer's is never touched, nothing is deleted.

#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>

#include "e2e/cluster_fixture.h"
#include "kube/client.h"
#include "kube/kubeconfig.h"
#include "reflection/provider_applier.h"
#include "reflection/service_forge.h"

namespace strait::e2e {
namespace {

using json = nlohmann::json;
namespace res = kube::resources;

const std::string kHoldConsumerId = "5ca1ab1e-1111-4222-8333-444455556666";

std::unique_ptr<kube::Client> holdTestClient(const std::string& kubeconfig) {
  auto cfg = kube::loadKubeconfig({{kubeconfig}, ""});
  if (!cfg.ok()) return nullptr;
  auto c = kube::newClient(*cfg);
  return c.ok() ? std::move(*c) : nullptr;
}

// The consumer's slice of Service web with `ips` (each ready and serving).
json heldTestSlice(const std::vector<std::string>& ips) {
  json endpoints = json::array();
  for (const std::string& ip : ips) {
    endpoints.push_back({{"addresses", {ip}},
                         {"nodeName", "home-node"},
                         {"conditions", {{"ready", true}, {"serving", true}, {"terminating", false}}}});
  }
  return {{"apiVersion", "discovery.k8s.io/v1"},
          {"kind", "EndpointSlice"},
          {"metadata",
           {{"name", "web-abcde"},
            {"namespace", "shop"},
            {"uid", "slice-uid-1"},
            {"labels", {{"kubernetes.io/service-name", "web"}}}}},
          {"addressType", "IPv4"},
          {"ports", json::array({{{"name", "http"}, {"port", 8080}, {"protocol", "TCP"}}})},
          {"endpoints", endpoints}};
}

class ProviderEndpointHoldTest : public ClusterTest {};

TEST_F(ProviderEndpointHoldTest, HeldNotReadyWhileTheTunnelIsDownAndRestoredAfter) {
  std::unique_ptr<kube::Client> provider = holdTestClient(cluster().kubeconfig());
  ASSERT_TRUE(provider);
  const std::string ns = "shop-" + std::to_string(::getpid());
  std::atomic<bool> tunnelDown{false};
  reflection::ProviderApplier applier(
      *provider, reflection::NamespaceMapping(kHoldConsumerId, reflection::NamingStrategy::SameName),
      kube::PodSecurityLevel::Baseline, json::object(), {}, [&] { return tunnelDown.load(); });
  auto send = [&](const std::vector<std::string>& ips) {
    kube::Result<json> forged = reflection::forgeRemoteEndpointSlice(
        heldTestSlice(ips), {kHoldConsumerId, ns}, [](const std::string&) { return false; });
    if (!forged.ok()) return kube::Result<json>(forged.error());
    return applier.apply(reflection::StreamMessage::apply(*forged, "slice-uid-1"));
  };
  auto stored = [&] { return provider->get(res::kEndpointSlices, ns, "web-abcde"); };
  auto conditions = [](const json& slice) {
    std::vector<std::pair<bool, bool>> out;  // ready, serving
    for (const json& e : slice.value("endpoints", json::array())) {
      out.emplace_back(e["conditions"].value("ready", true), e["conditions"].value("serving", true));
    }
    return out;
  };
  auto held = [](const json& slice) {
    return slice["metadata"].value("annotations", json::object())
        .contains(reflection::kAnnotationHeldEndpointConditions);
  };
  using Conds = std::vector<std::pair<bool, bool>>;

  kube::Result<json> r = send({"10.240.0.5", "10.240.0.6"});
  ASSERT_TRUE(r.ok()) << r.error().message;
  // A slice in the same namespace that is not this consumer's (a user's own).
  json own = {{"apiVersion", "discovery.k8s.io/v1"},
              {"kind", "EndpointSlice"},
              {"metadata", {{"name", "own"}, {"labels", {{"kubernetes.io/service-name", "own"}}}}},
              {"addressType", "IPv4"},
              {"endpoints", json::array({{{"addresses", {"10.1.0.9"}},
                                          {"conditions", {{"ready", true}}}}})}};
  ASSERT_TRUE(provider->create(res::kEndpointSlices, ns, own).ok());

  // The tunnel goes down: held, the conditions sent kept.
  tunnelDown = true;
  kube::Result<int> n = applier.markEndpointsNotReady();
  ASSERT_TRUE(n.ok()) << n.error().message;
  EXPECT_EQ(*n, 1);
  kube::Result<json> s = stored();
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(conditions(*s), (Conds{{false, false}, {false, false}})) << s->dump();
  EXPECT_TRUE(held(*s)) << s->dump();
  n = applier.markEndpointsNotReady();
  ASSERT_TRUE(n.ok());
  EXPECT_EQ(*n, 0);  // already held: nothing written
  kube::Result<json> ownNow = provider->get(res::kEndpointSlices, ns, "own");
  ASSERT_TRUE(ownNow.ok());
  EXPECT_EQ(ownNow->value("/endpoints/0/conditions/ready"_json_pointer, false), true);

  // The consumer applies a new version meanwhile (a third replica): stored held too.
  r = send({"10.240.0.5", "10.240.0.6", "10.240.0.7"});
  ASSERT_TRUE(r.ok()) << r.error().message;
  s = stored();
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(conditions(*s), (Conds{{false, false}, {false, false}, {false, false}})) << s->dump();
  EXPECT_TRUE(held(*s));

  // The tunnel is up again: the conditions sent are back, the record gone.
  tunnelDown = false;
  n = applier.restoreEndpoints();
  ASSERT_TRUE(n.ok()) << n.error().message;
  EXPECT_EQ(*n, 1);
  s = stored();
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(conditions(*s), (Conds{{true, true}, {true, true}, {true, true}})) << s->dump();
  EXPECT_FALSE(held(*s)) << s->dump();
  n = applier.restoreEndpoints();
  ASSERT_TRUE(n.ok());
  EXPECT_EQ(*n, 0);
  // What the consumer sends next is stored as sent.
  r = send({"10.240.0.5"});
  ASSERT_TRUE(r.ok()) << r.error().message;
  s = stored();
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(conditions(*s), (Conds{{true, true}})) << s->dump();
  EXPECT_FALSE(held(*s));
}

}  // namespace
}  // namespace strait::e2e

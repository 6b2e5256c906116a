// Endpoints and EndpointSlice controllers, in process: ready and not-ready pods, named
// target ports, terminating pods, labels and owner of slices, Service deletion.
#include <set>

#include "controller_fixture.h"
#include "kube/object.h"

namespace strait::minicluster::testing {
namespace {

json pod(const std::string& name, const std::string& app) {
  return {{"metadata", {{"name", name}, {"labels", {{"app", app}}}}},
          {"spec",
           {{"containers",
             json::array({{{"name", "c"},
                           {"image", "nginx"},
                           {"ports", json::array({{{"name", "http"}, {"containerPort", 8080}}})}}})}}}};
}

json service(const std::string& name, const std::string& app) {
  return {{"metadata", {{"name", name}, {"labels", {{"team", "a"}}}}},
          {"spec",
           {{"selector", {{"app", app}}},
            {"ports", json::array({{{"name", "web"}, {"port", 80}, {"targetPort", "http"}},
                                   {{"name", "metrics"}, {"port", 9090}}})}}}};
}

class EndpointsControllerTest : public ControllerTest {
 protected:
  std::vector<json> slices(const std::string& svc) {
    return list("discovery.k8s.io", "endpointslices", "default",
                "kubernetes.io/service-name=" + svc);
  }
};

TEST_F(EndpointsControllerTest, ServiceGetsEndpointsAndSlicesOfSelectedPods) {
  ASSERT_TRUE(create("", "pods", "default", pod("a", "web")).ok());
  ASSERT_TRUE(create("", "pods", "default", pod("b", "web")).ok());
  ASSERT_TRUE(create("", "pods", "default", pod("other", "db")).ok());
  auto svc = create("", "services", "default", service("web", "web"));
  ASSERT_TRUE(svc.ok()) << svc.error().message;
  std::string svcUid = kube::getUid(json::parse((*svc)->json));
  // No pod has an IP yet: a placeholder slice with no endpoints, Endpoints without subsets.
  ASSERT_TRUE(eventually([&] { return slices("web").size() == 1 && get("", "endpoints", "default", "web"); }));
  EXPECT_TRUE(slices("web")[0]["endpoints"].empty());
  EXPECT_FALSE(get("", "endpoints", "default", "web")->contains("subsets"));

  setPodReady("default", "a", true, "10.1.0.1");
  setPodReady("default", "b", false, "10.1.0.2");
  setPodReady("default", "other", true, "10.1.0.3");
  ASSERT_TRUE(eventually([&] {
    auto s = slices("web");
    return s.size() == 1 && s[0]["endpoints"].size() == 2;
  }));
  json slice = slices("web")[0];
  EXPECT_EQ(slice["addressType"], "IPv4");
  EXPECT_EQ(slice["metadata"]["labels"]["endpointslice.kubernetes.io/managed-by"],
            "endpointslice-controller.k8s.io");
  EXPECT_EQ(slice["metadata"]["labels"]["team"], "a");
  EXPECT_TRUE(kube::isControlledBy(slice, svcUid));
  EXPECT_EQ(slice["ports"], json::parse(R"([{"name":"web","port":8080,"protocol":"TCP"},
                                             {"name":"metrics","port":9090,"protocol":"TCP"}])"));
  EXPECT_EQ(slice["endpoints"][0]["addresses"][0], "10.1.0.1");
  EXPECT_EQ(slice["endpoints"][0]["conditions"],
            json::parse(R"({"ready":true,"serving":true,"terminating":false})"));
  EXPECT_EQ(slice["endpoints"][0]["targetRef"]["name"], "a");
  EXPECT_EQ(slice["endpoints"][1]["conditions"]["ready"], false);

  ASSERT_TRUE(eventually([&] {
    auto ep = get("", "endpoints", "default", "web");
    return ep && ep->contains("subsets") && (*ep)["subsets"][0].contains("notReadyAddresses");
  }));
  json subset = (*get("", "endpoints", "default", "web"))["subsets"][0];
  ASSERT_EQ(subset["addresses"].size(), 1u);
  EXPECT_EQ(subset["addresses"][0]["ip"], "10.1.0.1");
  EXPECT_EQ(subset["addresses"][0]["targetRef"]["kind"], "Pod");
  EXPECT_EQ(subset["notReadyAddresses"][0]["ip"], "10.1.0.2");
  EXPECT_EQ(subset["ports"].size(), 2u);

  // b becomes ready: both in addresses.
  setPodReady("default", "b", true);
  ASSERT_TRUE(eventually([&] {
    auto ep = get("", "endpoints", "default", "web");
    return ep && (*ep)["subsets"][0]["addresses"].size() == 2 &&
           !(*ep)["subsets"][0].contains("notReadyAddresses");
  }));
  // Deleting the Service removes its Endpoints and slices.
  ASSERT_TRUE(rest_->remove(info("", "services"), "default", "web", DeleteOptions{}).ok());
  ASSERT_TRUE(eventually([&] { return !get("", "endpoints", "default", "web") && slices("web").empty(); }));
}

TEST_F(EndpointsControllerTest, PodsWithoutTheNamedPortGetTheirOwnSlice) {
  ASSERT_TRUE(create("", "pods", "default", pod("a", "web")).ok());
  json plain = pod("b", "web");
  plain["spec"]["containers"][0].erase("ports");
  ASSERT_TRUE(create("", "pods", "default", plain).ok());
  setPodReady("default", "a", true, "10.1.0.1");
  setPodReady("default", "b", true, "10.1.0.2");
  ASSERT_TRUE(create("", "services", "default", service("web", "web")).ok());
  ASSERT_TRUE(eventually([&] {
    auto s = slices("web");
    return s.size() == 2 && s[0]["endpoints"].size() == 1 && s[1]["endpoints"].size() == 1;
  }));
  for (const auto& s : slices("web")) {
    if (s["endpoints"][0]["addresses"][0] == "10.1.0.2") {
      EXPECT_EQ(s["ports"].size(), 1u);  // only "metrics" (targetPort 9090) resolves
      EXPECT_EQ(s["ports"][0]["name"], "metrics");
    }
  }
}

TEST_F(EndpointsControllerTest, ServiceWithoutSelectorIsLeftAlone) {
  json svc = service("manual", "x");
  svc["spec"].erase("selector");
  ASSERT_TRUE(create("", "services", "default", svc).ok());
  ASSERT_TRUE(create("", "services", "default", service("marker", "none")).ok());
  ASSERT_TRUE(eventually([&] { return slices("marker").size() == 1; }));
  EXPECT_TRUE(slices("manual").empty());
  EXPECT_FALSE(get("", "endpoints", "default", "manual"));
}

// ClusterIPs and nodePorts are unique, as kube-apiserver's allocators make them: a taken
// value the client asks for is refused; 600 Services drawn at random never share one (the
// random draws alone collided about once in 1,000 Services).
TEST_F(EndpointsControllerTest, ClusterIpsAndNodePortsAreNeverAllocatedTwice) {
  json a = service("a", "web");
  a["spec"]["clusterIP"] = "10.96.7.7";
  a["spec"]["type"] = "NodePort";
  a["spec"]["ports"][0]["nodePort"] = 30123;
  ASSERT_TRUE(create("", "services", "default", a).ok());
  // The same Service again (a restart re-creating its own Services) is AlreadyExists, not a
  // clash with its own addresses.
  auto again = create("", "services", "default", a);
  ASSERT_FALSE(again.ok());
  EXPECT_EQ(again.error().code, kube::Code::AlreadyExists) << again.error().message;
  json sameIp = service("b", "web");
  sameIp["spec"]["clusterIP"] = "10.96.7.7";
  auto r = create("", "services", "default", sameIp);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, kube::Code::Invalid);
  EXPECT_NE(r.error().message.find("provided IP is already allocated"), std::string::npos)
      << r.error().message;
  json samePort = service("c", "web");
  samePort["spec"]["type"] = "NodePort";
  samePort["spec"]["ports"][0]["nodePort"] = 30123;
  r = create("", "services", "default", samePort);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("provided port is already allocated"), std::string::npos)
      << r.error().message;

  std::set<std::string> ips = {"10.96.7.7"};
  std::set<int> ports = {30123};
  for (int i = 0; i < 600; ++i) {
    json s = service("s" + std::to_string(i), "web");
    s["spec"]["type"] = "NodePort";
    auto created = create("", "services", "default", s);
    ASSERT_TRUE(created.ok()) << created.error().message;
    json obj = json::parse((*created)->json);
    EXPECT_TRUE(ips.insert(obj["spec"]["clusterIP"].get<std::string>()).second)
        << "ClusterIP allocated twice: " << obj["spec"]["clusterIP"];
    for (const auto& p : obj["spec"]["ports"]) {
      EXPECT_TRUE(ports.insert(p["nodePort"].get<int>()).second)
          << "nodePort allocated twice: " << p["nodePort"];
    }
  }
}

}  // namespace
}  // namespace strait::minicluster::testing

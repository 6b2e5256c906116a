// Exporting a provider Service to a consumer (`strait expose service`), with real processes
// and real kubectl: two `strait minicluster` ("home" the consumer, "cloud" the provider), a
// `strait agent` on each, `strait peer`; the home agent reaches the cloud agent through a
// TcpProxy that the partition test cuts and heals. In the cloud, namespace shop holds
// Deployment db (kubectl create deployment) exposed by kubectl expose:
//  - once exported to home, home has namespace shop (labelled as Strait's), Service db
//    WITHOUT selector, type ClusterIP with a ClusterIP of its own, the provider's ports,
//    labelled with the provider's cluster ID, and EndpointSlices (managed by Strait) listing
//    the cloud Pods at the addresses home reaches them by (the peering's remap of the
//    cloud's pod CIDR, read from the ForeignCluster's status), ready;
//  - changing the provider Service's ports and scaling the Deployment follow; `strait
//    status` counts the import; removing the export deletes Service and slices;
//  - a home Service of that name that Strait did not import is never touched: a Warning
//    Event ReflectionConflict, a conflict in the status; the import proceeds once it goes;
//    deleting the provider Service removes the import;
//  - a partition marks the imported endpoints not ready (nothing deleted) and the heal
//    restores them; unpeering removes every import.
// Timings are measured and printed with the load average.

#include <gtest/gtest.h>

#include <arpa/inet.h>

#include <cstdio>
#include <set>

#include "e2e/offload_fixture.h"
#include "e2e/tcp_proxy.h"

namespace strait::e2e {
namespace {

using json = nlohmann::json;
using Clock = std::chrono::steady_clock;

// `ip` (inside IPv4 prefix `from`) moved to the same offset inside `to` (same length); `ip`
// itself when either prefix is missing or does not parse.
std::string remapIp(const std::string& ip, const std::string& from, const std::string& to) {
  auto parse = [](const std::string& cidr, uint32_t& base, int& len) {
    const size_t slash = cidr.find('/');
    in_addr a{};
    if (slash == std::string::npos || inet_pton(AF_INET, cidr.substr(0, slash).c_str(), &a) != 1) {
      return false;
    }
    base = ntohl(a.s_addr);
    len = std::stoi(cidr.substr(slash + 1));
    return len >= 0 && len <= 32;
  };
  uint32_t f = 0, t = 0;
  int fl = 0, tl = 0;
  in_addr a{};
  if (!parse(from, f, fl) || !parse(to, t, tl) || fl != tl ||
      inet_pton(AF_INET, ip.c_str(), &a) != 1) {
    return ip;
  }
  const uint32_t mask = fl == 0 ? 0 : ~uint32_t(0) << (32 - fl);
  in_addr out{};
  out.s_addr = htonl((t & mask) | (ntohl(a.s_addr) & ~mask));
  char buf[INET_ADDRSTRLEN];
  return inet_ntop(AF_INET, &out, buf, sizeof buf);
}

class ServiceImportTest : public OffloadSuite {
 public:
  static void SetUpTestSuite() {
    proxy_ = new TcpProxy(0);
    error_ = setUp();
  }
  static std::string setUp() {
    OffloadSetup s;
    s.homeArgs = {"--nodes", "1"};
    s.cloudArgs = {"--nodes", "2", "--node-cpu", "8", "--node-memory", "32Gi"};
    s.cloudAgentArgs = {"--stream-keepalive", "500ms"};
    s.homeAgentArgs = {"--vnode-stream-grace", "4s"};
    if (std::string e = startClusters(s); !e.empty()) return e;
    if (std::string e = startAgentsThroughProxy(*proxy_, s); !e.empty()) return e;
    return peer({"--cpu", "8", "--memory", "16Gi", "--pods", "50"});
  }
  static void TearDownTestSuite() {
    stopAll();
    delete proxy_;
    proxy_ = nullptr;
  }

 protected:
  void SetUp() override {
    OffloadSuite::SetUp();
    if (HasFatalFailure()) return;
    proxy_->resume();
  }

  CommandResult cloud(const std::string& ns, const std::vector<std::string>& args) {
    std::vector<std::string> a = args;
    a.insert(a.end(), {"-n", ns});
    return kubectl(*cloud_, a);
  }
  CommandResult homeKc(const std::string& ns, const std::vector<std::string>& args) {
    std::vector<std::string> a = args;
    a.insert(a.end(), {"-n", ns});
    return kubectl(*home_, a);
  }
  json homeGet(const std::string& ns, const std::vector<std::string>& args) {
    std::vector<std::string> a = args;
    a.insert(a.end(), {"-n", ns});
    return getJson(*home_, a);
  }
  json cloudGet(const std::string& ns, const std::vector<std::string>& args) {
    std::vector<std::string> a = args;
    a.insert(a.end(), {"-n", ns});
    return getJson(*cloud_, a);
  }

  // `strait expose service NS/NAME --kubeconfig CLOUD --to HOME [--remove]`.
  CommandResult expose(const std::string& ref, bool remove = false) {
    std::vector<std::string> a = {"expose", "service", ref, "--kubeconfig", cloud_->kubeconfig(),
                                  "--to", consumerId()};
    if (remove) a.push_back("--remove");
    return strait(a);
  }

  // Home's ForeignCluster for the cloud ("" when absent).
  json homeForeignCluster() {
    json fcs = getJson(*home_, {"get", "foreignclusters"});
    if (!fcs.is_object() || fcs["items"].empty()) return json();
    return fcs["items"][0];
  }

  // The cloud Pod IPs of Service `svc` in `ns` as its controller's slices list them (ready
  // ones), mapped into home's view with the peering's remap.
  std::set<std::string> expectedAddresses(const std::string& ns, const std::string& svc) {
    const json fc = homeForeignCluster();
    const std::string remote = fc.value("/status/network/remoteCIDR"_json_pointer, std::string());
    const std::string seen =
        fc.value("/status/network/remoteCIDRSeenHere"_json_pointer, std::string());
    std::set<std::string> out;
    json slices = cloudGet(ns, {"get", "endpointslices", "-l", "kubernetes.io/service-name=" + svc});
    for (const json& s : slices.value("items", json::array())) {
      for (const json& e : s.value("endpoints", json::array())) {
        if (!e.value("/conditions/ready"_json_pointer, true)) continue;
        for (const json& a : e.value("addresses", json::array())) {
          out.insert(remapIp(a.get<std::string>(), remote, seen));
        }
      }
    }
    return out;
  }

  // Home's imported slices of `svc` in `ns`: address -> ready.
  std::map<std::string, bool> importedEndpoints(const std::string& ns, const std::string& svc) {
    std::map<std::string, bool> out;
    json slices = homeGet(ns, {"get", "endpointslices", "-l",
                               "kubernetes.io/service-name=" + svc +
                                   ",endpointslice.kubernetes.io/managed-by=endpointslice.strait.io"});
    for (const json& s : slices.value("items", json::array())) {
      for (const json& e : s.value("endpoints", json::array())) {
        for (const json& a : e.value("addresses", json::array())) {
          out[a.get<std::string>()] = e.value("/conditions/ready"_json_pointer, false);
        }
      }
    }
    return out;
  }

  static std::set<std::string> keys(const std::map<std::string, bool>& m) {
    std::set<std::string> out;
    for (const auto& [k, v] : m) out.insert(k);
    return out;
  }

  // Deployment db (2 replicas, port 8080) exposed as Service db port 80 in cloud namespace
  // `ns`; waits for its two ready endpoints.
  void createProviderService(const std::string& ns) {
    CommandResult n = kubectl(*cloud_, {"create", "namespace", ns});
    ASSERT_EQ(n.exitCode, 0) << n.describe();
    ASSERT_EQ(cloud(ns, {"create", "deployment", "db", "--image", "nginx:1.27", "--replicas", "2",
                         "--port", "8080"}).exitCode, 0);
    CommandResult ex = cloud(ns, {"expose", "deployment", "db", "--port", "80", "--target-port",
                                  "8080", "--name", "db"});
    ASSERT_EQ(ex.exitCode, 0) << ex.describe();
    ASSERT_TRUE(waitFor([&] { return expectedAddresses(ns, "db").size() == 2; }, 120s))
        << cloudGet(ns, {"get", "endpointslices"}).dump(1);
  }

  static TcpProxy* proxy_;
};

TcpProxy* ServiceImportTest::proxy_ = nullptr;

TEST_F(ServiceImportTest, AnExportedServiceIsImportedFollowsAndGoesWithTheExport) {
  createProviderService("shop");
  if (HasFatalFailure()) return;
  const json cloudSvc = cloudGet("shop", {"get", "service", "db"});
  ASSERT_TRUE(cloudSvc.is_object());
  const std::string providerId =
      homeForeignCluster().value("/spec/clusterID"_json_pointer, std::string());
  ASSERT_FALSE(providerId.empty());

  const auto t0 = Clock::now();
  CommandResult ex = expose("shop/db");
  ASSERT_EQ(ex.exitCode, 0) << ex.describe();
  std::set<std::string> want = expectedAddresses("shop", "db");
  std::map<std::string, bool> got;
  ASSERT_TRUE(waitFor([&] {
    got = importedEndpoints("shop", "db");
    return homeGet("shop", {"get", "service", "db"}).is_object() && keys(got) == want;
  }, 30s)) << "want " << json(want).dump() << " got " << json(got).dump() << "\n"
           << homeGet("shop", {"get", "endpointslices"}).dump(1) << agentLogs();
  const double imported = secondsSince(t0);
  for (const auto& [ip, ready] : got) EXPECT_TRUE(ready) << ip;

  json ns = getJson(*home_, {"get", "namespace", "shop"});
  ASSERT_TRUE(ns.is_object());
  EXPECT_EQ(ns.value("/metadata/labels/strait.io~1managed-by"_json_pointer, std::string()),
            "strait");
  json svc = homeGet("shop", {"get", "service", "db"});
  EXPECT_FALSE(svc["spec"].contains("selector")) << svc.dump(1);
  EXPECT_EQ(svc["spec"]["type"], "ClusterIP");
  const std::string homeIp = svc.value("/spec/clusterIP"_json_pointer, std::string());
  EXPECT_FALSE(homeIp.empty());
  EXPECT_NE(homeIp, "None");
  EXPECT_NE(homeIp, cloudSvc.value("/spec/clusterIP"_json_pointer, std::string()));
  EXPECT_EQ(svc["spec"]["ports"][0]["port"], 80);
  EXPECT_EQ(svc.value("/metadata/labels/strait.io~1imported-from"_json_pointer, std::string()),
            providerId);
  EXPECT_EQ(svc.value("/metadata/labels/strait.io~1origin-uid"_json_pointer, std::string()),
            cloudSvc["metadata"]["uid"].get<std::string>());
  json slices = homeGet("shop", {"get", "endpointslices", "-l", "kubernetes.io/service-name=db"});
  ASSERT_TRUE(slices.is_object());
  ASSERT_FALSE(slices["items"].empty());
  for (const json& s : slices["items"]) {
    // Home's own controller writes no slice for a Service without selector: all are Strait's.
    EXPECT_EQ(s.value("/metadata/labels/endpointslice.kubernetes.io~1managed-by"_json_pointer,
                      std::string()),
              "endpointslice.strait.io");
    EXPECT_EQ(s.value("/metadata/labels/strait.io~1imported-from"_json_pointer, std::string()),
              providerId);
    EXPECT_EQ(s["ports"][0]["port"], 8080) << "the slice carries the provider's target port";
  }

  // The provider Service's ports follow; home keeps its ClusterIP.
  auto t1 = Clock::now();
  ASSERT_EQ(cloud("shop", {"patch", "service", "db", "--type", "json", "-p",
                           R"([{"op":"replace","path":"/spec/ports/0/port","value":81}])"})
                .exitCode, 0);
  ASSERT_TRUE(waitFor([&] {
    json s = homeGet("shop", {"get", "service", "db"});
    return s.is_object() && s.value("/spec/ports/0/port"_json_pointer, 0) == 81;
  }, 30s)) << agentLogs();
  const double portsFollowed = secondsSince(t1);
  EXPECT_EQ(homeGet("shop", {"get", "service", "db"}).value("/spec/clusterIP"_json_pointer,
                                                          std::string()),
            homeIp);

  // A third replica follows.
  auto t2 = Clock::now();
  ASSERT_EQ(cloud("shop", {"scale", "deployment", "db", "--replicas", "3"}).exitCode, 0);
  ASSERT_TRUE(waitFor([&] {
    want = expectedAddresses("shop", "db");
    got = importedEndpoints("shop", "db");
    return want.size() == 3 && keys(got) == want;
  }, 60s)) << "want " << json(want).dump() << " got " << json(got).dump() << agentLogs();
  const double scaleFollowed = secondsSince(t2);

  // `strait status` counts the import in the peering's row.
  ASSERT_TRUE(waitFor([&] {
    return homeForeignCluster().value("/status/imports/services"_json_pointer, -1) == 1;
  }, 30s)) << homeForeignCluster().dump(1);
  CommandResult st = strait({"status", "--kubeconfig", home_->kubeconfig()});
  ASSERT_EQ(st.exitCode, 0) << st.describe();
  EXPECT_NE(st.out.find("IMPORTED(svc/slices/conflicts)"), std::string::npos) << st.out;
  {
    // The IMPORTED column (svc/slices/conflicts) of the cloud row: the table is aligned.
    const size_t col = st.out.find("IMPORTED(svc/slices/conflicts)");
    const size_t row = st.out.find("\ncloud");
    ASSERT_NE(row, std::string::npos) << st.out;
    const std::string line = st.out.substr(row + 1, st.out.find('\n', row + 1) - row - 1);
    ASSERT_LT(col, line.size()) << st.out;
    const std::string cell = line.substr(col, line.find(' ', col) - col);
    EXPECT_EQ(cell.substr(0, 2), "1/") << st.out;
    EXPECT_EQ(cell.substr(cell.size() - 2), "/0") << st.out;
  }

  // Removing the export deletes both.
  auto t3 = Clock::now();
  CommandResult rm = expose("shop/db", true);
  ASSERT_EQ(rm.exitCode, 0) << rm.describe();
  ASSERT_TRUE(waitFor([&] {
    json s = homeGet("shop", {"get", "services", "--field-selector", "metadata.name=db"});
    json e = homeGet("shop", {"get", "endpointslices", "-l", "kubernetes.io/service-name=db"});
    return s.is_object() && s["items"].empty() && e.is_object() && e["items"].empty();
  }, 30s)) << agentLogs();
  const double removed = secondsSince(t3);
  std::printf("figure: imported %.2fs after `strait expose service`, ports followed in %.2fs, "
              "a new replica in %.2fs, unexport removed both in %.2fs (load %s)\n",
              imported, portsFollowed, scaleFollowed, removed, loadAverage().c_str());
  EXPECT_LT(portsFollowed, 3.0);
  EXPECT_LT(removed, 3.0);
  // The provider's Service is untouched by all this.
  json after = cloudGet("shop", {"get", "service", "db"});
  ASSERT_TRUE(after.is_object());
  EXPECT_EQ(after["metadata"]["uid"], cloudSvc["metadata"]["uid"]);
  EXPECT_EQ(after["spec"]["selector"], cloudSvc["spec"]["selector"]);
}

TEST_F(ServiceImportTest, AConsumerServiceNotImportedIsNeverOverwritten) {
  // Home's own Service db in namespace books.
  ASSERT_EQ(kubectl(*home_, {"create", "namespace", "books"}).exitCode, 0);
  ASSERT_EQ(homeKc("books", {"create", "service", "clusterip", "db", "--tcp", "5432:5432"})
                .exitCode, 0);
  const json before = homeGet("books", {"get", "service", "db"});
  ASSERT_TRUE(before.is_object());
  createProviderService("books");
  if (HasFatalFailure()) return;
  CommandResult ex = expose("books/db");
  ASSERT_EQ(ex.exitCode, 0) << ex.describe();

  std::string message;
  ASSERT_TRUE(waitFor([&] {
    json evs = homeGet("books", {"get", "events", "--field-selector",
                                 "involvedObject.name=db,reason=ReflectionConflict"});
    if (!evs.is_object() || evs["items"].empty()) return false;
    message = evs["items"][0].value("message", "");
    return evs["items"][0].value("type", "") == "Warning";
  }, 30s)) << agentLogs();
  EXPECT_NE(message.find("books/db"), std::string::npos) << message;
  EXPECT_NE(message.find("Strait did not import"), std::string::npos) << message;
  ASSERT_TRUE(waitFor([&] {
    return homeForeignCluster().value("/status/imports/conflicts"_json_pointer, -1) == 1;
  }, 30s)) << homeForeignCluster().dump(1);
  json after = homeGet("books", {"get", "service", "db"});
  ASSERT_TRUE(after.is_object());
  EXPECT_EQ(after["metadata"]["uid"], before["metadata"]["uid"]);
  EXPECT_EQ(after["metadata"]["resourceVersion"], before["metadata"]["resourceVersion"]);
  EXPECT_EQ(after["spec"]["ports"][0]["port"], 5432);
  // No slice of the provider's joined home's own Service.
  EXPECT_TRUE(importedEndpoints("books", "db").empty());

  // Once home's own Service is gone, the import proceeds by itself.
  ASSERT_EQ(homeKc("books", {"delete", "service", "db"}).exitCode, 0);
  const std::set<std::string> want = expectedAddresses("books", "db");
  ASSERT_TRUE(waitFor([&] {
    json s = homeGet("books", {"get", "service", "db"});
    return s.is_object() && s.value("/spec/ports/0/port"_json_pointer, 0) == 80 &&
           keys(importedEndpoints("books", "db")) == want;
  }, 30s)) << agentLogs();
  EXPECT_TRUE(waitFor([&] {
    return homeForeignCluster().value("/status/imports/conflicts"_json_pointer, -1) == 0;
  }, 30s));

  // Deleting the provider's Service removes the import.
  auto t0 = Clock::now();
  ASSERT_EQ(cloud("books", {"delete", "service", "db"}).exitCode, 0);
  ASSERT_TRUE(waitFor([&] {
    json s = homeGet("books", {"get", "services", "--field-selector", "metadata.name=db"});
    json e = homeGet("books", {"get", "endpointslices", "-l", "kubernetes.io/service-name=db"});
    return s.is_object() && s["items"].empty() && e.is_object() && e["items"].empty();
  }, 30s)) << agentLogs();
  std::printf("figure: provider Service deleted -> import gone in %.2fs (load %s)\n",
              secondsSince(t0), loadAverage().c_str());
}

TEST_F(ServiceImportTest, APartitionMarksImportedEndpointsNotReadyAndUnpeerRemovesThem) {
  createProviderService("store");
  if (HasFatalFailure()) return;
  ASSERT_EQ(expose("store/db").exitCode, 0);
  const std::set<std::string> want = expectedAddresses("store", "db");
  ASSERT_TRUE(waitFor([&] {
    std::map<std::string, bool> got = importedEndpoints("store", "db");
    bool ready = keys(got) == want;
    for (const auto& [ip, r] : got) ready = ready && r;
    return ready;
  }, 30s)) << agentLogs();
  const json svc = homeGet("store", {"get", "service", "db"});
  ASSERT_TRUE(svc.is_object());

  const auto cut = Clock::now();
  proxy_->cut();
  std::map<std::string, bool> got;
  ASSERT_TRUE(waitFor([&] {
    got = importedEndpoints("store", "db");
    bool notReady = keys(got) == want;
    for (const auto& [ip, r] : got) notReady = notReady && !r;
    return notReady;
  }, 60s)) << json(got).dump() << agentLogs();
  const double marked = secondsSince(cut);
  // Nothing deleted: the same Service.
  EXPECT_EQ(homeGet("store", {"get", "service", "db"})["metadata"]["uid"], svc["metadata"]["uid"]);

  const auto heal = Clock::now();
  proxy_->resume();
  ASSERT_TRUE(waitFor([&] {
    got = importedEndpoints("store", "db");
    bool ready = keys(got) == want;
    for (const auto& [ip, r] : got) ready = ready && r;
    return ready;
  }, 60s)) << json(got).dump() << agentLogs();
  const double restored = secondsSince(heal);
  EXPECT_EQ(homeGet("store", {"get", "service", "db"})["metadata"]["uid"], svc["metadata"]["uid"]);
  EXPECT_LT(restored, 5.0);

  // Unpeering removes every import.
  const auto t0 = Clock::now();
  CommandResult unpeer = strait({"unpeer", "--kubeconfig", home_->kubeconfig(),
                                 "--remote-kubeconfig", cloud_->kubeconfig()});
  ASSERT_EQ(unpeer.exitCode, 0) << unpeer.describe();
  ASSERT_TRUE(waitFor([&] {
    json s = getJson(*home_, {"get", "services", "-A", "-l", "strait.io/imported-from"});
    json e = getJson(*home_, {"get", "endpointslices", "-A", "-l", "strait.io/imported-from"});
    return s.is_object() && s["items"].empty() && e.is_object() && e["items"].empty();
  }, 30s)) << getJson(*home_, {"get", "services", "-A"}).dump(1) << agentLogs();
  std::printf("figure: after the cut imported endpoints not ready at %.2fs, restored %.2fs after "
              "the heal; unpeer removed the import in %.2fs (load %s)\n",
              marked, restored, secondsSince(t0), loadAverage().c_str());
}

}  // namespace
}  // namespace strait::e2e

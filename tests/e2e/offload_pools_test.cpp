// Pools (several virtual nodes per peering) with real processes and real kubectl: two
// `strait minicluster`s, "home" and "cloud" (two general nodes of 8 CPUs, two GPU nodes of 4
// CPUs labelled strait.io/test-gpu=true and nvidia.com/gpu.product=A100 advertising 2
// nvidia.com/gpu each), a `strait agent` on each, `strait peer --pool general:... --pool
// gpu:...@strait.io/test-gpu=true`, then:
//  - two virtual nodes strait-cloud-general and strait-cloud-gpu, each with its pool's
//    capacity, the GPU node with the GPU nodes' uniform labels, the general one without;
//  - `strait pool list -o json` and `strait status -o json` list both pools as granted;
//  - `strait pool resize` changes the pool node's capacity in seconds;
//  - `strait pool remove` is refused while a Pod is bound to the pool's node, `--drain`
//    evicts it (Eviction API) and removes the pool and its node;
//  - bad pool arguments are refused with a message naming them;
//  - the pool nodes are Ready while the peering's reflection stream is up, NotReady with
//    the peering's node after the grace when the provider agent is gone, with its kubelet
//    endpoint;
//  - a Pod selecting the GPU pool's node runs there: its remote Pod is pinned to the pool
//    (label and node selector) and runs on a provider GPU node; a resize keeps it (same
//    remote Pod), so does a consumer agent restart (its resync covers the pool node's
//    Pods); logs and exec reach it; unpeer and pool remove are refused with it,
//    --drain removes it.
// ctest runs each test in a process of its own, with fresh clusters.

#include <gtest/gtest.h>

#include <fstream>
#include <thread>
#include <nlohmann/json.hpp>

#include "e2e/offload_fixture.h"

namespace strait::e2e {
namespace {

using json = nlohmann::json;
using namespace std::chrono_literals;

constexpr const char* kGpuNode = "strait-cloud-gpu";
constexpr const char* kGeneralNode = "strait-cloud-general";

class OffloadPoolsTest : public OffloadSuite {
 public:
  static void SetUpTestSuite() {
    static TempDir dir("strait-pools");
    const std::string pools = dir.file("cloud-pools.yaml");
    std::ofstream(pools) << R"(pools:
- name: general
  count: 2
  capacity: {cpu: "8", memory: 16Gi, pods: "110"}
  labels: {strait.io/test-tier: general}
- name: gpu
  count: 2
  capacity: {cpu: "4", memory: 16Gi, pods: "110", nvidia.com/gpu: "2"}
  labels: {strait.io/test-gpu: "true", nvidia.com/gpu.product: A100}
)";
    OffloadSetup s;
    s.homeArgs = {"--nodes", "1", "--node-cpu", "2", "--node-memory", "8Gi"};
    s.cloudArgs = {"--node-pools", pools};
    s.peerArgs = {"--cpu", "2", "--memory", "4Gi", "--pods", "20",
                  "--pool", "general:cpu=4,memory=8Gi,pods=20@strait.io/test-tier=general",
                  "--pool", "gpu:cpu=2,memory=4Gi,pods=10,nvidia.com/gpu=1@strait.io/test-gpu=true"};
    s.namespaces = {};
    // NotReady 3 s after the provider agent goes away (PoolNodesFollowTheStreamHealth).
    s.homeAgentArgs = {"--vnode-stream-grace", "3s"};
    startAll(s);
  }
  static void TearDownTestSuite() { stopAll(); }

 protected:
  // The node's allocatable `resource`, "" when the node or the resource is absent.
  std::string allocatable(const std::string& node, const std::string& resource) {
    json n = getJson(*home_, {"get", "node", node});
    if (!n.is_object()) return "";
    return n.value("/status/allocatable"_json_pointer, json::object()).value(resource, "");
  }
  json labelsOf(const std::string& node) {
    json n = getJson(*home_, {"get", "node", node});
    return n.is_object() ? n.value("/metadata/labels"_json_pointer, json::object()) : json();
  }
};

TEST_F(OffloadPoolsTest, EachPoolIsAVirtualNodeWithItsCapacityAndLabels) {
  ASSERT_TRUE(waitFor([&] { return allocatable(kGpuNode, "nvidia.com/gpu") == "1"; }, 30s))
      << kubectl(*home_, {"get", "nodes", "-o", "wide"}).describe() << agentLogs();
  EXPECT_EQ(allocatable(kGpuNode, "cpu"), "2");
  EXPECT_EQ(allocatable(kGpuNode, "memory"), "4Gi");
  EXPECT_EQ(allocatable(kGpuNode, "pods"), "10");
  ASSERT_TRUE(waitFor([&] { return allocatable(kGeneralNode, "cpu") == "4"; }, 30s))
      << agentLogs();
  EXPECT_EQ(allocatable(kGeneralNode, "memory"), "8Gi");
  EXPECT_EQ(allocatable(kGeneralNode, "nvidia.com/gpu"), "");  // its nodes have none

  json gpu = labelsOf(kGpuNode);
  EXPECT_EQ(gpu.value("nvidia.com/gpu.product", ""), "A100") << gpu.dump();
  EXPECT_EQ(gpu.value("strait.io/test-gpu", ""), "true");
  EXPECT_EQ(gpu.value("strait.io/peering-pool", ""), "gpu");
  EXPECT_EQ(gpu.value("type", ""), "virtual-kubelet");
  EXPECT_EQ(gpu.value("kubernetes.io/hostname", ""), kGpuNode);
  json general = labelsOf(kGeneralNode);
  EXPECT_FALSE(general.contains("nvidia.com/gpu.product")) << general.dump();
  EXPECT_EQ(general.value("strait.io/test-tier", ""), "general");
  json taints = getJson(*home_, {"get", "node", kGpuNode}).value("/spec/taints"_json_pointer,
                                                                  json::array());
  bool tainted = false;
  for (const json& t : taints) {
    tainted = tainted || t.value("key", "") == "virtual-node.strait.io/not-allowed";
  }
  EXPECT_TRUE(tainted) << taints.dump();

  CommandResult list = strait({"pool", "list", "--kubeconfig", home_->kubeconfig(), "-o", "json"});
  ASSERT_EQ(list.exitCode, 0) << list.describe();
  json rows = json::parse(list.out);
  ASSERT_EQ(rows.size(), 2u) << list.out;
  for (const json& r : rows) {
    EXPECT_EQ(r.value("state", ""), "Granted") << r.dump();
    EXPECT_EQ(r.value("node", ""), "strait-cloud-" + r.value("pool", "")) << r.dump();
  }
  CommandResult status = strait({"status", "--kubeconfig", home_->kubeconfig(), "-o", "json"});
  ASSERT_EQ(status.exitCode, 0) << status.describe();
  json st = json::parse(status.out);
  ASSERT_EQ(st.size(), 1u);
  ASSERT_EQ(st[0]["pools"].size(), 2u) << status.out;
  EXPECT_EQ(st[0]["pools"][1]["nodeName"], kGpuNode);
  EXPECT_EQ(st[0]["pools"][1]["granted"]["nvidia.com/gpu"], "1");
  CommandResult table = strait({"status", "--kubeconfig", home_->kubeconfig()});
  EXPECT_NE(table.out.find(kGpuNode), std::string::npos) << table.out;

  // The provider lists the consumer's pools too.
  json fcs = getJson(*cloud_, {"get", "foreignclusters"});
  ASSERT_TRUE(fcs.is_object());
  ASSERT_EQ(fcs["items"].size(), 1u);
  EXPECT_EQ(fcs["items"][0].value("/status/pools"_json_pointer, json::array()).size(), 2u)
      << fcs.dump();
}

TEST_F(OffloadPoolsTest, ResizeChangesTheNodeCapacityInSeconds) {
  ASSERT_TRUE(waitFor([&] { return allocatable(kGpuNode, "cpu") == "2"; }, 30s)) << agentLogs();
  auto start = std::chrono::steady_clock::now();
  CommandResult r = strait({"pool", "resize", "cloud", "gpu:cpu=3", "--kubeconfig",
                            home_->kubeconfig()});
  ASSERT_EQ(r.exitCode, 0) << r.describe();
  EXPECT_NE(r.out.find("cpu=3"), std::string::npos) << r.out;
  ASSERT_TRUE(waitFor([&] { return allocatable(kGpuNode, "cpu") == "3"; }, 20s)) << agentLogs();
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::cout << "pool resize -> node capacity: " << seconds << " s\n";
  EXPECT_LT(seconds, 5.0);
  EXPECT_EQ(allocatable(kGpuNode, "nvidia.com/gpu"), "1");  // the others kept
  EXPECT_EQ(allocatable(kGeneralNode, "cpu"), "4");         // the other pool untouched

  CommandResult missing = strait({"pool", "resize", "cloud", "tpu:cpu=1", "--kubeconfig",
                                  home_->kubeconfig()});
  EXPECT_EQ(missing.exitCode, 1) << missing.describe();
  EXPECT_NE(missing.err.find("has no pool tpu (its pools: general, gpu)"), std::string::npos)
      << missing.err;
}

TEST_F(OffloadPoolsTest, RemoveIsRefusedWithPodsUnlessDrained) {
  ASSERT_TRUE(waitFor([&] { return allocatable(kGpuNode, "cpu") == "2"; }, 30s)) << agentLogs();
  ASSERT_EQ(kubectl(*home_, {"create", "namespace", "ml"}).exitCode, 0);
  json pod = {{"apiVersion", "v1"},
              {"kind", "Pod"},
              {"metadata", {{"name", "train"}, {"namespace", "ml"}}},
              {"spec",
               {{"nodeName", kGpuNode},
                {"terminationGracePeriodSeconds", 0},
                {"tolerations",
                 json::array({{{"key", "virtual-node.strait.io/not-allowed"},
                               {"operator", "Exists"}}})},
                {"containers", json::array({{{"name", "c"}, {"image", "busybox"}}})}}}};
  CommandResult created = kubectl(*home_, {"create", "-f", "-"}, pod.dump());
  ASSERT_EQ(created.exitCode, 0) << created.describe();

  CommandResult refused = strait({"pool", "remove", "cloud", "gpu", "--kubeconfig",
                                  home_->kubeconfig()});
  EXPECT_EQ(refused.exitCode, 1) << refused.describe();
  EXPECT_NE(refused.err.find("1 pod(s) run on its virtual node strait-cloud-gpu; use --drain"),
            std::string::npos)
      << refused.err;
  EXPECT_NE(refused.err.find("ml/train"), std::string::npos) << refused.err;
  // Nothing changed: the pool and its node stay, the node not cordoned.
  EXPECT_EQ(allocatable(kGpuNode, "cpu"), "2");
  EXPECT_FALSE(getJson(*home_, {"get", "node", kGpuNode}).value("/spec/unschedulable"_json_pointer,
                                                                false));

  CommandResult drained = strait({"pool", "remove", "cloud", "gpu", "--drain", "--timeout", "60s",
                                  "--kubeconfig", home_->kubeconfig()});
  ASSERT_EQ(drained.exitCode, 0) << drained.describe();
  EXPECT_NE(drained.out.find("cordoned node strait-cloud-gpu"), std::string::npos) << drained.out;
  EXPECT_NE(drained.out.find("drained 1 pod(s)"), std::string::npos) << drained.out;
  EXPECT_NE(kubectl(*home_, {"get", "pod", "train", "-n", "ml"}).exitCode, 0);
  EXPECT_TRUE(waitFor([&] { return kubectl(*home_, {"get", "node", kGpuNode}).exitCode != 0; },
                      20s))
      << "pool node not deleted" << agentLogs();
  EXPECT_EQ(allocatable(kGeneralNode, "cpu"), "4");
  CommandResult list = strait({"pool", "list", "cloud", "--kubeconfig", home_->kubeconfig(),
                               "-o", "json"});
  ASSERT_EQ(list.exitCode, 0) << list.describe();
  EXPECT_EQ(json::parse(list.out).size(), 1u) << list.out;
}

TEST_F(OffloadPoolsTest, PoolNodesFollowTheStreamHealth) {
  // "status reason" of the node's Ready condition.
  auto ready = [&](const std::string& node) {
    json n = getJson(*home_, {"get", "node", node});
    if (!n.is_object()) return std::string();
    for (const json& c : n.value("/status/conditions"_json_pointer, json::array())) {
      if (c.value("type", "") == "Ready") return c.value("status", "") + " " + c.value("reason", "");
    }
    return std::string();
  };
  auto isReady = [&](const std::string& node) { return ready(node).rfind("True", 0) == 0; };
  ASSERT_TRUE(waitFor([&] { return isReady(kGpuNode); }, 30s))
      << kubectl(*home_, {"get", "node", kGpuNode, "-o", "yaml"}).out << agentLogs();
  ASSERT_TRUE(waitFor([&] { return isReady(kGeneralNode); }, 30s))
      << kubectl(*home_, {"get", "node", kGeneralNode, "-o", "yaml"}).out << agentLogs();
  // The same kubelet endpoint as the peering's node (logs and exec of their Pods).
  auto port = [&](const std::string& node) {
    json n = getJson(*home_, {"get", "node", node});
    return n.is_object() ? n.value("/status/daemonEndpoints/kubeletEndpoint/Port"_json_pointer, 0)
                         : -1;
  };
  EXPECT_GT(port(kVirtualNode), 0);
  EXPECT_EQ(port(kGpuNode), port(kVirtualNode));

  // The provider agent gone: after the grace the pool nodes turn NotReady with the peering's
  // node, for the same reason; back when it returns.
  cloudAgent_->kill();
  EXPECT_TRUE(waitFor(
      [&] {
        const std::string v = ready(kVirtualNode);
        return v.rfind("False", 0) == 0 && ready(kGpuNode) == v && ready(kGeneralNode) == v;
      },
      30s))
      << ready(kVirtualNode) << " / " << ready(kGpuNode) << " / " << ready(kGeneralNode)
      << agentLogs();
  ASSERT_EQ(cloudAgent_->restart(), "");
  EXPECT_TRUE(waitFor(
      [&] { return isReady(kVirtualNode) && isReady(kGpuNode) && isReady(kGeneralNode); }, 60s))
      << ready(kVirtualNode) << " / " << ready(kGpuNode) << " / " << ready(kGeneralNode)
      << agentLogs();
}

TEST_F(OffloadPoolsTest, APodOnThePoolNodeRunsOnThePoolsProviderNodes) {
  ASSERT_TRUE(waitFor([&] { return allocatable(kGpuNode, "nvidia.com/gpu") == "1"; }, 30s))
      << agentLogs();
  ASSERT_EQ(offloadNamespace("ml"), "");
  // Scheduled by home's scheduler: only the GPU pool's node has the pool label and a GPU.
  json pod = {{"apiVersion", "v1"},
              {"kind", "Pod"},
              {"metadata", {{"name", "train"}, {"namespace", "ml"}}},
              {"spec",
               {{"terminationGracePeriodSeconds", 0},
                {"nodeSelector", {{"strait.io/peering-pool", "gpu"}}},
                {"tolerations",
                 json::array({{{"key", "virtual-node.strait.io/not-allowed"},
                               {"operator", "Exists"}}})},
                {"containers",
                 json::array({{{"name", "c"},
                               {"image", "busybox"},
                               {"resources",
                                {{"requests", {{"cpu", "500m"}, {"nvidia.com/gpu", "1"}}},
                                 {"limits", {{"nvidia.com/gpu", "1"}}}}}}})}}}};
  CommandResult created = kubectl(*home_, {"create", "-f", "-"}, pod.dump());
  ASSERT_EQ(created.exitCode, 0) << created.describe();

  auto local = [&] { return getJson(*home_, {"get", "pod", "train", "-n", "ml"}); };
  const std::string remoteNs = remoteNamespace("ml");
  auto remote = [&] { return getJson(*cloud_, {"get", "pod", "train", "-n", remoteNs}); };
  auto field = [](const json& o, const char* ptr) {
    return o.is_object() ? o.value(json::json_pointer(ptr), std::string()) : std::string();
  };
  auto diag = [&] {
    return kubectl(*home_, {"get", "pods", "-A", "-o", "wide"}).out +
           kubectl(*cloud_, {"get", "pods", "-A", "-o", "wide"}).out +
           kubectl(*home_, {"get", "events", "-n", "ml"}).out + agentLogs();
  };
  ASSERT_TRUE(waitFor(
      [&] {
        json l = local();
        return l.is_object() && l.value("/spec/nodeName"_json_pointer, "") == kGpuNode &&
               l.value("/status/phase"_json_pointer, "") == "Running";
      },
      60s))
      << diag();
  json r = remote();
  ASSERT_TRUE(r.is_object()) << diag();
  EXPECT_EQ(r.value("/metadata/labels/strait.io~1peering-pool"_json_pointer, ""), "gpu")
      << r.dump();
  EXPECT_EQ(r.value("/spec/nodeSelector/strait.io~1test-gpu"_json_pointer, ""), "true")
      << r.dump();
  const std::string providerNode = r.value("/spec/nodeName"_json_pointer, "");
  ASSERT_FALSE(providerNode.empty()) << r.dump();
  json pn = getJson(*cloud_, {"get", "node", providerNode});
  ASSERT_TRUE(pn.is_object());
  EXPECT_EQ(pn.value("/metadata/labels/strait.io~1test-gpu"_json_pointer, ""), "true")
      << "remote Pod placed on " << providerNode << ", not a GPU node";
  const std::string remoteUid = r.value("/metadata/uid"_json_pointer, "");
  ASSERT_FALSE(remoteUid.empty());

  // Logs and exec through the pool node's kubelet endpoint (the peering's kubelet API).
  CommandResult logs;
  EXPECT_TRUE(waitFor(
      [&] {
        logs = kubectl(*home_, {"logs", "-n", "ml", "train"});
        return logs.exitCode == 0 && logs.out.find("started") != std::string::npos;
      },
      30s))
      << logs.describe() << diag();
  CommandResult ex = kubectl(*home_, {"exec", "-n", "ml", "train", "--", "echo", "hi"});
  EXPECT_EQ(ex.exitCode, 0) << ex.describe();
  EXPECT_EQ(ex.out, "hi\n") << ex.describe();

  // A resize changes the node's capacity; the Pod keeps running, the same remote Pod.
  CommandResult resized = strait({"pool", "resize", "cloud", "gpu:cpu=3", "--kubeconfig",
                                  home_->kubeconfig()});
  ASSERT_EQ(resized.exitCode, 0) << resized.describe();
  ASSERT_TRUE(waitFor([&] { return allocatable(kGpuNode, "cpu") == "3"; }, 20s)) << agentLogs();
  std::this_thread::sleep_for(2s);  // a few reflection rounds after the change
  EXPECT_EQ(field(local(), "/status/phase"), "Running") << diag();
  EXPECT_EQ(field(remote(), "/metadata/uid"), remoteUid) << diag();

  // A consumer agent restart: its resync (and so the provider's orphan sweep) covers the
  // pool node's Pods, so the remote Pod is kept.
  auto resyncs = [&] {
    const std::string logs = homeAgent_->logs();
    size_t n = 0;
    for (size_t at = logs.find("event=resync_done "); at != std::string::npos;
         at = logs.find("event=resync_done ", at + 1)) {
      ++n;
    }
    return n;
  };
  const size_t before = resyncs();
  ASSERT_EQ(homeAgent_->restart(), "");
  ASSERT_TRUE(waitFor([&] { return resyncs() > before; }, 60s)) << agentLogs();
  std::this_thread::sleep_for(2s);  // the provider sweeps right after RESYNC_DONE
  EXPECT_EQ(field(remote(), "/metadata/uid"), remoteUid) << diag();
  EXPECT_EQ(field(local(), "/status/phase"), "Running") << diag();

  // The peering and the pool cannot end under it without --drain.
  CommandResult unpeer = strait({"unpeer", "--remote-name", "cloud", "--kubeconfig",
                                 home_->kubeconfig()});
  EXPECT_NE(unpeer.exitCode, 0) << unpeer.describe();
  EXPECT_NE(unpeer.err.find("ml/train"), std::string::npos) << unpeer.describe();
  EXPECT_EQ(field(remote(), "/metadata/uid"), remoteUid) << diag();
  CommandResult refused = strait({"pool", "remove", "cloud", "gpu", "--kubeconfig",
                                  home_->kubeconfig()});
  EXPECT_EQ(refused.exitCode, 1) << refused.describe();
  EXPECT_NE(refused.err.find("ml/train"), std::string::npos) << refused.err;
  CommandResult drained = strait({"pool", "remove", "cloud", "gpu", "--drain", "--timeout", "60s",
                                  "--kubeconfig", home_->kubeconfig()});
  ASSERT_EQ(drained.exitCode, 0) << drained.describe();
  EXPECT_TRUE(waitFor([&] { return !remote().is_object(); }, 30s))
      << "remote Pod left behind" << diag();
}

TEST_F(OffloadPoolsTest, BadPoolArgumentsAreRefusedNamingThem) {
  struct Case {
    std::vector<std::string> args;
    int exit;
    const char* says;
  };
  const std::string kc = home_->kubeconfig();
  for (const Case& c : std::vector<Case>{
           {{"pool", "add", "cloud", "GPU:cpu=1", "--kubeconfig", kc}, 2, "not a DNS label"},
           {{"pool", "add", "cloud", "gpu2", "--kubeconfig", kc}, 2, "no resources"},
           {{"pool", "add", "cloud", "gpu2:cpu=x", "--kubeconfig", kc}, 2, "resource \"cpu\""},
           {{"pool", "add", "cloud", "gpu2:cpu=1@zone", "--kubeconfig", kc}, 2,
            "expected KEY=VALUE"},
           {{"pool", "add", "cloud", "gpu:cpu=1", "--kubeconfig", kc}, 1,
            "already has a pool gpu"},
           {{"pool", "add", "nowhere", "x:cpu=1", "--kubeconfig", kc}, 1, "no peering nowhere"},
           {{"pool", "remove", "cloud", "tpu", "--kubeconfig", kc}, 1, "has no pool tpu"},
           {{"pool", "list", "--kubeconfig", kc, "-o", "yaml"}, 2, "yaml"}}) {
    CommandResult r = strait(c.args);
    EXPECT_EQ(r.exitCode, c.exit) << r.describe();
    EXPECT_NE((r.err + r.out).find(c.says), std::string::npos) << r.describe();
  }
}

}  // namespace
}  // namespace strait::e2e

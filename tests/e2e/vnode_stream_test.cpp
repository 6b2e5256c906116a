// Pod offloading over the real reflection stream: two `strait minicluster` processes ("home",
// the consumer, and "cloud", the provider), a real `strait agent` process on the provider
// serving Reflection.Stream over mTLS, and the consumer side (PodReflector + StreamClient)
// in the test process, joined to the provider with a real token like `strait peer` does.
// Covers: a Pod travels with its ConfigMap, its status and the provider's Events come back,
// a Pod beyond the grant gets the provider's refusal as its reason, deletion cleans both
// sides, an orphan is deleted only after the consumer's resync while a user's own Pod is left
// alone, and a partition (a TCP proxy cut and restored) fails calls in flight and afterwards
// applies only what changed meanwhile.

#include <gtest/gtest.h>

#include <cstdio>
#include <set>

#include "e2e/cluster_fixture.h"
#include "e2e/peering_fixture.h"
#include "e2e/tcp_proxy.h"
#include "kube/client.h"
#include "kube/informer.h"
#include "kube/kubeconfig.h"
#include "kube/object.h"
#include "kube/pki.h"
#include "peering/names.h"
#include "peering/token.h"
#include "peering/transport.h"
#include "reflection/labels.h"
#include "reflection/pod_reflector.h"
#include "reflection/stream_client.h"
#include "vnode/node_builder.h"

namespace strait::e2e {
namespace {

using json = nlohmann::json;
using namespace std::chrono_literals;
namespace res = kube::resources;

const std::string kConsumerId = "5e5e5e5e-1111-4222-8333-444455556666";
const std::string kRemoteNs = "web-" + kConsumerId;
const std::string kNode = "strait-cloud";

std::unique_ptr<kube::Client> clientFor(const std::string& kubeconfig) {
  auto cfg = kube::loadKubeconfig({{kubeconfig}, ""});
  if (!cfg.ok()) return nullptr;
  auto c = kube::newClient(*cfg);
  return c.ok() ? std::move(*c) : nullptr;
}

// What a join leaves the consumer with.
struct Credential {
  std::string endpoint;
  std::string caPem;
  std::string providerId;
  kube::KeyPair cert;
};

class VnodeStreamTest : public ::testing::Test {
 public:
  static void SetUpTestSuite() {
    home_ = new Minicluster();
    cloud_ = new Minicluster();
    agent_ = new AgentProcess();
    cred_ = new Credential();
    setupError_ = home_->start("home");
    if (setupError_.empty()) setupError_ = cloud_->start("cloud");
    if (setupError_.empty()) {
      setupError_ = agent_->start(cloud_->kubeconfig(), "cloud",
                                  {"--cert-ttl", "1h", "--budget", "cpu=10,memory=20Gi,pods=200",
                                   "--stream-keepalive", "200ms"});
    }
    if (setupError_.empty()) setupError_ = join();
  }
  static void TearDownTestSuite() {
    delete agent_;
    delete home_;
    delete cloud_;
    delete cred_;
  }

 protected:
  // Joins the provider as consumer kConsumerId asking for cpu=2: a token from `strait token`,
  // the pinned CA, a CSR, Peering.Join.
  static std::string join() {
    CommandResult t = runCommand({straitBinary(), "token", "--kubeconfig", cloud_->kubeconfig(),
                                  "--ttl", "1h"});
    if (t.exitCode != 0) return "strait token: " + t.describe();
    std::string text = t.out;
    while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.pop_back();
    auto token = peering::parseToken(text);
    if (!token.ok()) return token.error().message;
    auto ca = peering::fetchPinnedCa(token->endpoint, token->caFingerprint, 10s);
    if (!ca.ok()) return ca.error().message;
    auto kc = kube::makeKeyAndCsr(kConsumerId, {std::string(peering::kConsumerOrganization)});
    if (!kc.ok()) return kc.error().message;
    peering::ClientConfig cc{token->endpoint, *ca, peering::agentServerName(token->clusterId), {}};
    auto bootstrap = peering::makeRpcClient(cc);
    if (!bootstrap.ok()) return bootstrap.error().message;
    v1::JoinRequest req;
    req.set_token(text);
    req.set_consumer_id(kConsumerId);
    req.set_consumer_name("home");
    req.set_csr_pem(kc->csrPem);
    (*req.mutable_requested()->mutable_items())["cpu"] = "2";
    (*req.mutable_requested()->mutable_items())["memory"] = "4Gi";
    (*req.mutable_requested()->mutable_items())["pods"] = "20";
    v1::JoinResponse resp;
    if (kube::Status s = (*bootstrap)->join(req, &resp, 20s); !s.ok()) return s.error().message;
    *cred_ = {token->endpoint, *ca, token->clusterId, {resp.certificate_pem(), kc->keyPem}};
    return "";
  }

  void SetUp() override {
    ASSERT_EQ(setupError_, "") << setupError_;
    dir_ = std::make_unique<TempDir>("strait-stream-test");
    home = clientFor(home_->kubeconfig());
    cloud = clientFor(cloud_->kubeconfig());
    ASSERT_TRUE(home && cloud);
    (void)home->create(res::kNamespaces, "",
                       {{"apiVersion", "v1"}, {"kind", "Namespace"}, {"metadata", {{"name", "web"}}}});
  }

  void TearDown() override {
    stopConsumer();
    // Leave both clusters empty for the next test.
    for (const json& p : home->list(res::kPods, "web")->value("items", json::array())) {
      kube::DeleteOptions o;
      o.gracePeriodSeconds = 0;
      (void)home->remove(res::kPods, "web", kube::getName(p), o);
    }
    for (const json& p : cloud->list(res::kPods, kRemoteNs)->value("items", json::array())) {
      kube::DeleteOptions o;
      o.gracePeriodSeconds = 0;
      (void)cloud->remove(res::kPods, kRemoteNs, kube::getName(p), o);
    }
  }

  // The consumer side of the peering, in this process; through a TCP proxy when `viaProxy`.
  void startConsumer(bool viaProxy = false) {
    std::string endpoint = cred_->endpoint;
    if (viaProxy) {
      uint16_t port = static_cast<uint16_t>(std::stoi(endpoint.substr(endpoint.rfind(':') + 1)));
      proxy = std::make_unique<TcpProxy>(port);
      ASSERT_EQ(proxy->start(), "");
      endpoint = "127.0.0.1:" + std::to_string(proxy->port());
    }
    peering::ClientConfig cc{endpoint, cred_->caPem, peering::agentServerName(cred_->providerId),
                             cred_->cert};
    auto rpc = peering::makeRpcClient(cc);
    ASSERT_TRUE(rpc.ok());
    rpc_ = std::move(*rpc);
    reflection::NamespaceMapping mapping(kConsumerId, reflection::NamingStrategy::Default);
    localPods_ = std::make_unique<kube::Informer>(
        *home, kube::InformerOptions{res::kPods, "", "", "spec.nodeName=" + kNode});

    reflection::StreamClientOptions so;
    so.consumerId = kConsumerId;
    so.mapping = mapping;
    so.open = [this] { return rpc_->openStream(); };
    so.keepaliveInterval = 200ms;
    so.callTimeout = 10s;
    so.onConnected = [this] {
      connects++;
      // Re-list: every local Pod is handled again, then the provider may drop orphans.
      std::vector<std::string> uids;
      for (const kube::ObjectPtr& p : localPods_->cache().list()) {
        (void)reflector_.enqueue("Pod", kube::objectKey(*p));
        uids.push_back(kube::getUid(*p));
      }
      (void)stream->resyncDone(uids);
    };
    so.onRemoteChange = [this](const std::string& key) { (void)reflector_.enqueue("Pod", key); };
    so.onEvent = [this](const json& ev, const std::string& originUid) {
      std::lock_guard<std::mutex> l(mu_);
      events_.push_back({ev.value("reason", ""), originUid});
      eventMessages_.push_back({ev.value("reason", ""), ev.value("message", "")});
    };
    stream = std::make_unique<reflection::StreamClient>(so);

    reflection::PodReflectorOptions o;
    o.mapping = mapping;
    o.forge.consumerId = kConsumerId;
    o.forge.virtualNodeName = kNode;
    o.forge.virtualNodeAddress = "127.0.0.42";
    o.forge.virtualNodeLabelKeys = vnode::virtualNodeOwnLabelKeys();
    o.status.virtualNodeAddress = "127.0.0.42";
    o.resyncDone = [this] { return localPods_->hasSynced() && stream->remoteSynced(); };
    reflection::KindOptions ko;
    ko.workers = 4;
    ko.queue.baseDelay = 20ms;
    ko.queue.maxDelay = 1s;
    ASSERT_TRUE(reflector_
                    .registerKind(std::make_unique<reflection::PodReflector>(
                                      *home, localPods_->cache(), *stream, o),
                                  ko)
                    .ok());
    auto enqueue = [this](const kube::ObjectPtr& p) {
      (void)reflector_.enqueue("Pod", kube::objectKey(*p));
    };
    localPods_->addHandlers(
        {enqueue, [enqueue](const kube::ObjectPtr&, const kube::ObjectPtr& n) { enqueue(n); },
         enqueue});
    reflector_.start();
    localPods_->start();
    ASSERT_TRUE(localPods_->waitForSync(30s));
    stream->start();
    ASSERT_TRUE(waitFor([&] { return stream->remoteSynced(); }, 30s))
        << agent_->logs().substr(0, 3000);
  }

  void stopConsumer() {
    if (stream) stream->stop();
    if (localPods_) localPods_->stop();
    reflector_.stop();
    if (proxy) proxy->stop();
  }

  CommandResult kubectlHome(const std::vector<std::string>& args, const std::string& in = "") {
    return kubectlAt(*home_, args, in);
  }
  CommandResult kubectlAt(const Minicluster& c, const std::vector<std::string>& args,
                          const std::string& in = "") {
    std::vector<std::string> argv = {"kubectl", "--kubeconfig", c.kubeconfig()};
    argv.insert(argv.end(), args.begin(), args.end());
    Env env = {{"KUBECACHEDIR", dir_->path() + "/kcache" + std::to_string(++kubectlRuns_)},
               {"HOME", dir_->path()}};
    return runCommand(argv, env, 60s, in);
  }
  // Writes what the provider's kubelet would: Running with IPs.
  bool runRemote(const std::string& name) {
    auto r = cloud->get(res::kPods, kRemoteNs, name);
    if (!r.ok()) return false;
    json remote = *r;
    remote["status"] = json::parse(R"({"phase":"Running","hostIP":"192.168.7.3",
      "podIP":"10.244.3.7","podIPs":[{"ip":"10.244.3.7"}],
      "conditions":[{"type":"Ready","status":"True"}],
      "containerStatuses":[{"name":"app","image":"nginx:1","ready":true,"restartCount":0,
        "state":{"running":{"startedAt":"2026-11-30T05:00:01Z"}}}]})");
    return kube::updateStatus(*cloud, res::kPods, kRemoteNs, remote).ok();
  }
  std::string localPhase(const std::string& name) {
    auto p = home->get(res::kPods, "web", name);
    return p.ok() ? p->value("/status/phase"_json_pointer, std::string()) : "";
  }
  std::map<std::string, std::string> remoteUids() {
    std::map<std::string, std::string> out;
    auto l = cloud->list(res::kPods, kRemoteNs);
    if (!l.ok()) return out;
    for (const json& p : l->value("items", json::array())) {
      if (!kube::isBeingDeleted(p)) out[kube::getName(p)] = kube::getUid(p);
    }
    return out;
  }

  static inline Minicluster* home_ = nullptr;
  static inline Minicluster* cloud_ = nullptr;
  static inline AgentProcess* agent_ = nullptr;
  static inline Credential* cred_ = nullptr;
  static inline std::string setupError_;

  std::unique_ptr<TempDir> dir_;
  std::unique_ptr<kube::Client> home;
  std::unique_ptr<kube::Client> cloud;
  std::unique_ptr<TcpProxy> proxy;
  std::unique_ptr<peering::RpcClient> rpc_;
  std::unique_ptr<kube::Informer> localPods_;
  std::unique_ptr<reflection::StreamClient> stream;
  reflection::Reflector reflector_;
  std::atomic<int> connects{0};
  std::mutex mu_;
  std::vector<std::pair<std::string, std::string>> events_;  // reason, origin uid
  std::vector<std::pair<std::string, std::string>> eventMessages_;  // reason, message
  int kubectlRuns_ = 0;
};

// An object's metadata and status, or the error, for failure messages.
std::string describe(const kube::Result<json>& r) {
  if (!r.ok()) return r.error().message;
  return r->value("metadata", json::object()).dump() + " " +
         r->value("status", json::object()).dump();
}

const char* kConfigMap = R"({"apiVersion":"v1","kind":"ConfigMap",
  "metadata":{"name":"conf","namespace":"web"},"data":{"greeting":"hello"}})";

std::string podJson(const std::string& name, const std::string& cpu, bool withConfigMap = true) {
  json p = json::parse(R"({"apiVersion":"v1","kind":"Pod","metadata":{"namespace":"web",
    "labels":{"app":"web"}},
    "spec":{"terminationGracePeriodSeconds":5,
      "tolerations":[{"key":"virtual-node.strait.io/not-allowed","operator":"Exists","effect":"NoExecute"}],
      "containers":[{"name":"app","image":"nginx:1",
        "resources":{"requests":{"cpu":"100m","memory":"64Mi"}}}]}})");
  p["metadata"]["name"] = name;
  p["spec"]["nodeName"] = kNode;
  p["spec"]["containers"][0]["resources"]["requests"]["cpu"] = cpu;
  if (withConfigMap) {
    p["spec"]["containers"][0]["volumeMounts"] = json::parse(R"([{"name":"conf","mountPath":"/etc/conf"}])");
    p["spec"]["volumes"] = json::parse(R"([{"name":"conf","configMap":{"name":"conf"}}])");
  }
  return p.dump();
}

TEST_F(VnodeStreamTest, PodTravelsStatusAndEventsComeBackDeleteCleansBothSides) {
  startConsumer();
  ASSERT_EQ(kubectlHome({"apply", "-f", "-"}, kConfigMap).exitCode, 0);
  CommandResult c = kubectlHome({"apply", "-f", "-"}, podJson("web-1", "500m"));
  ASSERT_EQ(c.exitCode, 0) << c.describe();

  json remote;
  ASSERT_TRUE(waitFor([&] {
    auto r = cloud->get(res::kPods, kRemoteNs, "web-1");
    if (!r.ok()) return false;
    remote = *r;
    return true;
  }, 30s)) << agent_->logs().substr(0, 4000);
  auto local = home->get(res::kPods, "web", "web-1");
  ASSERT_TRUE(local.ok());
  EXPECT_EQ(reflection::originUid(remote), kube::getUid(*local));
  EXPECT_EQ(kube::getLabels(remote)["strait.io/origin-cluster-id"], kConsumerId);
  CommandResult cm = kubectlAt(*cloud_, {"get", "configmap", "conf", "-n", kRemoteNs, "-o",
                                         "jsonpath={.data.greeting}"});
  EXPECT_EQ(cm.out, "hello") << cm.describe();

  // The provider runs it; kubectl on the consumer shows it Running on the virtual node's IP.
  // Asked again after a Conflict (the provider's own writers may write the Pod meanwhile).
  ASSERT_TRUE(waitFor([&] { return runRemote("web-1"); }, 10s));
  CommandResult st;
  ASSERT_TRUE(waitFor([&] {
    st = kubectlHome({"get", "pod", "web-1", "-n", "web", "-o",
                      "jsonpath={.status.phase} {.status.podIP} {.status.hostIP}"});
    return st.out == "Running 10.244.3.7 127.0.0.42";
  }, 30s)) << st.describe() << agent_->logs().substr(0, 6000) << "\ncached: "
             << ::testing::PrintToString(stream->remotePods().size()) << " in="
             << stream->counters().messagesIn << " "
             << (stream->remotePods().count(kRemoteNs + "/web-1")
                     ? stream->remotePods()[kRemoteNs + "/web-1"].dump().substr(0, 3000)
                     : std::string("none"));

  // An Event about the remote Pod reaches the consumer with the local Pod's uid.
  json ev = {{"apiVersion", "v1"},
             {"kind", "Event"},
             {"metadata", {{"name", "web-1.pulled"}, {"namespace", kRemoteNs}}},
             {"involvedObject",
              {{"kind", "Pod"}, {"namespace", kRemoteNs}, {"name", "web-1"},
               {"uid", kube::getUid(remote)}}},
             {"reason", "Pulled"},
             {"message", "image pulled"},
             {"type", "Normal"}};
  ASSERT_TRUE(cloud->create(res::kEvents, kRemoteNs, ev).ok());
  ASSERT_TRUE(waitFor([&] {
    std::lock_guard<std::mutex> l(mu_);
    for (const auto& [reason, uid] : events_) {
      if (reason == "Pulled" && uid == kube::getUid(*local)) return true;
    }
    return false;
  }, 30s));

  // Delete on the consumer: the remote goes, then the local one is finished.
  CommandResult del = kubectlHome({"delete", "pod", "web-1", "-n", "web", "--wait=false"});
  ASSERT_EQ(del.exitCode, 0) << del.describe();
  ASSERT_TRUE(waitFor([&] {
    return cloud->get(res::kPods, kRemoteNs, "web-1").code() == kube::Code::NotFound &&
           home->get(res::kPods, "web", "web-1").code() == kube::Code::NotFound;
  }, 60s)) << "remote: " << describe(cloud->get(res::kPods, kRemoteNs, "web-1"))
           << "\nlocal: " << describe(home->get(res::kPods, "web", "web-1")) << "\n"
           << agent_->logs();
  CommandResult left = kubectlAt(*cloud_, {"get", "pods", "-n", kRemoteNs, "-o", "name"});
  EXPECT_EQ(left.out, "") << left.describe();

  reflection::StreamCounters counters = stream->counters();
  EXPECT_GE(counters.applies, 2u);  // the ConfigMap and the Pod
  EXPECT_GE(counters.deletes, 1u);
  EXPECT_GT(counters.bytesOut, 0u);
  EXPECT_GT(counters.bytesIn, 0u);
}

TEST_F(VnodeStreamTest, PodBeyondTheGrantCarriesTheProvidersRefusal) {
  startConsumer();
  // The grant is cpu=2: 3 CPUs are refused by the provider agent, and its message is the
  // local Pod's status message.
  ASSERT_EQ(kubectlHome({"apply", "-f", "-"}, podJson("big", "3", false)).exitCode, 0);
  CommandResult st;
  ASSERT_TRUE(waitFor([&] {
    st = kubectlHome({"get", "pod", "big", "-n", "web", "-o",
                      "jsonpath={.status.reason}|{.status.message}"});
    return st.out.rfind("ProviderRefused|", 0) == 0;
  }, 30s)) << st.describe() << agent_->logs().substr(0, 3000);
  EXPECT_NE(st.out.find("exceeds the grant"), std::string::npos) << st.out;
  EXPECT_EQ(cloud->get(res::kPods, kRemoteNs, "big").code(), kube::Code::NotFound);
}

TEST_F(VnodeStreamTest, OrphanDeletedAfterResyncUsersOwnPodLeftAlone) {
  // Before the consumer connects: a remote Pod claiming a local origin that does not exist,
  // and a user's own Pod in the same namespace.
  // The mapped namespace as an earlier reflection made it (owned by this consumer: the
  // provider refuses to reflect into a same-named namespace it did not create).
  ASSERT_TRUE(cloud->create(res::kNamespaces, "",
                            {{"apiVersion", "v1"},
                             {"kind", "Namespace"},
                             {"metadata",
                              {{"name", kRemoteNs},
                               {"labels",
                                {{std::string(reflection::kLabelManagedBy),
                                  std::string(reflection::kManagedByValue)},
                                 {std::string(reflection::kLabelOriginClusterId), kConsumerId},
                                 {std::string(reflection::kLabelOriginUid), "namespace"}}}}}})
                  .ok() ||
              cloud->get(res::kNamespaces, "", kRemoteNs).ok());
  json orphan = json::parse(R"({"apiVersion":"v1","kind":"Pod","metadata":{"name":"orphan",
    "labels":{"strait.io/origin-uid":"no-such-uid","strait.io/managed-by":"strait"}},
    "spec":{"containers":[{"name":"c","image":"i"}]}})");
  orphan["metadata"]["labels"]["strait.io/origin-cluster-id"] = kConsumerId;
  json foreign = json::parse(R"({"apiVersion":"v1","kind":"Pod","metadata":{"name":"users-own"},
    "spec":{"containers":[{"name":"c","image":"i"}]}})");
  ASSERT_TRUE(cloud->create(res::kPods, kRemoteNs, orphan).ok());
  ASSERT_TRUE(cloud->create(res::kPods, kRemoteNs, foreign).ok());
  ASSERT_EQ(kubectlHome({"apply", "-f", "-"}, podJson("keep", "100m", false)).exitCode, 0);

  startConsumer();
  ASSERT_TRUE(waitFor([&] {
    return cloud->get(res::kPods, kRemoteNs, "orphan").code() == kube::Code::NotFound &&
           cloud->get(res::kPods, kRemoteNs, "keep").ok();
  }, 30s)) << agent_->logs().substr(0, 3000);
  EXPECT_TRUE(cloud->get(res::kPods, kRemoteNs, "users-own").ok());
}

TEST_F(VnodeStreamTest, PartitionFailsCallsThenSyncsOnlyTheDifference) {
  startConsumer(/*viaProxy=*/true);
  for (const char* n : {"a", "b", "c"}) {
    ASSERT_EQ(kubectlHome({"apply", "-f", "-"}, podJson(n, "100m", false)).exitCode, 0);
  }
  ASSERT_TRUE(waitFor([&] { return remoteUids().size() == 3; }, 30s));
  for (const char* n : {"a", "b", "c"}) {
    ASSERT_TRUE(waitFor([&] { return runRemote(n); }, 10s));
  }
  ASSERT_TRUE(waitFor([&] {
    return localPhase("a") == "Running" && localPhase("b") == "Running" &&
           localPhase("c") == "Running";
  }, 30s));
  std::map<std::string, std::string> before = remoteUids();
  auto rvOfB = cloud->get(res::kPods, kRemoteNs, "b")->value("/metadata/resourceVersion"_json_pointer, std::string());
  ASSERT_EQ(connects.load(), 1);

  // Stream cost of offloading 3 Pods and bringing their Running status back (keepalives
  // included), for the README.
  reflection::StreamCounters cost = stream->counters();
  std::printf("stream cost for 3 pods: out %llu messages %llu bytes, in %llu messages %llu bytes\n",
              static_cast<unsigned long long>(cost.messagesOut),
              static_cast<unsigned long long>(cost.bytesOut),
              static_cast<unsigned long long>(cost.messagesIn),
              static_cast<unsigned long long>(cost.bytesIn));
  RecordProperty("bytes_out_per_pod", static_cast<int>(cost.bytesOut / 3));
  RecordProperty("bytes_in_per_pod", static_cast<int>(cost.bytesIn / 3));

  // Cut: calls fail, the client notices and keeps redialling.
  const uint64_t appliesBefore = stream->counters().applies;
  proxy->cut();
  ASSERT_TRUE(waitFor([&] { return !stream->connected(); }, 30s));
  EXPECT_EQ(stream->apply(reflection::StreamMessage::apply(
                              json::parse(R"({"apiVersion":"v1","kind":"ConfigMap","metadata":
                                {"name":"x","namespace":")" + kRemoteNs + R"("}})"),
                              "uid-x"))
                .code(),
            kube::Code::Unavailable);
  // Meanwhile on the consumer: one Pod changes, one is new, one is deleted.
  ASSERT_EQ(kubectlHome({"label", "pod", "a", "-n", "web", "tier=front"}).exitCode, 0);
  ASSERT_EQ(kubectlHome({"apply", "-f", "-"}, podJson("d", "100m", false)).exitCode, 0);
  ASSERT_EQ(kubectlHome({"delete", "pod", "c", "-n", "web", "--wait=false"}).exitCode, 0);
  // Local Pods stay as they were (Running) during the partition.
  EXPECT_EQ(localPhase("a"), "Running");
  EXPECT_EQ(localPhase("b"), "Running");

  proxy->resume();
  ASSERT_TRUE(waitFor([&] { return connects.load() == 2; }, 30s))
      << "agent running=" << agent_->running() << "\n" << agent_->logs();
  ASSERT_TRUE(waitFor([&] {
    auto a = cloud->get(res::kPods, kRemoteNs, "a");
    return a.ok() && kube::getLabels(*a)["tier"] == "front" &&
           cloud->get(res::kPods, kRemoteNs, "d").ok() &&
           cloud->get(res::kPods, kRemoteNs, "c").code() == kube::Code::NotFound &&
           home->get(res::kPods, "web", "c").code() == kube::Code::NotFound;
  }, 60s)) << agent_->logs().substr(0, 3000);
  std::map<std::string, std::string> after = remoteUids();
  // Nothing healthy was replaced: a and b are the same remote Pods, b untouched.
  EXPECT_EQ(after["a"], before["a"]);
  EXPECT_EQ(after["b"], before["b"]);
  EXPECT_EQ(cloud->get(res::kPods, kRemoteNs, "b")->value("/metadata/resourceVersion"_json_pointer, std::string()),
            rvOfB);
  EXPECT_EQ(localPhase("b"), "Running");
  // Only the difference was sent after the partition: a's update and d's creation (calls
  // during the partition fail before anything is sent; a lost reply may add one retry).
  uint64_t appliedAfter = stream->counters().applies - appliesBefore;
  EXPECT_GE(appliedAfter, 2u);
  EXPECT_LE(appliedAfter, 3u);
  RecordProperty("applies_after_reconnect", static_cast<int>(appliedAfter));
}

// The ConfigMaps and Secrets that travelled with a Pod are swept after the resync once no
// reflected Pod uses them and their origin is gone; one still used stays, and so does a
// user's own ConfigMap in the mapped namespace.
TEST_F(VnodeStreamTest, OrphanConfigMapsAndSecretsSweptAfterResyncUsedOnesStay) {
  startConsumer(/*viaProxy=*/true);
  for (const char* cm : {"gone-cm", "kept-cm"}) {
    json c = json::parse(kConfigMap);
    c["metadata"]["name"] = cm;
    ASSERT_EQ(kubectlHome({"apply", "-f", "-"}, c.dump()).exitCode, 0);
  }
  ASSERT_EQ(kubectlHome({"create", "secret", "generic", "gone-secret", "-n", "web",
                         "--from-literal", "k=v"})
                .exitCode,
            0);
  json p1 = json::parse(podJson("sweep-1", "100m", false));
  p1["spec"]["volumes"] = json::parse(R"([{"name":"c","configMap":{"name":"gone-cm"}},
    {"name":"s","secret":{"secretName":"gone-secret"}}])");
  json p2 = json::parse(podJson("sweep-2", "100m", false));
  p2["spec"]["volumes"] = json::parse(R"([{"name":"c","configMap":{"name":"kept-cm"}}])");
  ASSERT_EQ(kubectlHome({"apply", "-f", "-"}, p1.dump()).exitCode, 0);
  ASSERT_EQ(kubectlHome({"apply", "-f", "-"}, p2.dump()).exitCode, 0);
  ASSERT_TRUE(waitFor([&] {
    return cloud->get(res::kPods, kRemoteNs, "sweep-1").ok() &&
           cloud->get(res::kPods, kRemoteNs, "sweep-2").ok() &&
           cloud->get(res::kConfigMaps, kRemoteNs, "gone-cm").ok() &&
           cloud->get(res::kSecrets, kRemoteNs, "gone-secret").ok() &&
           cloud->get(res::kConfigMaps, kRemoteNs, "kept-cm").ok();
  }, 30s)) << agent_->logs().substr(0, 3000);
  json users = json::parse(R"({"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"users-cm"}})");
  ASSERT_TRUE(cloud->create(res::kConfigMaps, kRemoteNs, users).ok());

  // While the stream is cut, the Pod and what it used go on the consumer.
  proxy->cut();
  ASSERT_TRUE(waitFor([&] { return !stream->connected(); }, 30s));
  kube::DeleteOptions now;
  now.gracePeriodSeconds = 0;
  ASSERT_TRUE(home->remove(res::kPods, "web", "sweep-1", now).ok());
  ASSERT_TRUE(home->remove(res::kConfigMaps, "web", "gone-cm").ok());
  ASSERT_TRUE(home->remove(res::kSecrets, "web", "gone-secret").ok());
  proxy->resume();

  ASSERT_TRUE(waitFor([&] {
    return cloud->get(res::kConfigMaps, kRemoteNs, "gone-cm").code() == kube::Code::NotFound &&
           cloud->get(res::kSecrets, kRemoteNs, "gone-secret").code() == kube::Code::NotFound;
  }, 60s)) << agent_->logs();
  EXPECT_NE(agent_->logs().find("event=remote_orphan_deleted kind=ConfigMap"), std::string::npos);
  EXPECT_TRUE(cloud->get(res::kConfigMaps, kRemoteNs, "kept-cm").ok());
  EXPECT_TRUE(cloud->get(res::kConfigMaps, kRemoteNs, "users-cm").ok());
  EXPECT_TRUE(cloud->get(res::kPods, kRemoteNs, "sweep-2").ok());
}

// The provider's Events about a Pod raised while the stream is down arrive after the
// reconnection: the newest 256 of those not sent yet, never the older ones.
TEST_F(VnodeStreamTest, EventsDuringAPartitionArriveAfterReconnectNewest256) {
  startConsumer(/*viaProxy=*/true);
  ASSERT_EQ(kubectlHome({"apply", "-f", "-"}, podJson("ev", "100m", false)).exitCode, 0);
  json remote;
  ASSERT_TRUE(waitFor([&] {
    auto r = cloud->get(res::kPods, kRemoteNs, "ev");
    if (!r.ok()) return false;
    remote = *r;
    return true;
  }, 30s));
  auto eventAbout = [&](const std::string& name, const std::string& reason, const std::string& msg) {
    return json{{"apiVersion", "v1"},
                {"kind", "Event"},
                {"metadata", {{"name", name}, {"namespace", kRemoteNs}}},
                {"involvedObject",
                 {{"kind", "Pod"}, {"namespace", kRemoteNs}, {"name", "ev"},
                  {"uid", kube::getUid(remote)}}},
                {"reason", reason},
                {"message", msg},
                {"type", "Normal"}};
  };
  auto received = [&](const std::string& reason) {
    std::vector<std::string> out;
    std::lock_guard<std::mutex> l(mu_);
    for (const auto& [r, uid] : events_) {
      if (r == reason) out.push_back(uid);
    }
    return out;
  };
  ASSERT_TRUE(cloud->create(res::kEvents, kRemoteNs, eventAbout("ev.before", "BeforeCut", "")).ok());
  ASSERT_TRUE(waitFor([&] { return !received("BeforeCut").empty(); }, 30s));

  auto count = [&](const std::string& what) {
    const std::string logs = agent_->logs();
    size_t n = 0;
    for (size_t at = logs.find(what); at != std::string::npos; at = logs.find(what, at + 1)) ++n;
    return n;
  };
  const size_t endedBefore = count("event=stream_session_ended");
  proxy->cut();
  ASSERT_TRUE(waitFor([&] { return !stream->connected(); }, 30s));
  // 300 Events while the stream is down.
  for (int i = 0; i < 300; i++) {
    ASSERT_TRUE(cloud->create(res::kEvents, kRemoteNs,
                              eventAbout("ev.burst-" + std::to_string(i), "Burst", std::to_string(i)))
                    .ok());
  }
  // The provider notices the silence and ends the old session before the consumer is back.
  ASSERT_TRUE(waitFor([&] { return count("event=stream_session_ended") > endedBefore; }, 30s))
      << agent_->logs();
  const size_t backlogsBefore = count("event=stream_event_backlog_sent");
  {
    std::lock_guard<std::mutex> l(mu_);
    events_.clear();
    eventMessages_.clear();
  }
  proxy->resume();
  auto others = [&] {
    std::string out;
    std::lock_guard<std::mutex> l(mu_);
    for (const auto& [reason, message] : eventMessages_) {
      if (reason != "Burst") out += reason + ": " + message + "\n";
    }
    return out;
  };
  // The new session sends its backlog; the stream is ordered, so once two more messages
  // (keepalives) came after that, all of it is in.
  ASSERT_TRUE(waitFor([&] { return count("event=stream_event_backlog_sent") > backlogsBefore; }, 60s))
      << agent_->logs();
  const uint64_t in = stream->counters().messagesIn;
  ASSERT_TRUE(waitFor([&] { return stream->counters().messagesIn >= in + 2; }, 30s));
  // The newest 256 unsent Events: the cloud scheduler's FailedScheduling about the Pod (it
  // has no nodes; its Event is updated as it retries) may be among them, so the bursts are
  // the newest 250-256 of the 300, each once, never an older one.
  std::set<int> burst;
  size_t bursts = 0;
  {
    std::lock_guard<std::mutex> l(mu_);
    for (const auto& [reason, message] : eventMessages_) {
      if (reason != "Burst") continue;
      ++bursts;
      burst.insert(std::stoi(message));
    }
  }
  EXPECT_EQ(bursts, burst.size()) << others();
  EXPECT_GE(burst.size(), 250u) << others();
  EXPECT_LE(burst.size(), 256u);
  ASSERT_FALSE(burst.empty());
  EXPECT_EQ(*burst.rbegin() - *burst.begin() + 1, static_cast<int>(burst.size()));  // contiguous
  EXPECT_EQ(*burst.rbegin(), 299);
}

}  // namespace
}  // namespace strait::e2e

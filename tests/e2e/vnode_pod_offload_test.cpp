// Pod offloading between two real `strait minicluster` processes ("home", the consumer, and
// "cloud", the provider), with the consumer's pod reflector and the provider's applier
// wired in one process (the gRPC reflection stream between them is not built yet): a Pod
// bound to the virtual node is created in the provider's mapped namespace with its
// ConfigMap, the provider's status comes back (phase, pod IP, host IP = the virtual node's
// address), a too-large Pod gets its reason and an Event, deletion travels with its grace and
// leaves both sides empty, and an orphan remote Pod is removed while a user's own Pod in the
// same namespace is left alone.

#include <gtest/gtest.h>

#include "e2e/cluster_fixture.h"
#include "kube/client.h"
#include "kube/informer.h"
#include "kube/kubeconfig.h"
#include "kube/object.h"
#include "reflection/labels.h"
#include "reflection/pod_reflector.h"
#include "reflection/provider_applier.h"
#include "vnode/capacity.h"
#include "vnode/node_builder.h"

namespace strait::e2e {
namespace {

using json = nlohmann::json;
using namespace std::chrono_literals;
namespace res = kube::resources;

const std::string kConsumerId = "0c0ffee0-1111-4222-8333-444455556666";
const std::string kRemoteNs = "web-" + kConsumerId;

std::unique_ptr<kube::Client> clientFor(const std::string& kubeconfig) {
  auto cfg = kube::loadKubeconfig({{kubeconfig}, ""});
  if (!cfg.ok()) return nullptr;
  auto c = kube::newClient(*cfg);
  return c.ok() ? std::move(*c) : nullptr;
}

class VnodePodOffloadTest : public ClusterTest {
 protected:
  void SetUp() override {
    ClusterTest::SetUp();
    std::string err = cloud_.start("cloud");
    ASSERT_EQ(err, "") << err;
    home_ = clientFor(cluster().kubeconfig());
    provider_ = clientFor(cloud_.kubeconfig());
    ASSERT_TRUE(home_ && provider_);
    // Shared by the suite's tests: AlreadyExists after the first.
    (void)home_->create(res::kNamespaces, "",
                        {{"apiVersion", "v1"}, {"kind", "Namespace"}, {"metadata", {{"name", "web"}}}});

    reflection::NamespaceMapping mapping(kConsumerId, reflection::NamingStrategy::Default);
    applier_ = std::make_unique<reflection::ProviderApplier>(*provider_, mapping);

    localPods_ = std::make_unique<kube::Informer>(
        *home_, kube::InformerOptions{res::kPods, "", "", "spec.nodeName=strait-cloud"});
    remotePods_ = std::make_unique<kube::Informer>(
        *provider_, kube::InformerOptions{res::kPods, "",
                                          std::string(reflection::kLabelOriginClusterId) + "=" +
                                              kConsumerId,
                                          ""});

    vnode::ProviderSummary summary;
    summary.nodes = {{"cloud-1", *peering::parseResourceArg("cpu=2,memory=4Gi,pods=110")}};
    summary.pooledFree = *peering::parseResourceArg("cpu=8,memory=16Gi,pods=440");

    reflection::PodReflectorOptions o;
    o.mapping = mapping;
    o.forge.consumerId = kConsumerId;
    o.forge.virtualNodeName = "strait-cloud";
    o.forge.virtualNodeAddress = "127.0.0.42";
    o.forge.virtualNodeLabelKeys = vnode::virtualNodeOwnLabelKeys();
    o.status.virtualNodeAddress = "127.0.0.42";
    o.doesNotFit = [summary](const json& pod) {
      return vnode::doesNotFitReason(vnode::podRequests(pod), summary);
    };
    o.resyncDone = [this] { return localPods_->hasSynced(); };
    reflection::KindOptions ko;
    ko.workers = 4;
    ko.queue.baseDelay = 20ms;
    ko.queue.maxDelay = 2s;
    ASSERT_TRUE(reflector_
                    .registerKind(std::make_unique<reflection::PodReflector>(
                                      *home_, localPods_->cache(), *applier_, o),
                                  ko)
                    .ok());
    auto enqueueLocal = [this](const kube::ObjectPtr& p) {
      (void)reflector_.enqueue("Pod", kube::objectKey(*p));
    };
    localPods_->addHandlers({enqueueLocal,
                             [enqueueLocal](const kube::ObjectPtr&, const kube::ObjectPtr& n) {
                               enqueueLocal(n);
                             },
                             enqueueLocal});
    auto enqueueRemote = [this, mapping](const kube::ObjectPtr& p) {
      if (auto ns = mapping.localNamespace(kube::getNamespace(*p))) {
        (void)reflector_.enqueue("Pod", *ns + "/" + kube::getName(*p));
      }
    };
    remotePods_->addHandlers({enqueueRemote,
                              [enqueueRemote](const kube::ObjectPtr&, const kube::ObjectPtr& n) {
                                enqueueRemote(n);
                              },
                              enqueueRemote});
    reflector_.start();
    localPods_->start();
    remotePods_->start();
    ASSERT_TRUE(localPods_->waitForSync(30s));
    ASSERT_TRUE(remotePods_->waitForSync(30s));
  }

  void TearDown() override {
    if (localPods_) localPods_->stop();
    if (remotePods_) remotePods_->stop();
    reflector_.stop();
    cloud_.stop();
    ClusterTest::TearDown();
  }

  // Writes `status` on remote Pod `name` as the provider's kubelet does: onto the version just
  // read, and after a Conflict onto the version read again. The provider's own writers (its
  // scheduler marks a Pod it cannot place PodScheduled=False) may write it in between.
  kube::Result<json> writeRemoteStatus(const std::string& name, const json& status) {
    for (int attempt = 1;; ++attempt) {
      kube::Result<json> current = provider_->get(res::kPods, kRemoteNs, name);
      if (!current.ok()) return current.error();
      json pod = *current;
      pod["status"] = status;
      kube::Result<json> written = kube::updateStatus(*provider_, res::kPods, kRemoteNs, pod);
      if (written.ok() || !kube::isConflict(written.error()) || attempt == 10) return written;
    }
  }

  // kubectl against the provider.
  CommandResult kubectlCloud(const std::vector<std::string>& args) {
    std::vector<std::string> argv = {"kubectl", "--kubeconfig", cloud_.kubeconfig()};
    argv.insert(argv.end(), args.begin(), args.end());
    Env env = clientEnv();
    env["KUBECACHEDIR"] = testDir() + "/cloud-cache";
    return runCommand(argv, env);
  }

  Minicluster cloud_;
  std::unique_ptr<kube::Client> home_;
  std::unique_ptr<kube::Client> provider_;
  std::unique_ptr<reflection::ProviderApplier> applier_;
  std::unique_ptr<kube::Informer> localPods_;
  std::unique_ptr<kube::Informer> remotePods_;
  reflection::Reflector reflector_;
};

const char* kConfigMap = R"({"apiVersion":"v1","kind":"ConfigMap",
  "metadata":{"name":"conf","namespace":"web"},"data":{"greeting":"hello"}})";

std::string podYaml(const std::string& name, const std::string& cpu) {
  return R"({"apiVersion":"v1","kind":"Pod","metadata":{"name":")" + name +
         R"(","namespace":"web","labels":{"app":"web"}},
    "spec":{"nodeName":"strait-cloud","terminationGracePeriodSeconds":5,
      "tolerations":[{"key":"virtual-node.strait.io/not-allowed","operator":"Exists","effect":"NoExecute"}],
      "containers":[{"name":"app","image":"nginx:1",
        "resources":{"requests":{"cpu":")" + cpu + R"(","memory":"64Mi"}},
        "env":[{"name":"POD_IP","valueFrom":{"fieldRef":{"fieldPath":"status.podIP"}}},
               {"name":"NS","valueFrom":{"fieldRef":{"fieldPath":"metadata.namespace"}}}],
        "volumeMounts":[{"name":"conf","mountPath":"/etc/conf"}]}],
      "volumes":[{"name":"conf","configMap":{"name":"conf"}}]}})";
}

TEST_F(VnodePodOffloadTest, PodTravelsStatusComesBackDeleteCleansBothSides) {
  ASSERT_EQ(kubectl({"apply", "-f", "-"}, kConfigMap).exitCode, 0);
  CommandResult c = kubectl({"apply", "-f", "-"}, podYaml("web-1", "500m"));
  ASSERT_EQ(c.exitCode, 0) << c.describe();

  // The remote Pod appears in the mapped namespace, forged.
  json remote;
  ASSERT_TRUE(waitFor([&] {
    auto r = provider_->get(res::kPods, kRemoteNs, "web-1");
    if (!r.ok()) return false;
    remote = *r;
    return true;
  }, 30s)) << cloud_.serverLog().substr(0, 2000);
  auto localPod = home_->get(res::kPods, "web", "web-1");
  ASSERT_TRUE(localPod.ok());
  EXPECT_EQ(reflection::originUid(remote), kube::getUid(*localPod));
  EXPECT_EQ(kube::getLabels(remote)["strait.io/origin-cluster-id"], kConsumerId);
  EXPECT_FALSE(remote["spec"].contains("nodeName"));
  // The provider's admission may add its own default tolerations; ours for the virtual
  // node's taint must be gone.
  for (const json& t : remote["spec"].value("tolerations", json::array())) {
    EXPECT_NE(t.value("key", ""), "virtual-node.strait.io/not-allowed") << t.dump();
  }
  EXPECT_EQ(remote["spec"]["containers"][0]["env"][1]["value"], "web");
  EXPECT_EQ(remote["spec"]["containers"][0]["env"][0]["valueFrom"]["fieldRef"]["fieldPath"],
            "status.podIP");
  // Its ConfigMap travelled with it; kubectl on the provider sees both.
  CommandResult cm = kubectlCloud({"get", "configmap", "conf", "-n", kRemoteNs, "-o",
                                   "jsonpath={.data.greeting}"});
  EXPECT_EQ(cm.out, "hello") << cm.describe();

  // The provider's kubelet runs it (simulated here by writing the status it would write).
  auto written = writeRemoteStatus("web-1", json::parse(R"({"phase":"Running",
    "startTime":"2026-11-30T05:00:00Z",
    "hostIP":"192.168.7.3","podIP":"10.244.3.7","podIPs":[{"ip":"10.244.3.7"}],
    "conditions":[{"type":"Initialized","status":"True"},{"type":"ContainersReady","status":"True"},
                  {"type":"Ready","status":"True"},{"type":"PodScheduled","status":"True"}],
    "containerStatuses":[{"name":"app","image":"nginx:1","imageID":"docker.io/nginx@sha256:1",
      "ready":true,"started":true,"restartCount":0,
      "state":{"running":{"startedAt":"2026-11-30T05:00:01Z"}}}]})"));
  ASSERT_TRUE(written.ok()) << written.error().message;

  // kubectl on the consumer shows it Running with the pod IP, on the virtual node's address.
  CommandResult st;
  ASSERT_TRUE(waitFor([&] {
    st = kubectl({"get", "pod", "web-1", "-n", "web", "-o",
                  "jsonpath={.status.phase} {.status.podIP} {.status.hostIP} "
                  "{.status.containerStatuses[0].ready}"});
    return st.out == "Running 10.244.3.7 127.0.0.42 true";
  }, 30s)) << st.describe();

  // Delete on the consumer: the remote goes, then the local one is finished.
  CommandResult del = kubectl({"delete", "pod", "web-1", "-n", "web", "--wait=false"});
  ASSERT_EQ(del.exitCode, 0) << del.describe();
  ASSERT_TRUE(waitFor([&] {
    return provider_->get(res::kPods, kRemoteNs, "web-1").code() == kube::Code::NotFound &&
           home_->get(res::kPods, "web", "web-1").code() == kube::Code::NotFound;
  }, 60s));
  CommandResult left = kubectlCloud({"get", "pods", "-n", kRemoteNs, "-o", "name"});
  EXPECT_EQ(left.out, "") << left.describe();
}

TEST_F(VnodePodOffloadTest, TooLargePodGetsAReasonAndAnEvent) {
  ASSERT_EQ(kubectl({"apply", "-f", "-"}, kConfigMap).exitCode, 0);
  // 4 CPUs fit the pooled 8 but no single provider node (2 each).
  ASSERT_EQ(kubectl({"apply", "-f", "-"}, podYaml("big", "4")).exitCode, 0);
  CommandResult st;
  ASSERT_TRUE(waitFor([&] {
    st = kubectl({"get", "pod", "big", "-n", "web", "-o", "jsonpath={.status.reason}"});
    return st.out == "ProviderNodeTooSmall";
  }, 30s)) << st.describe();
  CommandResult msg = kubectl({"get", "pod", "big", "-n", "web", "-o", "jsonpath={.status.message}"});
  EXPECT_NE(msg.out.find("more than any single provider node"), std::string::npos) << msg.out;
  CommandResult ev;
  ASSERT_TRUE(waitFor([&] {
    ev = kubectl({"get", "events", "-n", "web", "--field-selector", "involvedObject.name=big",
                  "-o", "jsonpath={.items[*].reason}"});
    return ev.out.find("ProviderNodeTooSmall") != std::string::npos;
  }, 30s)) << ev.describe();
  EXPECT_EQ(provider_->get(res::kPods, kRemoteNs, "big").code(), kube::Code::NotFound);
}

TEST_F(VnodePodOffloadTest, OrphanRemovedForeignPodLeftAlone) {
  ASSERT_EQ(kubectl({"apply", "-f", "-"}, kConfigMap).exitCode, 0);
  ASSERT_EQ(kubectl({"apply", "-f", "-"}, podYaml("keep", "100m")).exitCode, 0);
  ASSERT_TRUE(waitFor([&] { return provider_->get(res::kPods, kRemoteNs, "keep").ok(); }, 30s));
  // A remote Pod that claims to mirror a local Pod that does not exist.
  json orphan = json::parse(R"({"apiVersion":"v1","kind":"Pod","metadata":{"name":"orphan",
    "labels":{"strait.io/origin-uid":"no-such-uid","strait.io/managed-by":"strait"}},
    "spec":{"containers":[{"name":"c","image":"i"}]}})");
  orphan["metadata"]["labels"]["strait.io/origin-cluster-id"] = kConsumerId;
  json foreign = json::parse(R"({"apiVersion":"v1","kind":"Pod","metadata":{"name":"users-own"},
    "spec":{"containers":[{"name":"c","image":"i"}]}})");
  ASSERT_TRUE(provider_->create(res::kPods, kRemoteNs, orphan).ok());
  ASSERT_TRUE(provider_->create(res::kPods, kRemoteNs, foreign).ok());
  ASSERT_TRUE(waitFor([&] {
    return provider_->get(res::kPods, kRemoteNs, "orphan").code() == kube::Code::NotFound;
  }, 30s));
  EXPECT_TRUE(provider_->get(res::kPods, kRemoteNs, "users-own").ok());
  EXPECT_TRUE(provider_->get(res::kPods, kRemoteNs, "keep").ok());
  // The applier refuses to touch the user's Pod even when asked directly.
  auto del = applier_->remove(reflection::StreamMessage::remove("Pod", kRemoteNs, "users-own",
                                                                "x", 0));
  EXPECT_EQ(del.code(), kube::Code::Conflict);
  // And a namespace that is not this consumer's is out of bounds.
  json elsewhere = orphan;
  elsewhere["metadata"]["namespace"] = "default";
  auto out = applier_->apply(reflection::StreamMessage::apply(elsewhere, "no-such-uid"));
  EXPECT_EQ(out.code(), kube::Code::Forbidden);
}

}  // namespace
}  // namespace strait::e2e

// Peering between two real miniclusters through two real `strait agent` processes, driven
// by the `strait` CLI and checked with the real kubectl.
#include <nlohmann/json.hpp>

#include <fstream>
#include <set>
#include <thread>

#include "e2e/peering_fixture.h"
#include "fakes/test_csr.h"
#include "kube/pki.h"
#include "peering/encoding.h"
#include "peering/foreign_cluster.h"
#include "peering/names.h"
#include "peering/token.h"
#include "peering/kubelet_transport.h"
#include "peering/transport.h"

namespace strait::e2e {
namespace {

using json = nlohmann::json;

class PeeringTest : public TwoClusterTest {
 protected:
  CommandResult peerInBand() {
    return strait({"peer", "--kubeconfig", consumer().kubeconfig(), "--remote-kubeconfig",
                   provider().kubeconfig(), "--cpu", "2", "--memory", "4Gi", "--pods", "20"});
  }
  CommandResult unpeerInBand(const std::vector<std::string>& extra = {}) {
    std::vector<std::string> args = {"unpeer", "--kubeconfig", consumer().kubeconfig(),
                                     "--remote-kubeconfig", provider().kubeconfig()};
    args.insert(args.end(), extra.begin(), extra.end());
    return strait(args);
  }
  std::string token(const std::string& ttl = "1h") {
    CommandResult r = strait({"token", "--kubeconfig", provider().kubeconfig(), "--ttl", ttl});
    EXPECT_EQ(r.exitCode, 0) << r.describe();
    std::string t = r.out;
    while (!t.empty() && (t.back() == '\n' || t.back() == ' ')) t.pop_back();
    return t;
  }
  std::string agentClusterId(const Minicluster& c) {
    CommandResult r = kubectlOn(c, {"get", "configmap", "-n", "strait-system", "strait-agent",
                                    "-o", "jsonpath={.data.clusterID}"});
    EXPECT_EQ(r.exitCode, 0) << r.describe();
    return r.out;
  }
  // The consumer's credential Secret for the provider, decoded.
  std::map<std::string, std::string> credential() {
    std::string providerId = agentClusterId(provider());
    CommandResult r = kubectlOn(consumer(), {"get", "secret", "-n", "strait-system",
                                             peering::credentialSecretName(providerId), "-o",
                                             "json"});
    std::map<std::string, std::string> out;
    if (r.exitCode != 0) return out;
    json s = json::parse(r.out);
    for (auto& [k, v] : s["data"].items()) out[k] = *peering::base64Decode(v.get<std::string>(), k);
    return out;
  }
};

TEST_F(PeeringTest, InBandPeeringShowsOnBothSidesAndUnpeerLeavesNothing) {
  CommandResult p = peerInBand();
  ASSERT_EQ(p.exitCode, 0) << p.describe();
  EXPECT_NE(p.out.find("peered with provider"), std::string::npos) << p.out;

  std::string consumerId = agentClusterId(consumer());
  // Provider: tenant namespace and a ForeignCluster for the consumer.
  CommandResult ns = kubectlOn(provider(), {"get", "namespace", "strait-tenant-" + consumerId});
  EXPECT_EQ(ns.exitCode, 0) << ns.describe();
  ASSERT_TRUE(waitFor(
      [&] {
        json c = onlyRow(consumer()), pr = onlyRow(provider());
        return c.is_object() && pr.is_object() && c["connected"] == "True" &&
               pr["connected"] == "True" && c["latencyMs"].is_number();
      },
      30s))
      << status(consumer()).dump(2) << status(provider()).dump(2);
  json c = onlyRow(consumer());
  EXPECT_EQ(c["role"], "Provider");
  EXPECT_EQ(c["remote"], "provider");
  EXPECT_EQ(c["granted"]["cpu"], "2");
  EXPECT_EQ(c["granted"]["memory"], "4Gi");
  // VNODE-READY agrees with the virtual Node's Ready condition.
  EXPECT_TRUE(waitFor(
      [&] {
        CommandResult r = kubectlOn(consumer(), {"get", "node", "strait-provider", "-o",
                                                 "jsonpath={.status.conditions[?(@.type==\"Ready\")].status}"});
        const std::string want = r.exitCode == 0 && r.out == "True" ? "True" : "False";
        return onlyRow(consumer()).value("virtualNodeReady", "") == want;
      },
      10s))
      << status(consumer()).dump(2);
  json pr = onlyRow(provider());
  EXPECT_EQ(pr["role"], "Consumer");
  EXPECT_EQ(pr["clusterID"], consumerId);
  EXPECT_EQ(pr["granted"]["pods"], "20");
  // The table form and the CRD through the user's kubectl.
  CommandResult table = strait({"status", "--kubeconfig", consumer().kubeconfig()});
  EXPECT_NE(table.out.find("CONNECTED"), std::string::npos) << table.out;
  EXPECT_NE(table.out.find("2/4Gi/20"), std::string::npos) << table.out;
  CommandResult fc = kubectlOn(consumer(), {"get", "foreignclusters"});
  EXPECT_EQ(fc.exitCode, 0) << fc.describe();
  EXPECT_NE(fc.out.find("provider"), std::string::npos) << fc.out;

  CommandResult u = unpeerInBand();
  ASSERT_EQ(u.exitCode, 0) << u.describe();
  expectNothingLeft();
  EXPECT_EQ(status(consumer()).size(), 0u);
}

TEST_F(PeeringTest, OutOfBandPeeringWithTokenAndUnpeerByName) {
  std::string t = token();
  ASSERT_EQ(t.rfind("strait1.", 0), 0u) << t;
  CommandResult p = strait({"peer", "--kubeconfig", consumer().kubeconfig(), "--token", t,
                            "--resource", "nvidia.com/gpu=1"});
  ASSERT_EQ(p.exitCode, 0) << p.describe();
  ASSERT_TRUE(waitFor([&] { return onlyRow(consumer()).value("connected", "") == "True"; }, 30s));
  // The budget has no GPUs: nothing granted of them, the rest as asked.
  json c = onlyRow(consumer());
  EXPECT_EQ(c["granted"]["nvidia.com/gpu"], "0");
  EXPECT_EQ(c["granted"]["cpu"], "4");
  CommandResult u = strait({"unpeer", "--kubeconfig", consumer().kubeconfig(), "--remote-name",
                            "provider"});
  ASSERT_EQ(u.exitCode, 0) << u.describe();
  expectNothingLeft();
}

TEST_F(PeeringTest, PeerWithTokenFileKeepsTheTokenOffTheCommandLine) {
  TempDir dir("strait-token-file");
  CommandResult missing = strait({"peer", "--kubeconfig", consumer().kubeconfig(),
                                  "--token-file", dir.file("absent")});
  EXPECT_NE(missing.exitCode, 0);
  EXPECT_NE(missing.err.find("--token-file " + dir.file("absent") + ": cannot be read"),
            std::string::npos) << missing.describe();
  {
    std::ofstream empty(dir.file("empty"));
    empty << "\n";
  }
  CommandResult blank = strait({"peer", "--kubeconfig", consumer().kubeconfig(),
                                "--token-file", dir.file("empty")});
  EXPECT_NE(blank.exitCode, 0);
  EXPECT_NE(blank.err.find("file is empty"), std::string::npos) << blank.describe();

  std::string t = token();
  {
    std::ofstream f(dir.file("token"));
    f << t << "\n";  // as `strait token > FILE` writes it
  }
  CommandResult both = strait({"peer", "--kubeconfig", consumer().kubeconfig(), "--token", t,
                               "--token-file", dir.file("token")});
  EXPECT_NE(both.exitCode, 0);
  EXPECT_NE(both.err.find("exactly one of"), std::string::npos) << both.describe();

  CommandResult p = strait({"peer", "--kubeconfig", consumer().kubeconfig(), "--token-file",
                            dir.file("token")});
  ASSERT_EQ(p.exitCode, 0) << p.describe();
  ASSERT_TRUE(waitFor([&] { return onlyRow(consumer()).value("connected", "") == "True"; }, 30s));
  ASSERT_EQ(unpeerInBand().exitCode, 0);
  expectNothingLeft();
}

TEST_F(PeeringTest, EveryBadTokenIsRefusedSayingWhy) {
  auto peerWith = [&](const std::string& tok) {
    return strait({"peer", "--kubeconfig", consumer().kubeconfig(), "--token", tok, "--timeout",
                   "30s"});
  };
  // A token that expires in 1 s, issued first: it has expired by the time it is used below,
  // after the other cases.
  std::string shortLived = token("1s");
  auto issued = std::chrono::system_clock::now();
  // Malformed.
  CommandResult m = peerWith("not-a-token");
  EXPECT_NE(m.exitCode, 0);
  EXPECT_NE(m.err.find("malformed"), std::string::npos) << m.describe();
  // Altered: one character of the integrity check changed (the provider says so), and one
  // of the payload (refused, as altered or as malformed if it no longer decodes).
  std::string t = token();
  std::string altered = t;
  size_t pos = altered.size() - 10;
  altered[pos] = altered[pos] == 'A' ? 'B' : 'A';
  CommandResult a = peerWith(altered);
  EXPECT_NE(a.exitCode, 0);
  EXPECT_NE(a.err.find("altered"), std::string::npos) << a.describe();
  std::string payloadAltered = t;
  payloadAltered[20] = payloadAltered[20] == 'A' ? 'B' : 'A';
  CommandResult pa = peerWith(payloadAltered);
  EXPECT_NE(pa.exitCode, 0);
  EXPECT_TRUE(pa.err.find("altered") != std::string::npos ||
              pa.err.find("malformed") != std::string::npos)
      << pa.describe();
  // Expired.
  waitFor([&] { return std::chrono::system_clock::now() > issued + 2s; }, 10s, 100ms);
  CommandResult e = peerWith(shortLived);
  EXPECT_NE(e.exitCode, 0);
  EXPECT_NE(e.err.find("expired"), std::string::npos) << e.describe();
  // Reused: works once, then "already used" (even after unpeering).
  CommandResult first = peerWith(t);
  ASSERT_EQ(first.exitCode, 0) << first.describe();
  ASSERT_EQ(unpeerInBand().exitCode, 0);
  CommandResult again = peerWith(t);
  EXPECT_NE(again.exitCode, 0);
  EXPECT_NE(again.err.find("already used"), std::string::npos) << again.describe();
  expectNothingLeft();
}

// An idle peering writes the consumer's ForeignCluster status when something in it changed,
// and only every 10 s otherwise (not once per 1 s heartbeat), yet keeps it fresh.
TEST_F(PeeringTest, IdleConsumerStatusIsWrittenOnlyWhenItChangesOrIsTenSecondsOld) {
  ASSERT_EQ(peerInBand().exitCode, 0);
  ASSERT_TRUE(waitFor(
      [&] {
        json c = onlyRow(consumer());
        return c.is_object() && c["connected"] == "True" && c["latencyMs"].is_number();
      },
      30s))
      << status(consumer()).dump(2);
  auto fc = [&] {
    CommandResult r = kubectlOn(consumer(), {"get", "foreignclusters", "provider", "-o", "json"});
    return r.exitCode == 0 ? json::parse(r.out) : json();
  };
  // Over 8 s of 1 s heartbeats (8 writes when each heartbeat wrote): a refresh and what
  // still settles after the first heartbeat (the provider's status, the tunnel condition).
  std::set<std::string> versions;
  const auto until = std::chrono::steady_clock::now() + 8s;
  while (std::chrono::steady_clock::now() < until) {
    versions.insert(fc().value("/metadata/resourceVersion"_json_pointer, std::string()));
    std::this_thread::sleep_for(500ms);
  }
  EXPECT_LE(versions.size(), 4u) << fc().dump(2);
  // Still refreshed: lastHeartbeatTime moves within the refresh period.
  const std::string before = fc().value("/status/lastHeartbeatTime"_json_pointer, std::string());
  EXPECT_TRUE(waitFor(
      [&] { return fc().value("/status/lastHeartbeatTime"_json_pointer, std::string()) > before; },
      15s))
      << fc().dump(2);
  ASSERT_EQ(unpeerInBand().exitCode, 0);
}

TEST_F(PeeringTest, ClientCertificateRenewsBeforeExpiry) {
  ASSERT_EQ(peerInBand().exitCode, 0);
  std::string first = credential()["tls.crt"];
  ASSERT_FALSE(first.empty());
  auto firstInfo = kube::certificateInfo(first);
  ASSERT_TRUE(firstInfo.ok());
  // --cert-ttl 8s: renewed after ~5.3 s, long before the old one expires.
  std::string renewed;
  ASSERT_TRUE(waitFor(
      [&] {
        renewed = credential()["tls.crt"];
        return !renewed.empty() && renewed != first;
      },
      30s, 200ms));
  auto renewedInfo = kube::certificateInfo(renewed);
  ASSERT_TRUE(renewedInfo.ok());
  EXPECT_GT(renewedInfo->notAfter, firstInfo->notAfter);
  EXPECT_EQ(renewedInfo->commonName, agentClusterId(consumer()));
  // Still connected on the new certificate, after the first one expired.
  waitFor([&] { return std::chrono::system_clock::now() > firstInfo->notAfter + 1s; }, 30s, 200ms);
  auto before = std::chrono::system_clock::now();
  EXPECT_TRUE(waitFor(
      [&] {
        json c = onlyRow(consumer());
        return c.is_object() && c["connected"] == "True" &&
               c.value("lastHeartbeatTime", "") >= peering::rfc3339(before);
      },
      20s))
      << status(consumer()).dump(2);
  ASSERT_EQ(unpeerInBand().exitCode, 0);
  expectNothingLeft();
}

TEST_F(PeeringTest, ForceUnpeerWithProviderAgentDownThenProviderCleansUp) {
  ASSERT_EQ(peerInBand().exitCode, 0);
  ASSERT_TRUE(waitFor([&] { return onlyRow(consumer()).value("connected", "") == "True"; }, 30s));
  providerAgent().kill();
  // The consumer notices the lost provider (--lost-after 1s).
  EXPECT_TRUE(waitFor([&] { return onlyRow(consumer()).value("connected", "") == "False"; }, 20s))
      << status(consumer()).dump(2);
  // Graceful unpeer refuses; --force parts and leaves a revocation record.
  CommandResult graceful = unpeerInBand({"--timeout", "10s"});
  EXPECT_NE(graceful.exitCode, 0);
  EXPECT_NE(graceful.err.find("--force"), std::string::npos) << graceful.describe();
  CommandResult forced = unpeerInBand({"--force", "--timeout", "20s"});
  ASSERT_EQ(forced.exitCode, 0) << forced.describe();
  EXPECT_NE(forced.out.find("revocation record"), std::string::npos) << forced.out;
  EXPECT_TRUE(labelledObjects(consumer()).empty());
  EXPECT_FALSE(labelledObjects(provider()).empty());  // tenant namespace, record: still there
  ASSERT_EQ(providerAgent().restart(), "");
  expectNothingLeft();
}

TEST_F(PeeringTest, ForceUnpeerByNameIsDeliveredWhenTheProviderAgentReturns) {
  ASSERT_EQ(peerInBand().exitCode, 0);
  providerAgent().kill();
  CommandResult forced = strait({"unpeer", "--kubeconfig", consumer().kubeconfig(),
                                 "--remote-name", "provider", "--force", "--timeout", "20s"});
  ASSERT_EQ(forced.exitCode, 0) << forced.describe();
  EXPECT_NE(forced.out.find("pending revocation"), std::string::npos) << forced.out;
  EXPECT_TRUE(labelledObjects(consumer()).empty());
  EXPECT_FALSE(labelledObjects(provider()).empty());
  ASSERT_EQ(providerAgent().restart(), "");  // same port: the recorded endpoint still works
  expectNothingLeft();
  // The pending record itself is gone once delivered.
  EXPECT_TRUE(waitFor(
      [&] {
        CommandResult r = kubectlOn(consumer(), {"get", "secrets", "-n", "strait-system", "-l",
                                                 "strait.io/component=revocation-pending",
                                                 "-o", "name"});
        return r.exitCode == 0 && r.out.empty();
      },
      30s));
}

// Hand-made requests with the consumer's stored credential, one per RPC that is left: the
// reflection stream writes only inside the consumer's bounds (never the provider's own or
// another consumer's namespaces, never a Pod pinned to a node or beyond the grant or the Pod
// Security level), the kubelet calls see only the consumer's own Pods, and a certificate for
// the same name from another CA gets no connection at all.
TEST_F(PeeringTest, ConsumerIdentityActsOnlyInsideItsBounds) {
  ASSERT_EQ(peerInBand().exitCode, 0);
  auto cred = credential();
  ASSERT_FALSE(cred["tls.key"].empty());
  std::string providerId = agentClusterId(provider());
  std::string consumerId = agentClusterId(consumer());
  peering::ClientConfig cc;
  cc.endpoint = cred["endpoint"];
  cc.serverCaPem = cred["ca.crt"];
  cc.serverName = peering::agentServerName(providerId);
  cc.clientCert = {cred["tls.crt"], cred["tls.key"]};
  auto rpc = peering::makeRpcClient(cc);
  ASSERT_TRUE(rpc.ok());
  auto stream = (*rpc)->openStream();
  ASSERT_TRUE(stream.ok());
  uint64_t seq = 0;
  // One APPLY of `obj` (labelled as this consumer's); the REPLY's error reason ("" when it
  // succeeded) and message, or the object as stored.
  struct Reply {
    std::string reason, message;
    json stored;
  };
  auto apply = [&](json obj) -> Reply {
    obj["metadata"]["labels"]["strait.io/origin-cluster-id"] = consumerId;
    obj["metadata"]["labels"]["strait.io/origin-uid"] = "uid-" + obj["metadata"]["name"].get<std::string>();
    obj["metadata"]["labels"]["strait.io/managed-by"] = "strait";
    v1::ReflectionEvent e;
    e.set_type("APPLY");
    e.set_seq(++seq);
    e.set_origin_uid("uid-" + obj["metadata"]["name"].get<std::string>());
    e.mutable_object()->set_api_version("v1");
    e.mutable_object()->set_kind(obj["kind"].get<std::string>());
    e.mutable_object()->set_namespace_(obj["metadata"]["namespace"].get<std::string>());
    e.mutable_object()->set_name(obj["metadata"]["name"].get<std::string>());
    e.mutable_object()->set_json(obj.dump());
    if (!(*stream)->write(e)) return {"StreamBroken", "", nullptr};
    const auto deadline = std::chrono::steady_clock::now() + 20s;
    v1::ReflectionEvent r;
    while (std::chrono::steady_clock::now() < deadline && (*stream)->read(&r)) {
      if (r.type() == "REPLY" && r.seq() == e.seq()) {
        return {r.error_reason(), r.error_message(),
                json::parse(r.object().json().empty() ? "null" : r.object().json())};
      }
    }
    return {"NoReply", "", nullptr};
  };
  auto configMap = [](const std::string& ns, const std::string& name) {
    return json{{"apiVersion", "v1"}, {"kind", "ConfigMap"},
                {"metadata", {{"name", name}, {"namespace", ns}}}, {"data", {{"k", "v"}}}};
  };
  EXPECT_EQ(apply(configMap("web-" + consumerId, "cm1")).reason, "");
  for (const std::string& ns :
       std::vector<std::string>{"default", "kube-system", "strait-system", "strait-tenant-other",
                                "strait-tenant-" + consumerId}) {
    Reply r = apply(configMap(ns, "evil"));
    EXPECT_EQ(r.reason, "Forbidden") << ns << ": " << r.message;
  }
  EXPECT_NE(kubectlOn(provider(), {"get", "configmap", "-n", "default", "evil"}).exitCode, 0);
  EXPECT_NE(kubectlOn(provider(), {"get", "namespace", "strait-tenant-other"}).exitCode, 0);
  // A kind that is not reflected never gets to the applier.
  json node = configMap("web-" + consumerId, "n");
  node["kind"] = "Node";
  EXPECT_EQ(apply(node).reason, "BadRequest");
  // Pods: pinned to a node -> unpinned; privileged -> refused; beyond the grant -> refused.
  auto pod = [&](const std::string& name, const std::string& cpu) {
    return json{{"apiVersion", "v1"}, {"kind", "Pod"},
                {"metadata", {{"name", name}, {"namespace", "web-" + consumerId}}},
                {"spec", {{"containers", {{{"name", "c"}, {"image", "busybox"},
                                          {"resources", {{"requests", {{"cpu", cpu}}}}}}}}}}};
  };
  json pinned = pod("pinned", "500m");
  pinned["spec"]["nodeName"] = "chosen-node";
  pinned["spec"]["nodeSelector"] = {{"kubernetes.io/hostname", "chosen-node"}};
  // (The consumer agent's own resync may sweep these Pods soon after: the REPLY shows them
  // as the provider stored them.)
  Reply pinnedReply = apply(pinned);
  ASSERT_EQ(pinnedReply.reason, "") << pinnedReply.message;
  const json& storedPod = pinnedReply.stored;
  ASSERT_TRUE(storedPod.is_object());
  EXPECT_EQ(storedPod.value("/metadata/name"_json_pointer, std::string()), "pinned");
  EXPECT_NE(storedPod.value("/spec/nodeName"_json_pointer, std::string()), "chosen-node");
  EXPECT_FALSE(storedPod["spec"].contains("nodeSelector")) << storedPod["spec"].dump();
  json root = pod("root", "100m");
  root["spec"]["hostNetwork"] = true;
  root["spec"]["volumes"] = {{{"name", "root"}, {"hostPath", {{"path", "/"}}}}};
  Reply rootReply = apply(root);
  EXPECT_EQ(rootReply.reason, "Forbidden");
  EXPECT_EQ(rootReply.message, "pods \"root\" is forbidden: violates PodSecurity \"baseline:latest\": "
                         "host namespaces (hostNetwork=true), hostPath volumes (volume \"root\")");
  EXPECT_NE(kubectlOn(provider(), {"get", "pod", "root", "-n", "web-" + consumerId}).exitCode, 0);
  // The grant is cpu=2 here.
  EXPECT_EQ(apply(pod("p1", "1")).reason, "");
  Reply beyond = apply(pod("p2", "2500m"));
  EXPECT_EQ(beyond.reason, "Forbidden");
  EXPECT_NE(beyond.message.find("exceeds the grant: cpu requested 2500m"), std::string::npos)
      << beyond.message;
  (*stream)->cancel();
  // Kubelet calls: a Pod of the provider's own (kube-system, or a namespace this consumer
  // does not own) is not found for this consumer; ListPods lists only its own Pods.
  std::shared_ptr<peering::KubeletClient> kubelet = (*rpc)->kubelet();
  ASSERT_TRUE(kubelet);
  ASSERT_EQ(kubectlOn(provider(), {"create", "namespace", "theirs"}).exitCode, 0);
  ASSERT_EQ(kubectlOn(provider(), {"run", "secret-pod", "-n", "theirs", "--image", "busybox",
                                   "--restart", "Never"})
                .exitCode,
            0);
  // And a Pod of the provider's user in the consumer's own mapped namespace, not reflected.
  ASSERT_EQ(kubectlOn(provider(), {"run", "intruder", "-n", "web-" + consumerId, "--image",
                                   "busybox", "--restart", "Never"})
                .exitCode,
            0);
  for (const auto& [ns, name] : std::vector<std::pair<std::string, std::string>>{
           {"theirs", "secret-pod"}, {"kube-system", "secret-pod"}, {"web", "intruder"}}) {
    v1::LogsRequest lr;
    lr.set_namespace_(ns);
    lr.set_pod(name);
    std::string got;
    kube::Status logs = kubelet->logs(
        lr,
        [&](std::string_view d) {
          got += d;
          return true;
        },
        [] { return false; });
    EXPECT_EQ(logs.code(), kube::Code::NotFound)
        << ns << ": " << (logs.ok() ? "" : logs.error().message);
    EXPECT_TRUE(got.empty());
  }
  auto exec = kubelet->exec();
  ASSERT_TRUE(exec.ok());
  v1::ExecFrame start;
  start.mutable_start()->set_namespace_("theirs");
  start.mutable_start()->set_pod("secret-pod");
  start.mutable_start()->add_command("cat");
  start.mutable_start()->set_stdout(true);
  ASSERT_TRUE((*exec)->write(start));
  (*exec)->writesDone();
  v1::ExecFrame frame;
  std::string stdoutText;
  while ((*exec)->read(&frame)) {
    if (frame.has_stdout()) stdoutText += frame.stdout();
  }
  EXPECT_EQ((*exec)->finish().code(), kube::Code::NotFound);
  EXPECT_TRUE(stdoutText.empty());
  v1::ListPodsResponse listed;
  ASSERT_TRUE(kubelet->listPods(&listed, 10s).ok());
  json list = json::parse(listed.pod_list_json());
  std::set<std::string> names;
  for (const json& p : list.value("items", json::array())) names.insert(p["metadata"]["name"]);
  EXPECT_EQ(names.count("secret-pod"), 0u) << list.dump();
  EXPECT_EQ(names.count("intruder"), 0u) << list.dump();
  v1::StatsSummaryResponse stats;
  ASSERT_TRUE(kubelet->statsSummary(&stats, 10s).ok());
  EXPECT_EQ(stats.summary_json().find("secret-pod"), std::string::npos) << stats.summary_json();
  EXPECT_EQ(stats.summary_json().find("\"theirs"), std::string::npos) << stats.summary_json();
  // RenewCertificate signs only for the caller's own name.
  v1::RenewRequest renew;
  renew.set_csr_pem(strait::testing::makeTestCsr("another-consumer", "", ""));
  v1::RenewResponse renewed;
  kube::Status renewal = (*rpc)->renewCertificate(renew, &renewed, 10s);
  EXPECT_EQ(renewal.code(), kube::Code::Forbidden);
  EXPECT_TRUE(renewed.certificate_pem().empty());
  // A certificate for the same name from another CA (the consumer's own) gets no connection.
  auto otherCa = kube::makeCa("not-the-provider");
  auto forged = kube::issueCert(*otherCa, consumerId, {"strait:consumers"}, {}, {}, false);
  cc.clientCert = *forged;
  auto forgedRpc = peering::makeRpcClient(cc);
  v1::HeartbeatResponse hb;
  EXPECT_EQ((*forgedRpc)->heartbeat({}, &hb, 10s).code(), kube::Code::Unavailable);
  ASSERT_EQ(unpeerInBand().exitCode, 0);
  // Once unpeered, the still unexpired certificate opens nothing.
  v1::HeartbeatResponse late;
  EXPECT_EQ((*rpc)->heartbeat({}, &late, 10s).code(), kube::Code::Forbidden);
  auto lateStream = (*rpc)->openStream();
  ASSERT_TRUE(lateStream.ok());
  v1::ReflectionEvent ev;
  EXPECT_FALSE((*lateStream)->read(&ev));
  EXPECT_EQ((*lateStream)->status().code(), kube::Code::Forbidden);
  expectNothingLeft();
}

TEST_F(PeeringTest, IdentityIsKeptAcrossRestarts) {
  std::string before = agentClusterId(provider());
  ASSERT_EQ(providerAgent().restart(), "");
  EXPECT_EQ(agentClusterId(provider()), before);
}

// Peers with a token, then searches everything both agents logged (in this process: the
// whole suite when run together, this test alone under ctest) for the token, its secret and
// the consumer's private key.
TEST_F(PeeringTest, TokensAndKeysNeverAppearInLogs) {
  std::string t = token();
  CommandResult p = strait({"peer", "--kubeconfig", consumer().kubeconfig(), "--token", t});
  ASSERT_EQ(p.exitCode, 0) << p.describe();
  auto cred = credential();
  auto parsed = peering::parseToken(t);
  ASSERT_TRUE(parsed.ok());
  std::string logs = consumerAgent().logs() + providerAgent().logs();
  ASSERT_FALSE(logs.empty());
  EXPECT_EQ(logs.find(t), std::string::npos);
  EXPECT_EQ(logs.find(parsed->secret.reveal()), std::string::npos);
  EXPECT_EQ(logs.find(t.substr(8, 40)), std::string::npos);
  EXPECT_EQ(logs.find("PRIVATE KEY"), std::string::npos);
  EXPECT_EQ(logs.find("strait1."), std::string::npos);
  std::string keyBody = cred["tls.key"];
  ASSERT_GT(keyBody.size(), 100u);
  EXPECT_EQ(logs.find(keyBody.substr(40, 40)), std::string::npos);
  ASSERT_EQ(unpeerInBand().exitCode, 0);
  expectNothingLeft();
}

}  // namespace
}  // namespace strait::e2e

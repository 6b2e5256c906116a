// The tunnel negotiation (peering/network.h) between two NetworkControllers over real gRPC
// with mutual TLS, each storing its state in its own real `strait minicluster` (key Secret,
// ForeignCluster status, fabric ConfigMap). The gateways are recording GatewayPorts: what is
// checked here is what each side asks of its gateway and writes to its cluster; the traffic
// through real gateways is the fabric's end-to-end test.
#include <gtest/gtest.h>

#include <map>
#include <mutex>

#include "e2e/cluster_fixture.h"
#include "kube/client.h"
#include "kube/kubeconfig.h"
#include "kube/object.h"
#include "kube/pki.h"
#include "peering/encoding.h"
#include "peering/foreign_cluster.h"
#include "peering/names.h"
#include "peering/network.h"
#include "peering/transport.h"

namespace strait::e2e {
namespace {

using json = nlohmann::json;
using namespace std::chrono_literals;
using peering::TunnelCondition;

kube::WriteOptions statusWrite() {
  kube::WriteOptions wo;
  wo.subresource = "status";
  return wo;
}

// A gateway that records its peers. Thread-safe.
class RecordingGateway : public peering::GatewayPort {
 public:
  explicit RecordingGateway(const tunnel::PrivateKey& key) : pub_(*tunnel::publicKeyOf(key)) {}
  tunnel::PublicKey publicKey() const override {
    std::lock_guard<std::mutex> l(mu_);
    return pub_;
  }
  base::Status upsertPeer(const std::string& name, const tunnel::GatewayPeer& peer) override {
    std::lock_guard<std::mutex> l(mu_);
    peers_[name] = peer;
    ++upserts_;
    return base::Status::OK();
  }
  bool removePeer(const std::string& name) override {
    std::lock_guard<std::mutex> l(mu_);
    return peers_.erase(name) > 0;
  }
  std::optional<tunnel::GatewayPeerStatus> peerStatus(const std::string& name) const override {
    std::lock_guard<std::mutex> l(mu_);
    if (!peers_.count(name)) return std::nullopt;
    return status_;
  }
  base::Status setPrivateKey(const tunnel::PrivateKey& key) override {
    std::lock_guard<std::mutex> l(mu_);
    pub_ = *tunnel::publicKeyOf(key);
    return base::Status::OK();
  }
  std::optional<tunnel::GatewayPeer> peer(const std::string& name) const {
    std::lock_guard<std::mutex> l(mu_);
    auto it = peers_.find(name);
    if (it == peers_.end()) return std::nullopt;
    return it->second;
  }
  size_t peerCount() const {
    std::lock_guard<std::mutex> l(mu_);
    return peers_.size();
  }
  int upserts() const {
    std::lock_guard<std::mutex> l(mu_);
    return upserts_;
  }
  void setStatus(const tunnel::GatewayPeerStatus& s) {
    std::lock_guard<std::mutex> l(mu_);
    status_ = s;
  }

 private:
  mutable std::mutex mu_;
  tunnel::PublicKey pub_;
  std::map<std::string, tunnel::GatewayPeer> peers_;
  tunnel::GatewayPeerStatus status_;
  int upserts_ = 0;
};

// The provider's Peering service, reduced to Network (the rest of the peering is tested
// elsewhere): the caller's certificate CommonName is its cluster ID, as in the agent.
class NetworkOnlyHandler : public peering::PeeringHandler {
 public:
  kube::Status join(const peering::Caller&, const v1::JoinRequest&, v1::JoinResponse*) override {
    return kube::makeError(kube::Code::MethodNotAllowed, "no");
  }
  kube::Status renewCertificate(const peering::Caller&, const v1::RenewRequest&,
                                v1::RenewResponse*) override {
    return kube::makeError(kube::Code::MethodNotAllowed, "no");
  }
  kube::Status heartbeat(const peering::Caller&, const v1::HeartbeatRequest&,
                         v1::HeartbeatResponse*) override {
    return kube::makeError(kube::Code::MethodNotAllowed, "no");
  }
  kube::Status unpeer(const peering::Caller&, const v1::UnpeerRequest&,
                      v1::UnpeerResponse*) override {
    return kube::makeError(kube::Code::MethodNotAllowed, "no");
  }
  kube::Status network(const peering::Caller& c, const v1::NetworkRequest& req,
                       v1::NetworkResponse* resp) override {
    std::lock_guard<std::mutex> l(mu_);
    if (!controller) return peering::PeeringHandler::network(c, req, resp);
    callers.push_back(c.clusterId);
    return controller->serveConsumer(c.clusterId, "home", mode, req, resp);
  }
  std::mutex mu_;
  peering::NetworkController* controller = nullptr;
  std::string mode = "push";
  std::vector<std::string> callers;
};

class NetworkNegotiationTest : public ::testing::Test {
 public:
  static void SetUpTestSuite() {
    home_ = new Minicluster();
    cloud_ = new Minicluster();
    setupError_ = home_->start("home", 60s, {"--nodes", "2"});
    if (setupError_.empty()) setupError_ = cloud_->start("cloud");
  }
  static void TearDownTestSuite() {
    delete home_;
    delete cloud_;
    home_ = cloud_ = nullptr;
  }

 protected:
  static constexpr const char* kHomeId = "11111111-1111-4111-8111-111111111111";
  static constexpr const char* kCloudId = "22222222-2222-4222-8222-222222222222";

  void SetUp() override {
    ASSERT_EQ(setupError_, "");
    homeClient_ = clientFor(*home_);
    cloudClient_ = clientFor(*cloud_);
    ASSERT_TRUE(homeClient_ && cloudClient_);
    prepare(*homeClient_, "cloud", kCloudId, peering::kRoleProvider);
    prepare(*cloudClient_, "home", kHomeId, peering::kRoleConsumer);
    homeId_ = {kHomeId, "home", *kube::makeCa("home-ca"), {}};
    cloudId_ = {kCloudId, "cloud", *kube::makeCa("cloud-ca"), {}};
    // The provider's gRPC server (mTLS) and the consumer's client certificate from its CA.
    kube::KeyPair leaf = *kube::issueCert(cloudId_.ca, "agent", {},
                                          {peering::agentServerName(kCloudId)}, {}, true);
    peering::ServerConfig sc;
    sc.listen = "127.0.0.1:0";
    sc.serverCert = {leaf.certPem + cloudId_.ca.certPem, leaf.keyPem};
    sc.clientCaPem = cloudId_.ca.certPem;
    auto server = peering::startRpcServer(sc, handler_);
    ASSERT_TRUE(server.ok()) << server.error().message;
    server_ = std::move(*server);
    kube::KeyPair client = *kube::issueCert(cloudId_.ca, kHomeId, {}, {}, {}, false);
    peering::ClientConfig cc;
    cc.endpoint = "127.0.0.1:" + std::to_string(server_->port());
    cc.serverCaPem = cloudId_.ca.certPem;
    cc.serverName = peering::agentServerName(kCloudId);
    cc.clientCert = client;
    auto rpc = peering::makeRpcClient(cc);
    ASSERT_TRUE(rpc.ok()) << rpc.error().message;
    rpc_ = std::move(*rpc);
  }
  void TearDown() override {
    {
      std::lock_guard<std::mutex> l(handler_.mu_);
      handler_.controller = nullptr;
    }
    if (server_) server_->shutdown(1s);
  }

  static std::unique_ptr<kube::Client> clientFor(const Minicluster& c) {
    auto cfg = kube::loadKubeconfig({{c.kubeconfig()}, ""});
    if (!cfg.ok()) return nullptr;
    auto client = kube::newClient(*cfg);
    return client.ok() ? std::move(*client) : nullptr;
  }

  // strait-system, the CRD and a fresh ForeignCluster `name` for the remote; no key Secret,
  // no fabric ConfigMap (each test starts from a cluster without tunnel state).
  static void prepare(kube::Client& c, const std::string& name, const std::string& remoteId,
                      std::string_view role) {
    (void)c.create(kube::resources::kNamespaces, "",
                   {{"apiVersion", "v1"},
                    {"kind", "Namespace"},
                    {"metadata", {{"name", std::string(peering::kSystemNamespace)}}}});
    (void)c.create(peering::kCrds, "", peering::foreignClusterCrd());
    auto deadline = std::chrono::steady_clock::now() + 30s;
    while (!c.list(peering::kForeignClusters, "").ok() &&
           std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(50ms);
    }
    const std::string sys(peering::kSystemNamespace);
    (void)c.remove(kube::resources::kSecrets, sys, std::string(peering::kGatewayKeySecret));
    (void)c.remove(kube::resources::kConfigMaps, sys, std::string(peering::kFabricConfigMap));
    for (const json& fc : c.list(peering::kForeignClusters, "")->value("items", json::array())) {
      (void)c.remove(peering::kForeignClusters, "", kube::getName(fc));
    }
    deadline = std::chrono::steady_clock::now() + 30s;
    while (c.get(peering::kForeignClusters, "", name).ok() &&
           std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(50ms);
    }
    kube::Result<json> made = c.create(
        peering::kForeignClusters, "",
        peering::makeForeignCluster(name, remoteId, name, std::string(role), "127.0.0.1:1"));
    ASSERT_TRUE(made.ok()) << made.error().message;
  }

  // A controller whose gateway is a RecordingGateway (kept in *gateway).
  std::unique_ptr<peering::NetworkController> controller(
      const peering::ClusterIdentity& id, kube::Client& c, peering::NetworkConfig cfg,
      RecordingGateway** gateway) {
    cfg.startGateway = [gateway](const tunnel::PrivateKey& key, const std::string&) {
      auto g = std::make_unique<RecordingGateway>(key);
      *gateway = g.get();
      return kube::Result<std::unique_ptr<peering::GatewayPort>>(
          std::unique_ptr<peering::GatewayPort>(std::move(g)));
    };
    auto n = std::make_unique<peering::NetworkController>(id, c, std::move(cfg));
    kube::Status s = n->start();
    EXPECT_TRUE(s.ok()) << s.error().message;
    return n;
  }
  static peering::NetworkConfig gatewayConfig(const std::string& podCidr,
                                              const std::string& endpoint) {
    peering::NetworkConfig cfg;
    cfg.gateway = true;
    cfg.podCidr = podCidr;
    cfg.endpoint = endpoint;
    cfg.probeAddress = podCidr.substr(0, podCidr.rfind('.')) + ".1";
    cfg.retryInterval = 0ms;
    return cfg;
  }
  void serve(peering::NetworkController* provider, const std::string& mode = "push") {
    std::lock_guard<std::mutex> l(handler_.mu_);
    handler_.controller = provider;
    handler_.mode = mode;
  }
  static json network(kube::Client& c, const std::string& fcName) {
    kube::Result<json> fc = c.get(peering::kForeignClusters, "", fcName);
    return fc.ok() ? fc->value("/status/network"_json_pointer, json::object()) : json();
  }

  static Minicluster* home_;
  static Minicluster* cloud_;
  static std::string setupError_;
  std::unique_ptr<kube::Client> homeClient_, cloudClient_;
  peering::ClusterIdentity homeId_, cloudId_;
  NetworkOnlyHandler handler_;
  std::unique_ptr<peering::RpcServer> server_;
  std::unique_ptr<peering::RpcClient> rpc_;
};

Minicluster* NetworkNegotiationTest::home_ = nullptr;
Minicluster* NetworkNegotiationTest::cloud_ = nullptr;
std::string NetworkNegotiationTest::setupError_;

TEST_F(NetworkNegotiationTest, SamePodCidrOnBothSidesIsRemappedOnBothAndStoredWithThePeering) {
  RecordingGateway* homeGw = nullptr;
  RecordingGateway* cloudGw = nullptr;
  auto cloud = controller(cloudId_, *cloudClient_, gatewayConfig("10.244.0.0/16", "127.0.0.1:51002"),
                          &cloudGw);
  auto home = controller(homeId_, *homeClient_, gatewayConfig("10.244.0.0/16", "127.0.0.1:51001"),
                         &homeGw);
  ASSERT_TRUE(homeGw && cloudGw);
  serve(cloud.get(), "pull");
  auto now = std::chrono::system_clock::now();
  home->onProviderHeartbeat(kCloudId, "cloud", *rpc_, cloud->digestFor(kHomeId), false, now);

  // The key Secret exists on both sides and the offer carries its public key.
  for (kube::Client* c : {homeClient_.get(), cloudClient_.get()}) {
    kube::Result<json> key = c->get(kube::resources::kSecrets, "strait-system",
                                    std::string(peering::kGatewayKeySecret));
    ASSERT_TRUE(key.ok());
    EXPECT_TRUE(key->value("/data/privateKey"_json_pointer, std::string()).size() > 40);
  }
  // The consumer sees the provider's pods under 10.240.0.0/16 and the provider the consumer's
  // the same way (each in its own cluster); each gateway got the other's key and endpoint.
  std::optional<tunnel::GatewayPeer> toCloud = homeGw->peer(kCloudId);
  ASSERT_TRUE(toCloud);
  EXPECT_EQ(toCloud->cidr.toString(), "10.244.0.0/16");
  ASSERT_TRUE(toCloud->seenAs);
  EXPECT_EQ(toCloud->seenAs->toString(), "10.240.0.0/16");
  EXPECT_EQ(toCloud->publicKey, cloudGw->publicKey());
  ASSERT_TRUE(toCloud->endpoint);
  EXPECT_EQ(toCloud->endpoint->toString(), "127.0.0.1:51002");
  EXPECT_EQ(toCloud->probeTarget, "10.244.0.1");
  EXPECT_EQ(toCloud->persistentKeepalive, 0);
  std::optional<tunnel::GatewayPeer> toHome = cloudGw->peer(kHomeId);
  ASSERT_TRUE(toHome);
  EXPECT_EQ(toHome->publicKey, homeGw->publicKey());
  ASSERT_TRUE(toHome->seenAs);
  EXPECT_EQ(toHome->seenAs->toString(), "10.240.0.0/16");
  ASSERT_TRUE(toHome->endpoint);
  EXPECT_EQ(toHome->endpoint->toString(), "127.0.0.1:51001");
  EXPECT_EQ(toHome->persistentKeepalive, 25);  // pull mode: the provider keeps NAT open
  // Pod IPs of the other side, in this side's view.
  EXPECT_EQ(home->state().toLocalView(kCloudId, "10.244.3.9"), "10.240.3.9");
  EXPECT_EQ(cloud->state().toLocalView(kHomeId, "10.244.1.5"), "10.240.1.5");
  EXPECT_EQ(home->state().condition(kCloudId).reason, "Handshaking");

  // Stored with the peering, on both sides.
  json h = network(*homeClient_, "cloud");
  EXPECT_EQ(h.value("localCIDR", ""), "10.244.0.0/16");
  EXPECT_EQ(h.value("remoteCIDR", ""), "10.244.0.0/16");
  EXPECT_EQ(h.value("remoteCIDRSeenHere", ""), "10.240.0.0/16");
  EXPECT_EQ(h.value("localCIDRSeenThere", ""), "10.240.0.0/16");
  EXPECT_EQ(h.value("remapped", false), true);
  EXPECT_EQ(h.value("remoteEndpoint", ""), "127.0.0.1:51002");
  EXPECT_EQ(h.value("remotePublicKey", ""), tunnel::keyToBase64(cloudGw->publicKey()));
  json c = network(*cloudClient_, "home");
  EXPECT_EQ(c.value("remoteCIDRSeenHere", ""), "10.240.0.0/16");
  EXPECT_EQ(c.value("localCIDRSeenThere", ""), "10.240.0.0/16");
  EXPECT_EQ(c.value("remotePublicKey", ""), tunnel::keyToBase64(homeGw->publicKey()));

  // Nothing changed: the next heartbeat does not negotiate again.
  const int upserts = homeGw->upserts();
  home->onProviderHeartbeat(kCloudId, "cloud", *rpc_, cloud->digestFor(kHomeId), false, now);
  EXPECT_EQ(homeGw->upserts(), upserts);

  // The gateway says up: TunnelUp True and the counters in the status.
  tunnel::GatewayPeerStatus st;
  st.lastHandshakeUnix =
      std::chrono::duration_cast<std::chrono::seconds>(now.time_since_epoch()).count() - 5;
  st.rxBytes = 1234;
  st.txBytes = 5678;
  st.rtt = std::chrono::microseconds(1500);
  st.lastProbeAnswer = now;
  st.up = true;
  homeGw->setStatus(st);
  home->tick(now);
  EXPECT_TRUE(home->state().condition(kCloudId).up);
  EXPECT_EQ(home->state().condition(kCloudId).reason, "TunnelEstablished");
  h = network(*homeClient_, "cloud");
  EXPECT_EQ(h.value("rxBytes", 0), 1234);
  EXPECT_EQ(h.value("txBytes", 0), 5678);
  EXPECT_DOUBLE_EQ(h.value("tunnelLatencyMs", 0.0), 1.5);
  EXPECT_EQ(h.value("latestHandshakeTime", ""), peering::rfc3339(std::chrono::system_clock::time_point(
                                                    std::chrono::seconds(st.lastHandshakeUnix))));
  // No handshake for 3 minutes: down, saying so.
  st.up = false;
  st.lastHandshakeUnix -= 200;
  homeGw->setStatus(st);
  home->tick(now + 2s);
  EXPECT_FALSE(home->state().condition(kCloudId).up);
  EXPECT_EQ(home->state().condition(kCloudId).reason, "HandshakeMissing");

  // Unpeer: both peers and views go.
  home->forget(kCloudId);
  cloud->forget(kHomeId);
  EXPECT_EQ(homeGw->peerCount(), 0u);
  EXPECT_EQ(cloudGw->peerCount(), 0u);
  EXPECT_EQ(home->state().toLocalView(kCloudId, "10.244.3.9"), "10.244.3.9");
}

TEST_F(NetworkNegotiationTest, TheStoredRemapSurvivesARestartAndKeyRotationRenegotiates) {
  RecordingGateway* homeGw = nullptr;
  RecordingGateway* cloudGw = nullptr;
  // The consumer chose 10.243.0.0/16 in an earlier life (not the lowest free prefix).
  kube::Result<json> patched = homeClient_->patch(
      peering::kForeignClusters, "", "cloud", kube::PatchType::Merge,
      json{{"status", {{"network", {{"remoteCIDRSeenHere", "10.243.0.0/16"}}}}}},
      statusWrite());
  ASSERT_TRUE(patched.ok()) << patched.error().message;
  auto cloud = controller(cloudId_, *cloudClient_, gatewayConfig("10.244.0.0/16", "127.0.0.1:51002"),
                          &cloudGw);
  auto home = controller(homeId_, *homeClient_, gatewayConfig("10.244.0.0/16", "127.0.0.1:51001"),
                         &homeGw);
  serve(cloud.get());
  auto now = std::chrono::system_clock::now();
  home->onProviderHeartbeat(kCloudId, "cloud", *rpc_, cloud->digestFor(kHomeId), false, now);
  ASSERT_TRUE(homeGw->peer(kCloudId) && homeGw->peer(kCloudId)->seenAs);
  EXPECT_EQ(homeGw->peer(kCloudId)->seenAs->toString(), "10.243.0.0/16");
  const std::string homeKey = tunnel::keyToBase64(homeGw->publicKey());

  // The agent restarts: same key (from the Secret), same remap (from the ForeignCluster).
  home.reset();
  home = controller(homeId_, *homeClient_, gatewayConfig("10.244.0.0/16", "127.0.0.1:51001"),
                    &homeGw);
  EXPECT_EQ(tunnel::keyToBase64(homeGw->publicKey()), homeKey);
  home->onProviderHeartbeat(kCloudId, "cloud", *rpc_, cloud->digestFor(kHomeId), false, now);
  ASSERT_TRUE(homeGw->peer(kCloudId) && homeGw->peer(kCloudId)->seenAs);
  EXPECT_EQ(homeGw->peer(kCloudId)->seenAs->toString(), "10.243.0.0/16");
  EXPECT_EQ(network(*cloudClient_, "home").value("localCIDRSeenThere", ""), "10.243.0.0/16");

  // The provider's key is rotated in its Secret: its heartbeat digest changes and the
  // consumer's gateway gets the new key at the next heartbeat.
  const std::string oldDigest = cloud->digestFor(kHomeId);
  tunnel::PrivateKey fresh = tunnel::generatePrivateKey();
  kube::Result<json> secret = cloudClient_->get(kube::resources::kSecrets, "strait-system",
                                                std::string(peering::kGatewayKeySecret));
  ASSERT_TRUE(secret.ok());
  (*secret)["data"]["privateKey"] = peering::base64Encode(tunnel::keyToBase64(fresh.bytes()));
  ASSERT_TRUE(cloudClient_->update(kube::resources::kSecrets, "strait-system", *secret).ok());
  cloud->tick(now + 10s);
  EXPECT_EQ(cloudGw->publicKey(), *tunnel::publicKeyOf(fresh));
  EXPECT_NE(cloud->digestFor(kHomeId), oldDigest);
  home->onProviderHeartbeat(kCloudId, "cloud", *rpc_, cloud->digestFor(kHomeId), false, now + 11s);
  EXPECT_EQ(homeGw->peer(kCloudId)->publicKey, *tunnel::publicKeyOf(fresh));
  EXPECT_EQ(network(*homeClient_, "cloud").value("remotePublicKey", ""),
            tunnel::keyToBase64(*tunnel::publicKeyOf(fresh)));
}

TEST_F(NetworkNegotiationTest, AnExhaustedPoolIsRefusedOnBothSidesWithNoHalfTunnel) {
  RecordingGateway* homeGw = nullptr;
  RecordingGateway* cloudGw = nullptr;
  auto cloud = controller(cloudId_, *cloudClient_, gatewayConfig("10.244.0.0/16", "127.0.0.1:51002"),
                          &cloudGw);
  peering::NetworkConfig homeCfg = gatewayConfig("10.244.0.0/16", "127.0.0.1:51001");
  homeCfg.remapPool = "10.240.0.0/16";  // room for exactly one /16
  // Another peering already uses the pool's only /16.
  json other = peering::makeForeignCluster("edge", "33333333-3333-4333-8333-333333333333", "edge",
                                           "Provider", "127.0.0.1:1");
  (void)homeClient_->create(peering::kForeignClusters, "", other);
  ASSERT_TRUE(homeClient_
                  ->patch(peering::kForeignClusters, "", "edge", kube::PatchType::Merge,
                          json{{"status", {{"network", {{"remoteCIDRSeenHere", "10.240.0.0/16"}}}}}},
                          statusWrite())
                  .ok());
  auto home = controller(homeId_, *homeClient_, homeCfg, &homeGw);
  serve(cloud.get());
  home->onProviderHeartbeat(kCloudId, "cloud", *rpc_, "", false, std::chrono::system_clock::now());
  TunnelCondition h = home->state().condition(kCloudId);
  EXPECT_FALSE(h.up);
  EXPECT_EQ(h.reason, "RemapPoolExhausted");
  EXPECT_NE(h.message.find("remap pool 10.240.0.0/16 exhausted"), std::string::npos) << h.message;
  TunnelCondition c = cloud->state().condition(kHomeId);
  EXPECT_EQ(c.reason, "RemapPoolExhausted");
  EXPECT_NE(c.message.find("the consumer cluster home refused the tunnel"), std::string::npos)
      << c.message;
  EXPECT_EQ(homeGw->peerCount(), 0u);
  EXPECT_EQ(cloudGw->peerCount(), 0u);
  EXPECT_TRUE(network(*homeClient_, "cloud").value("remoteCIDR", json()).is_null());
  // Retried: the provider is told the standing refusal at once and never configures a peer,
  // not even for a moment.
  home->onProviderHeartbeat(kCloudId, "cloud", *rpc_, cloud->digestFor(kHomeId), false,
                            std::chrono::system_clock::now() + 10s);
  EXPECT_EQ(cloudGw->upserts(), 0);
  EXPECT_EQ(cloud->state().condition(kHomeId).reason, "RemapPoolExhausted");
}

TEST_F(NetworkNegotiationTest, AnInvalidKeyOrCidrFromTheConsumerIsRefusedNamingTheCause) {
  RecordingGateway* cloudGw = nullptr;
  auto cloud = controller(cloudId_, *cloudClient_, gatewayConfig("10.244.0.0/16", "127.0.0.1:51002"),
                          &cloudGw);
  serve(cloud.get());
  v1::NetworkRequest req;
  req.mutable_consumer()->set_gateway(true);
  req.mutable_consumer()->set_public_key("not-a-key");
  req.mutable_consumer()->set_pod_cidr("10.100.0.0/16");
  v1::NetworkResponse resp;
  ASSERT_TRUE(rpc_->network(req, &resp, 5s).ok());
  EXPECT_EQ(resp.refused_reason(), "InvalidKey");
  EXPECT_NE(resp.refused_message().find("not-a-key"), std::string::npos);
  EXPECT_TRUE(resp.consumer_seen_as().empty());
  EXPECT_EQ(cloud->state().condition(kHomeId).reason, "InvalidKey");
  EXPECT_EQ(cloudGw->peerCount(), 0u);

  req.mutable_consumer()->set_public_key(tunnel::keyToBase64(
      *tunnel::publicKeyOf(tunnel::generatePrivateKey())));
  req.mutable_consumer()->set_pod_cidr("10.100.1.0/16");
  ASSERT_TRUE(rpc_->network(req, &resp, 5s).ok());
  EXPECT_EQ(resp.refused_reason(), "InvalidCIDR");
  EXPECT_NE(resp.refused_message().find("host bits"), std::string::npos) << resp.refused_message();
  EXPECT_EQ(cloudGw->peerCount(), 0u);

  // Fixed: accepted, not remapped (no overlap), and the provider's offer comes back; its
  // gateway peer waits for the consumer's choice.
  req.mutable_consumer()->set_pod_cidr("10.100.0.0/16");
  req.mutable_consumer()->set_probe_address("10.100.0.1");
  ASSERT_TRUE(rpc_->network(req, &resp, 5s).ok());
  EXPECT_EQ(resp.refused_reason(), "");
  EXPECT_EQ(resp.consumer_seen_as(), "10.100.0.0/16");
  EXPECT_EQ(resp.provider().pod_cidr(), "10.244.0.0/16");
  EXPECT_EQ(resp.provider().public_key(), tunnel::keyToBase64(cloudGw->publicKey()));
  EXPECT_EQ(cloudGw->peerCount(), 0u);
  EXPECT_EQ(cloud->state().condition(kHomeId).reason, "Negotiating");
  req.set_provider_seen_as("10.244.0.0/16");
  ASSERT_TRUE(rpc_->network(req, &resp, 5s).ok());
  EXPECT_EQ(resp.consumer_seen_as(), "10.100.0.0/16");
  ASSERT_TRUE(cloudGw->peer(kHomeId));
  EXPECT_FALSE(cloudGw->peer(kHomeId)->seenAs);
  EXPECT_EQ(cloud->state().toLocalView(kHomeId, "10.100.0.9"), "10.100.0.9");
}

TEST_F(NetworkNegotiationTest, AProviderWithoutGatewayLeavesTheConsumerWithoutTunnelSayingWhich) {
  RecordingGateway* homeGw = nullptr;
  peering::NetworkController cloud(cloudId_, *cloudClient_, peering::NetworkConfig{});
  ASSERT_TRUE(cloud.start().ok());
  auto home = controller(homeId_, *homeClient_, gatewayConfig("10.244.0.0/16", "127.0.0.1:51001"),
                         &homeGw);
  serve(&cloud);
  home->onProviderHeartbeat(kCloudId, "cloud", *rpc_, "", false, std::chrono::system_clock::now());
  TunnelCondition h = home->state().condition(kCloudId);
  EXPECT_FALSE(h.up);
  EXPECT_EQ(h.reason, "TunnelNotConfigured");
  EXPECT_EQ(h.message, "the provider cluster cloud runs no gateway (strait agent --gateway)");
  TunnelCondition c = cloud.state().condition(kHomeId);
  EXPECT_EQ(c.reason, "TunnelNotConfigured");
  EXPECT_NE(c.message.find("this cluster (cloud) runs no gateway"), std::string::npos)
      << c.message;
  EXPECT_EQ(homeGw->peerCount(), 0u);
  // An agent that does not serve Network at all (an older one) is not a tunnel either.
  serve(nullptr);
  home->onProviderHeartbeat(kCloudId, "cloud", *rpc_, "x", true, std::chrono::system_clock::now());
  EXPECT_EQ(home->state().condition(kCloudId).reason, "TunnelNotConfigured");
  EXPECT_NE(home->state().condition(kCloudId).message.find("does not negotiate tunnels"),
            std::string::npos);
}

TEST_F(NetworkNegotiationTest, TheFabricConfigMapListsEveryRemoteCidrAsSeenHere) {
  // A simulated node with its pod range and address (the minicluster runs two).
  json node;
  ASSERT_TRUE(waitFor(
      [&] {
        kube::Result<json> nodes = homeClient_->list(kube::resources::kNodes, "");
        for (const json& n : nodes.ok() ? nodes->value("items", json::array()) : json::array()) {
          if (!n.value("/spec/podCIDR"_json_pointer, std::string()).empty() &&
              !n.value("/status/addresses"_json_pointer, json::array()).empty()) {
            node = n;
            return true;
          }
        }
        return false;
      },
      30s));
  RecordingGateway* homeGw = nullptr;
  RecordingGateway* cloudGw = nullptr;
  auto cloud = controller(cloudId_, *cloudClient_, gatewayConfig("10.244.0.0/16", "127.0.0.1:51002"),
                          &cloudGw);
  peering::NetworkConfig homeCfg;
  homeCfg.gateway = true;
  homeCfg.gatewayNode = kube::getName(node);  // pod CIDR, endpoint and probe from the Nodes
  homeCfg.retryInterval = 0ms;
  auto home = controller(homeId_, *homeClient_, homeCfg, &homeGw);
  ASSERT_TRUE(homeGw);
  v1::NetworkOffer offer = home->offer();
  std::string internalIp;
  for (const json& a : node.value("/status/addresses"_json_pointer, json::array())) {
    if (a.value("type", "") == "InternalIP") internalIp = a.value("address", "");
  }
  EXPECT_EQ(offer.endpoint(), internalIp + ":51840");
  const std::string nodeCidr = node.value("/spec/podCIDR"_json_pointer, std::string());
  EXPECT_EQ(offer.probe_address(), nodeCidr.substr(0, nodeCidr.rfind('.')) + ".1");
  serve(cloud.get());
  home->onProviderHeartbeat(kCloudId, "cloud", *rpc_, "", false, std::chrono::system_clock::now());
  home->tick(std::chrono::system_clock::now());
  kube::Result<json> cm = homeClient_->get(kube::resources::kConfigMaps, "strait-system",
                                           std::string(peering::kFabricConfigMap));
  ASSERT_TRUE(cm.ok());
  EXPECT_EQ(cm->value("/data/gatewayNode"_json_pointer, std::string()), kube::getName(node));
  EXPECT_EQ(cm->value("/data/gatewayIP"_json_pointer, std::string()), internalIp);
  EXPECT_EQ(cm->value("/data/cidrs"_json_pointer, std::string()), "10.240.0.0/16");
  EXPECT_EQ(cm->value("/metadata/labels/strait.io~1managed-by"_json_pointer, std::string()),
            "strait");
  home->forget(kCloudId);
  home->tick(std::chrono::system_clock::now() + 1s);
  cm = homeClient_->get(kube::resources::kConfigMaps, "strait-system",
                        std::string(peering::kFabricConfigMap));
  ASSERT_TRUE(cm.ok());
  EXPECT_EQ(cm->value("/data/cidrs"_json_pointer, std::string("x")), "");
}

}  // namespace
}  // namespace strait::e2e

// Pull mode's reverse link over real TLS on loopback: a LinkDialer ("provider") dials a
// LinkListener ("consumer"), and a real gRPC client on the consumer side calls the
// provider's real gRPC server through the forwarder, with end-to-end mutual TLS.
#include <gtest/gtest.h>
#include <signal.h>

#include <atomic>
#include <mutex>
#include <thread>

#include "kube/pki.h"
#include "peering/link.h"
#include "peering/names.h"
#include "peering/transport.h"

namespace strait::peering {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

constexpr const char* kProviderId = "11111111-2222-4333-8444-555555555555";
constexpr const char* kConsumerId = "66666666-7777-4888-9999-000000000000";

bool eventually(const std::function<bool()>& cond, std::chrono::milliseconds limit = 20s) {
  auto deadline = Clock::now() + limit;
  while (Clock::now() < deadline) {
    if (cond()) return true;
    std::this_thread::sleep_for(20ms);
  }
  return cond();
}

// Answers Join and Heartbeat, recording who called.
class Handler : public PeeringHandler {
 public:
  kube::Status join(const Caller& c, const v1::JoinRequest&, v1::JoinResponse* resp) override {
    record(c);
    resp->set_provider_id(kProviderId);
    return kube::Status::OK();
  }
  kube::Status heartbeat(const Caller& c, const v1::HeartbeatRequest& req,
                         v1::HeartbeatResponse* resp) override {
    record(c);
    resp->set_sent_unix_nanos(req.sent_unix_nanos());
    return kube::Status::OK();
  }
  kube::Status renewCertificate(const Caller&, const v1::RenewRequest&, v1::RenewResponse*) override {
    return kube::makeError(kube::Code::MethodNotAllowed, "not in this test");
  }
  kube::Status unpeer(const Caller&, const v1::UnpeerRequest&, v1::UnpeerResponse*) override {
    return kube::makeError(kube::Code::MethodNotAllowed, "not in this test");
  }
  std::string lastCaller() {
    std::lock_guard<std::mutex> l(mu_);
    return last_;
  }
  int calls() const { return calls_; }

 private:
  void record(const Caller& c) {
    std::lock_guard<std::mutex> l(mu_);
    last_ = c.clusterId;
    ++calls_;
  }
  std::mutex mu_;
  std::string last_;
  std::atomic<int> calls_{0};
};

// A cluster's CA and its agent certificate chain (leaf with agent.<id>.strait, then CA).
struct Cluster {
  kube::KeyPair ca;
  kube::KeyPair chain;
  std::string fingerprint;
  static Cluster make(const std::string& id) {
    Cluster c;
    c.ca = *kube::makeCa("ca-" + id);
    kube::KeyPair leaf = *kube::issueCert(c.ca, "strait-agent", {}, {agentServerName(id)}, {}, true);
    c.chain = {leaf.certPem + c.ca.certPem, leaf.keyPem};
    c.fingerprint = kube::certificateInfo(c.ca.certPem)->sha256Fingerprint;
    return c;
  }
};

class LinkTest : public ::testing::Test {
 protected:
  void SetUp() override {
    signal(SIGPIPE, SIG_IGN);
    provider_ = Cluster::make(kProviderId);
    consumer_ = Cluster::make(kConsumerId);
    ServerConfig sc;
    sc.listen = "127.0.0.1:0";
    sc.serverCert = provider_.chain;
    sc.clientCaPem = provider_.ca.certPem;
    auto server = startRpcServer(sc, handler_);
    ASSERT_TRUE(server.ok()) << server.error().message;
    server_ = std::move(*server);
    LinkListener::Options lo;
    lo.listen = "127.0.0.1:0";
    lo.chain = consumer_.chain;
    lo.timing.keepalive = 200ms;
    lo.timing.lostAfter = 1s;
    lo.expectedCa = [this](const std::string& id) -> kube::Result<std::string> {
      if (id != kProviderId) {
        return kube::makeError(kube::Code::Forbidden, "no pull-mode peering with cluster " + id);
      }
      return provider_.fingerprint;
    };
    lo.onRefused = [this](const std::string&, const std::string& reason) {
      std::lock_guard<std::mutex> l(mu_);
      refusals_.push_back(reason);
    };
    auto listener = LinkListener::start(lo);
    ASSERT_TRUE(listener.ok()) << listener.error().message;
    listener_ = std::move(*listener);
  }
  void TearDown() override {
    if (dialer_) dialer_->stop();
    if (listener_) listener_->stop();
    if (server_) server_->shutdown(1s);
  }

  std::unique_ptr<LinkDialer> dial(const Cluster& as, const std::string& pinned) {
    LinkDialer::Options o;
    o.consumerEndpoint = "127.0.0.1:" + std::to_string(listener_->port());
    o.consumerCaFingerprint = pinned;
    o.chain = as.chain;
    o.localTarget = "127.0.0.1:" + std::to_string(server_->port());
    o.timing.keepalive = 200ms;
    o.timing.lostAfter = 1s;
    o.maxBackoff = 200ms;
    auto d = LinkDialer::start(o);
    EXPECT_TRUE(d.ok());
    return std::move(*d);
  }
  // A gRPC client to the provider through the consumer's forwarder.
  std::unique_ptr<RpcClient> client(const kube::KeyPair& cert) {
    ClientConfig cc;
    cc.endpoint = *listener_->forwardEndpoint(kProviderId);
    cc.serverCaPem = provider_.ca.certPem;
    cc.serverName = agentServerName(kProviderId);
    cc.clientCert = cert;
    auto c = makeRpcClient(cc);
    EXPECT_TRUE(c.ok());
    return std::move(*c);
  }
  kube::KeyPair consumerClientCert() {
    kube::KeyAndCsr kc = *kube::makeKeyAndCsr(kConsumerId, {std::string(kConsumerOrganization)});
    return {*kube::signCsrFor(provider_.ca, kc.csrPem, false, 1h), kc.keyPem};
  }
  std::vector<std::string> refusals() {
    std::lock_guard<std::mutex> l(mu_);
    return refusals_;
  }

  Cluster provider_, consumer_;
  Handler handler_;
  std::unique_ptr<RpcServer> server_;
  std::unique_ptr<LinkListener> listener_;
  std::unique_ptr<LinkDialer> dialer_;
  std::mutex mu_;
  std::vector<std::string> refusals_;
};

TEST_F(LinkTest, CallsTravelOverTheLinkWithTheCallersOwnCertificate) {
  dialer_ = dial(provider_, consumer_.fingerprint);
  ASSERT_TRUE(eventually([&] { return listener_->linked(kProviderId) && dialer_->linked(); }))
      << dialer_->lastError();
  EXPECT_EQ(dialer_->consumerId(), kConsumerId);
  // Join without a certificate (bootstrap), then mTLS: the provider's server sees the
  // consumer's client certificate, not anything the link says.
  v1::JoinResponse jr;
  kube::Status j = client({})->join({}, &jr, 10s);
  ASSERT_TRUE(j.ok()) << j.error().message;
  EXPECT_EQ(handler_.lastCaller(), "");
  auto c = client(consumerClientCert());
  for (int i = 0; i < 20; ++i) {
    v1::HeartbeatRequest req;
    req.set_sent_unix_nanos(i);
    v1::HeartbeatResponse resp;
    kube::Status s = c->heartbeat(req, &resp, 10s);
    ASSERT_TRUE(s.ok()) << s.error().message;
    EXPECT_EQ(resp.sent_unix_nanos(), i);
  }
  EXPECT_EQ(handler_.lastCaller(), kConsumerId);
  // Idle standby connections survive several keepalive periods.
  auto idleUntil = Clock::now() + 1500ms;
  eventually([&] { return Clock::now() > idleUntil; }, 5s);
  EXPECT_TRUE(listener_->linked(kProviderId));
  v1::HeartbeatResponse resp;
  EXPECT_TRUE(client(consumerClientCert())->heartbeat({}, &resp, 10s).ok());
}

TEST_F(LinkTest, CallsFailUnavailableWhileTheLinkIsDownAndWorkWhenItReturns) {
  auto c = client(consumerClientCert());
  v1::HeartbeatResponse resp;
  auto started = Clock::now();
  kube::Status down = c->heartbeat({}, &resp, 10s);
  EXPECT_EQ(down.code(), kube::Code::Unavailable) << down.error().message;
  EXPECT_LT(Clock::now() - started, 8s);  // fails, not waiting for the deadline
  dialer_ = dial(provider_, consumer_.fingerprint);
  ASSERT_TRUE(eventually([&] { return c->heartbeat({}, &resp, 2s).ok(); }))
      << dialer_->lastError();
  dialer_->stop(0ms);
  ASSERT_TRUE(eventually([&] { return !listener_->linked(kProviderId); }));
  EXPECT_TRUE(eventually([&] { return c->heartbeat({}, &resp, 2s).code() == kube::Code::Unavailable; }));
}

TEST_F(LinkTest, ProviderPresentingAnotherCaIsRefusedSayingWhy) {
  // Same cluster ID in the certificate, but signed by a CA the peering does not pin.
  Cluster impostor = Cluster::make(kProviderId);
  dialer_ = dial(impostor, consumer_.fingerprint);
  ASSERT_TRUE(eventually([&] { return !dialer_->lastError().empty(); }));
  EXPECT_NE(dialer_->lastError().find("refused the link"), std::string::npos) << dialer_->lastError();
  EXPECT_NE(dialer_->lastError().find("not the pinned one"), std::string::npos) << dialer_->lastError();
  EXPECT_FALSE(listener_->linked(kProviderId));
  ASSERT_FALSE(refusals().empty());
  EXPECT_NE(refusals()[0].find(provider_.fingerprint), std::string::npos) << refusals()[0];
}

TEST_F(LinkTest, ProviderWithoutAPullPeeringIsRefused) {
  Cluster stranger = Cluster::make("99999999-2222-4333-8444-555555555555");
  dialer_ = dial(stranger, consumer_.fingerprint);
  ASSERT_TRUE(eventually([&] { return !dialer_->lastError().empty(); }));
  EXPECT_NE(dialer_->lastError().find("no pull-mode peering with cluster 99999999"),
            std::string::npos) << dialer_->lastError();
  EXPECT_FALSE(dialer_->linked());
}

TEST_F(LinkTest, ProviderRefusesAConsumerWithoutThePinnedCa) {
  Cluster other = Cluster::make(kConsumerId);
  dialer_ = dial(provider_, other.fingerprint);
  ASSERT_TRUE(eventually([&] { return !dialer_->lastError().empty(); }));
  EXPECT_NE(dialer_->lastError().find("is not the consumer"), std::string::npos)
      << dialer_->lastError();
  EXPECT_FALSE(listener_->linked(kProviderId));
  EXPECT_EQ(handler_.calls(), 0);
}

}  // namespace
}  // namespace strait::peering

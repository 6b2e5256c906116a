// The gRPC transport over real TLS on loopback: who may call what.
#include <gtest/gtest.h>

#include <atomic>
#include <mutex>

#include "kube/pki.h"
#include "peering/names.h"
#include "peering/transport.h"

namespace strait::peering {
namespace {

using namespace std::chrono_literals;

// Records the caller of each method.
class RecordingHandler : public PeeringHandler {
 public:
  kube::Status join(const Caller& c, const v1::JoinRequest& req, v1::JoinResponse* resp) override {
    record(c);
    resp->set_provider_id("provider");
    resp->set_tenant_namespace("ns-for-" + req.consumer_id());
    return kube::Status::OK();
  }
  kube::Status renewCertificate(const Caller& c, const v1::RenewRequest&,
                                v1::RenewResponse*) override {
    record(c);
    return kube::Status::OK();
  }
  kube::Status heartbeat(const Caller& c, const v1::HeartbeatRequest& req,
                         v1::HeartbeatResponse* resp) override {
    record(c);
    resp->set_sent_unix_nanos(req.sent_unix_nanos());
    return kube::Status::OK();
  }
  kube::Status unpeer(const Caller& c, const v1::UnpeerRequest&, v1::UnpeerResponse*) override {
    record(c);
    return kube::makeError(kube::Code::Forbidden, "not yours");
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

class MtlsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ca_ = *kube::makeCa("provider-ca");
    kube::KeyPair leaf =
        *kube::issueCert(ca_, "agent", {}, {agentServerName(kProviderId)}, {}, true);
    ServerConfig cfg;
    cfg.listen = "127.0.0.1:0";
    cfg.serverCert = {leaf.certPem + ca_.certPem, leaf.keyPem};
    cfg.clientCaPem = ca_.certPem;
    kube::Result<std::unique_ptr<RpcServer>> s = startRpcServer(cfg, handler_);
    ASSERT_TRUE(s.ok()) << s.error().message;
    server_ = std::move(*s);
    endpoint_ = "127.0.0.1:" + std::to_string(server_->port());
  }
  void TearDown() override {
    if (server_) server_->shutdown(1s);
  }

  std::unique_ptr<RpcClient> client(const kube::KeyPair& cert, const std::string& caPem) {
    ClientConfig cc;
    cc.endpoint = endpoint_;
    cc.serverCaPem = caPem;
    cc.serverName = agentServerName(kProviderId);
    cc.clientCert = cert;
    kube::Result<std::unique_ptr<RpcClient>> c = makeRpcClient(cc);
    EXPECT_TRUE(c.ok());
    return std::move(*c);
  }
  // A client certificate for `cn` signed by `ca` through a CSR (as peering does it).
  static kube::KeyPair clientCert(const kube::KeyPair& ca, const std::string& cn) {
    kube::KeyAndCsr kc = *kube::makeKeyAndCsr(cn, {std::string(kConsumerOrganization)});
    std::string cert = *kube::signCsrFor(ca, kc.csrPem, false, 1h);
    return {cert, kc.keyPem};
  }

  static constexpr const char* kProviderId = "11111111-2222-4333-8444-555555555555";
  kube::KeyPair ca_;
  RecordingHandler handler_;
  std::unique_ptr<RpcServer> server_;
  std::string endpoint_;
};

TEST_F(MtlsTest, JoinWorksWithoutClientCertificate) {
  auto c = client({}, ca_.certPem);
  v1::JoinRequest req;
  req.set_consumer_id("consumer-1");
  v1::JoinResponse resp;
  kube::Status s = c->join(req, &resp, 10s);
  ASSERT_TRUE(s.ok()) << s.error().message;
  EXPECT_EQ(resp.tenant_namespace(), "ns-for-consumer-1");
  EXPECT_EQ(handler_.lastCaller(), "");
}

TEST_F(MtlsTest, EveryOtherMethodNeedsAClientCertificate) {
  auto c = client({}, ca_.certPem);
  v1::HeartbeatResponse hb;
  kube::Status s = c->heartbeat({}, &hb, 10s);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.code(), kube::Code::Unauthorized);
  EXPECT_NE(s.error().message.find("client certificate"), std::string::npos);
  v1::UnpeerResponse ur;
  EXPECT_EQ(c->unpeer({}, &ur, 10s).code(), kube::Code::Unauthorized);
  v1::RenewResponse rr;
  EXPECT_EQ(c->renewCertificate({}, &rr, 10s).code(), kube::Code::Unauthorized);
  EXPECT_EQ(handler_.calls(), 0);
}

TEST_F(MtlsTest, ClientCertificateFromTheCaIdentifiesTheCaller) {
  auto c = client(clientCert(ca_, "consumer-42"), ca_.certPem);
  v1::HeartbeatRequest req;
  req.set_sent_unix_nanos(12345);
  v1::HeartbeatResponse resp;
  kube::Status s = c->heartbeat(req, &resp, 10s);
  ASSERT_TRUE(s.ok()) << s.error().message;
  EXPECT_EQ(resp.sent_unix_nanos(), 12345);
  EXPECT_EQ(handler_.lastCaller(), "consumer-42");
  // The handler's refusal reaches the caller with its code and message.
  v1::UnpeerResponse ur;
  kube::Status u = c->unpeer({}, &ur, 10s);
  EXPECT_EQ(u.code(), kube::Code::Forbidden);
  EXPECT_EQ(u.error().message, "not yours");
}

TEST_F(MtlsTest, ClientCertificateFromAnotherCaIsRefused) {
  kube::KeyPair otherCa = *kube::makeCa("other-ca");
  auto c = client(clientCert(otherCa, "consumer-42"), ca_.certPem);
  v1::HeartbeatResponse resp;
  kube::Status s = c->heartbeat({}, &resp, 10s);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.code(), kube::Code::Unavailable) << s.error().message;
  v1::JoinResponse jr;
  EXPECT_FALSE(c->join({}, &jr, 10s).ok());  // not even the bootstrap call
  EXPECT_EQ(handler_.calls(), 0);
}

TEST_F(MtlsTest, ServerFromAnotherCaIsRefusedByTheClient) {
  kube::KeyPair otherCa = *kube::makeCa("other-ca");
  auto c = client({}, otherCa.certPem);
  v1::JoinResponse jr;
  EXPECT_EQ(c->join({}, &jr, 10s).code(), kube::Code::Unavailable);
  EXPECT_EQ(handler_.calls(), 0);
}

TEST_F(MtlsTest, FetchPinnedCaReturnsTheCaWithTheTokensFingerprint) {
  std::string fp = kube::certificateInfo(ca_.certPem)->sha256Fingerprint;
  kube::Result<std::string> ca = fetchPinnedCa(endpoint_, fp, 10s);
  ASSERT_TRUE(ca.ok()) << ca.error().message;
  EXPECT_EQ(kube::certificateInfo(*ca)->sha256Fingerprint, fp);
  kube::Result<std::string> wrong = fetchPinnedCa(endpoint_, std::string(64, '0'), 10s);
  ASSERT_FALSE(wrong.ok());
  EXPECT_EQ(wrong.code(), kube::Code::Unauthorized);
  EXPECT_NE(wrong.error().message.find("fingerprint"), std::string::npos);
}

TEST_F(MtlsTest, FetchPinnedCaFromNowhereIsUnavailable) {
  server_->shutdown(1s);
  kube::Result<std::string> ca = fetchPinnedCa(endpoint_, std::string(64, '0'), 2s);
  ASSERT_FALSE(ca.ok());
  EXPECT_EQ(ca.code(), kube::Code::Unavailable);
  EXPECT_FALSE(fetchPinnedCa("no-port", "x", 1s).ok());
}

TEST(Pki, ShortLivedCertificateHasTheAskedValidity) {
  kube::KeyPair ca = *kube::makeCa("ca");
  kube::KeyAndCsr kc = *kube::makeKeyAndCsr("me", {"org"});
  auto before = std::chrono::system_clock::now();
  std::string cert = *kube::signCsrFor(ca, kc.csrPem, false, std::chrono::seconds(90));
  kube::CertificateInfo info = *kube::certificateInfo(cert);
  EXPECT_EQ(info.commonName, "me");
  EXPECT_GE(info.notAfter, before + std::chrono::seconds(89));
  EXPECT_LE(info.notAfter, before + std::chrono::seconds(92));
  EXPECT_TRUE(kube::verifyIssuedBy(ca.certPem, cert).ok());
  EXPECT_EQ(kube::verifyIssuedBy(kube::makeCa("x")->certPem, cert).code(),
            kube::Code::Unauthorized);
  EXPECT_EQ(kube::certificateInfo("junk").code(), kube::Code::Invalid);
}

}  // namespace
}  // namespace strait::peering

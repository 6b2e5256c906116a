// Reflection.Stream over real mTLS on loopback between an in-process RpcServer and RpcClient:
// messages flow both ways, either side can end the stream, a handler's refusal reaches the
// client, and a client certificate from another CA never gets a stream.
#include <gtest/gtest.h>

#include <atomic>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <set>
#include <thread>

#include "kube/pki.h"
#include "peering/names.h"
#include "peering/transport.h"

namespace strait::peering {
namespace {

using namespace std::chrono_literals;

kube::Status unused() { return kube::makeError(kube::Code::MethodNotAllowed, "unused"); }

// Unary methods unused; stream() runs `onStream` if set, else the default (Unimplemented).
class StreamHandler : public PeeringHandler {
 public:
  kube::Status join(const Caller&, const v1::JoinRequest&, v1::JoinResponse*) override {
    return unused();
  }
  kube::Status renewCertificate(const Caller&, const v1::RenewRequest&,
                                v1::RenewResponse*) override {
    return unused();
  }
  kube::Status heartbeat(const Caller&, const v1::HeartbeatRequest&,
                         v1::HeartbeatResponse*) override {
    return unused();
  }
  kube::Status unpeer(const Caller&, const v1::UnpeerRequest&, v1::UnpeerResponse*) override {
    return unused();
  }
  kube::Status stream(const Caller& c, EventStream& s) override {
    running++;
    kube::Status st = onStream ? onStream(c, s) : PeeringHandler::stream(c, s);
    running--;
    ended++;
    return st;
  }
  std::function<kube::Status(const Caller&, EventStream&)> onStream;
  std::atomic<int> running{0};
  std::atomic<int> ended{0};
};

v1::ReflectionEvent event(const std::string& type, uint64_t seq) {
  v1::ReflectionEvent e;
  e.set_type(type);
  e.set_seq(seq);
  return e;
}

bool waitUntil(const std::function<bool()>& cond, std::chrono::milliseconds limit = 20s) {
  auto deadline = std::chrono::steady_clock::now() + limit;
  while (std::chrono::steady_clock::now() < deadline) {
    if (cond()) return true;
    std::this_thread::sleep_for(10ms);
  }
  return cond();
}

class StreamTransportTest : public ::testing::Test {
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
  }
  void TearDown() override {
    if (server_) server_->shutdown(1s);
  }
  std::unique_ptr<RpcClient> client(const kube::KeyPair& cert) {
    ClientConfig cc;
    cc.endpoint = "127.0.0.1:" + std::to_string(server_->port());
    cc.serverCaPem = ca_.certPem;
    cc.serverName = agentServerName(kProviderId);
    cc.clientCert = cert;
    kube::Result<std::unique_ptr<RpcClient>> c = makeRpcClient(cc);
    EXPECT_TRUE(c.ok());
    return std::move(*c);
  }
  static kube::KeyPair clientCert(const kube::KeyPair& ca, const std::string& cn) {
    kube::KeyAndCsr kc = *kube::makeKeyAndCsr(cn, {std::string(kConsumerOrganization)});
    return {*kube::signCsrFor(ca, kc.csrPem, false, 1h), kc.keyPem};
  }

  static constexpr const char* kProviderId = "11111111-2222-4333-8444-555555555555";
  kube::KeyPair ca_;
  StreamHandler handler_;
  std::unique_ptr<RpcServer> server_;
};

TEST_F(StreamTransportTest, EchoBothWaysThenClientClosesAndHandlerReturns) {
  std::string seenCaller;
  handler_.onStream = [&](const Caller& c, EventStream& s) -> kube::Status {
    seenCaller = c.clusterId;
    v1::ReflectionEvent e;
    while (s.read(&e)) {
      v1::ReflectionEvent reply = event("REPLY", e.seq());
      reply.set_error_message("echo " + e.type());
      if (!s.write(reply)) break;
    }
    return kube::Status::OK();
  };
  auto c = client(clientCert(ca_, "consumer-7"));
  kube::Result<std::unique_ptr<EventStream>> opened = c->openStream();
  ASSERT_TRUE(opened.ok()) << opened.error().message;
  EventStream& s = **opened;
  // Many writes from two threads while this thread reads: all replies arrive, by seq.
  std::thread w1([&] { for (uint64_t i = 1; i <= 50; i++) ASSERT_TRUE(s.write(event("APPLY", i))); });
  std::thread w2([&] { for (uint64_t i = 51; i <= 100; i++) ASSERT_TRUE(s.write(event("DELETE", i))); });
  std::set<uint64_t> seqs;
  v1::ReflectionEvent r;
  while (seqs.size() < 100 && s.read(&r)) {
    EXPECT_EQ(r.type(), "REPLY");
    EXPECT_EQ(r.error_message(), r.seq() <= 50 ? "echo APPLY" : "echo DELETE");
    seqs.insert(r.seq());
  }
  w1.join();
  w2.join();
  EXPECT_EQ(seqs.size(), 100u);
  EXPECT_EQ(seenCaller, "consumer-7");
  // The client ends the stream: the server's read() fails and the handler returns.
  s.cancel();
  EXPECT_FALSE(s.read(&r));
  EXPECT_FALSE(s.write(event("KEEPALIVE", 0)));
  EXPECT_TRUE(waitUntil([&] { return handler_.ended.load() == 1; }));
  EXPECT_EQ(handler_.running.load(), 0);
}

TEST_F(StreamTransportTest, ServerEndsStreamClientReadsEndWithHandlerStatus) {
  handler_.onStream = [&](const Caller&, EventStream& s) -> kube::Status {
    EXPECT_TRUE(s.write(event("KEEPALIVE", 0)));
    return kube::makeError(kube::Code::Forbidden, "peering revoked while streaming");
  };
  auto c = client(clientCert(ca_, "consumer-7"));
  auto s = c->openStream().value();
  v1::ReflectionEvent r;
  ASSERT_TRUE(s->read(&r));
  EXPECT_EQ(r.type(), "KEEPALIVE");
  EXPECT_FALSE(s->read(&r));
  EXPECT_EQ(s->status().code(), kube::Code::Forbidden);
  EXPECT_EQ(s->status().error().message, "peering revoked while streaming");
}

TEST_F(StreamTransportTest, ServerCancelUnblocksBothSides) {
  std::mutex mu;
  EventStream* serverEnd = nullptr;
  handler_.onStream = [&](const Caller&, EventStream& s) -> kube::Status {
    {
      std::lock_guard<std::mutex> l(mu);
      serverEnd = &s;
    }
    v1::ReflectionEvent e;
    while (s.read(&e)) {
    }
    std::lock_guard<std::mutex> l(mu);
    serverEnd = nullptr;
    return kube::Status::OK();
  };
  auto c = client(clientCert(ca_, "consumer-7"));
  auto s = c->openStream().value();
  ASSERT_TRUE(s->write(event("KEEPALIVE", 0)));
  ASSERT_TRUE(waitUntil([&] {
    std::lock_guard<std::mutex> l(mu);
    return serverEnd != nullptr;
  }));
  {
    std::lock_guard<std::mutex> l(mu);
    serverEnd->cancel();
  }
  v1::ReflectionEvent r;
  EXPECT_FALSE(s->read(&r));  // returns instead of blocking forever
  EXPECT_FALSE(s->status().ok());
  EXPECT_TRUE(waitUntil([&] { return handler_.ended.load() == 1; }));
}

TEST_F(StreamTransportTest, DefaultHandlerIsUnimplemented) {
  auto c = client(clientCert(ca_, "consumer-7"));
  auto s = c->openStream().value();
  v1::ReflectionEvent r;
  EXPECT_FALSE(s->read(&r));
  EXPECT_EQ(s->status().code(), kube::Code::MethodNotAllowed);
}

TEST_F(StreamTransportTest, CertificateFromAnotherCaGetsNoStream) {
  handler_.onStream = [](const Caller&, EventStream&) { return kube::Status::OK(); };
  kube::KeyPair otherCa = *kube::makeCa("other-ca");
  auto c = client(clientCert(otherCa, "consumer-7"));
  auto s = c->openStream().value();
  v1::ReflectionEvent r;
  (void)s->write(event("KEEPALIVE", 0));
  EXPECT_FALSE(s->read(&r));
  EXPECT_EQ(s->status().code(), kube::Code::Unavailable) << s->status().error().message;
  EXPECT_EQ(handler_.ended.load(), 0);
}

TEST_F(StreamTransportTest, NoClientCertificateIsUnauthenticated) {
  handler_.onStream = [](const Caller&, EventStream&) { return kube::Status::OK(); };
  auto c = client({});
  auto s = c->openStream().value();
  v1::ReflectionEvent r;
  EXPECT_FALSE(s->read(&r));
  EXPECT_EQ(s->status().code(), kube::Code::Unauthorized);
  EXPECT_EQ(handler_.ended.load(), 0);
}

TEST_F(StreamTransportTest, ServerShutdownEndsARunningStream) {
  handler_.onStream = [](const Caller&, EventStream& s) -> kube::Status {
    v1::ReflectionEvent e;
    while (s.read(&e)) {
    }
    return kube::Status::OK();
  };
  auto c = client(clientCert(ca_, "consumer-7"));
  auto s = c->openStream().value();
  ASSERT_TRUE(s->write(event("KEEPALIVE", 0)));
  ASSERT_TRUE(waitUntil([&] { return handler_.running.load() == 1; }));
  std::thread stopper([&] { server_->shutdown(200ms); });
  v1::ReflectionEvent r;
  EXPECT_FALSE(s->read(&r));
  stopper.join();
  EXPECT_EQ(handler_.ended.load(), 1);
}

}  // namespace
}  // namespace strait::peering

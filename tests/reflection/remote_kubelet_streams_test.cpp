// The provider side of `kubectl attach` and `kubectl port-forward` on an offloaded Pod, with
// an in-memory provider API server and in-memory streams: a consumer reaches only its own
// Pods (another consumer's Pod is NotFound and no connection is opened), its bytes reach the
// Pod's port and the Pod's come back, and the Pod closing ends the stream; an attach naming
// a command is refused.
#include <gtest/gtest.h>

#include <condition_variable>
#include <deque>
#include <mutex>
#include <thread>

#include "reflection/labels.h"
#include "reflection/remote_kubelet.h"
#include "reflection/unused_client.h"

namespace strait::reflection {
namespace {

using nlohmann::json;

const std::string kConsumer = "c0ffee00-0000-4000-8000-000000000001";
const std::string kOther = "c0ffee00-0000-4000-8000-000000000002";

// A provider API server holding a few Pods: get() only.
class PodsOnlyClient final : public testing::UnusedClient {
 public:
  std::map<std::pair<std::string, std::string>, json> pods;
  kube::Result<json> get(const kube::ResourceRef&, std::string_view ns, std::string_view name,
                         const kube::GetOptions&) override {
    auto it = pods.find({std::string(ns), std::string(name)});
    if (it == pods.end()) return kube::makeError(kube::Code::NotFound, "not found");
    return it->second;
  }
};

json pod(const std::string& ns, const std::string& name, const std::string& owner) {
  return {{"apiVersion", "v1"},
          {"kind", "Pod"},
          {"metadata",
           {{"name", name},
            {"namespace", ns},
            {"labels",
             {{std::string(kLabelOriginClusterId), owner},
              {std::string(kLabelOriginUid), "uid-" + name}}}}}};
}

// The server end of a call: frames from the consumer are queued by the test, frames to it
// collected.
template <class Frame>
class FakeStream final : public peering::FrameStream<Frame> {
 public:
  void push(Frame f) {
    std::lock_guard<std::mutex> l(mu_);
    in_.push_back(std::move(f));
    cv_.notify_all();
  }
  void endInput() {
    std::lock_guard<std::mutex> l(mu_);
    inputEnded_ = true;
    cv_.notify_all();
  }
  std::vector<Frame> written() {
    std::lock_guard<std::mutex> l(mu_);
    return out_;
  }
  // Waits (up to 5 s) until a written frame satisfies `pred`.
  bool waitWritten(const std::function<bool(const Frame&)>& pred) {
    std::unique_lock<std::mutex> l(mu_);
    return cv_.wait_for(l, std::chrono::seconds(5), [&] {
      for (const auto& f : out_) {
        if (pred(f)) return true;
      }
      return false;
    });
  }

  bool read(Frame* f) override {
    std::unique_lock<std::mutex> l(mu_);
    cv_.wait(l, [&] { return !in_.empty() || inputEnded_ || cancelled_; });
    if (in_.empty()) return false;
    *f = std::move(in_.front());
    in_.pop_front();
    return true;
  }
  bool write(const Frame& f) override {
    std::lock_guard<std::mutex> l(mu_);
    out_.push_back(f);
    cv_.notify_all();
    return true;
  }
  void writesDone() override {}
  void cancel() override {
    std::lock_guard<std::mutex> l(mu_);
    cancelled_ = true;
    cv_.notify_all();
  }
  bool cancelled() override {
    std::lock_guard<std::mutex> l(mu_);
    return cancelled_;
  }
  kube::Status finish() override { return kube::Status::OK(); }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Frame> in_;
  std::vector<Frame> out_;
  bool inputEnded_ = false, cancelled_ = false;
};
using FakeCall = FakeStream<v1::PortForwardFrame>;

// The Pod's port: answers "echo:" + what it got, then closes when told.
class EchoPort final : public kube::ByteStream {
 public:
  kube::Result<size_t> read(std::span<char> buf) override {
    std::unique_lock<std::mutex> l(mu_);
    cv_.wait(l, [&] { return !pending_.empty() || eof_ || closed_; });
    if (closed_) return kube::makeError(kube::Code::Unavailable, "closed");
    if (pending_.empty()) return size_t{0};
    size_t n = std::min(buf.size(), pending_.size());
    std::copy_n(pending_.begin(), n, buf.begin());
    pending_.erase(0, n);
    return n;
  }
  kube::Status write(std::string_view data) override {
    std::lock_guard<std::mutex> l(mu_);
    pending_ += "echo:" + std::string(data);
    cv_.notify_all();
    return kube::Status::OK();
  }
  void closeWrite() override {}
  void close() override {
    std::lock_guard<std::mutex> l(mu_);
    closed_ = true;
    cv_.notify_all();
  }
  void podCloses() {
    std::lock_guard<std::mutex> l(mu_);
    eof_ = true;
    cv_.notify_all();
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::string pending_;
  bool eof_ = false, closed_ = false;
};

struct Dialed {
  std::string ns, pod;
  uint16_t port = 0;
};

class RemoteKubeletPortForwardTest : public ::testing::Test {
 protected:
  void SetUp() override {
    client_.pods[{"web-" + kConsumer, "mine"}] = pod("web-" + kConsumer, "mine", kConsumer);
    client_.pods[{"web-" + kConsumer, "theirs"}] = pod("web-" + kConsumer, "theirs", kOther);
    RemoteKubeletOptions o;
    o.provider = &client_;
    o.providerConfig.server = "https://127.0.0.1:1";
    o.authorize = [](const peering::Caller&) { return kube::Status::OK(); };
    o.portForwarder = [this](const kube::RestConfig&, const std::string& ns,
                             const std::string& pod, uint16_t port)
        -> kube::Result<std::unique_ptr<kube::ByteStream>> {
      std::lock_guard<std::mutex> l(mu_);
      dialed_.push_back({ns, pod, port});
      auto s = std::make_unique<EchoPort>();
      port_ = s.get();
      return std::unique_ptr<kube::ByteStream>(std::move(s));
    };
    auto rk = RemoteKubelet::create(std::move(o));
    ASSERT_TRUE(rk.ok()) << rk.error().message;
    kubelet_ = std::move(*rk);
  }

  static v1::PortForwardFrame start(const std::string& ns, const std::string& pod,
                                    uint32_t port) {
    v1::PortForwardFrame f;
    f.mutable_start()->set_namespace_(ns);
    f.mutable_start()->set_pod(pod);
    f.mutable_start()->set_port(port);
    return f;
  }

  PodsOnlyClient client_;
  std::unique_ptr<RemoteKubelet> kubelet_;
  std::mutex mu_;
  std::vector<Dialed> dialed_;
  EchoPort* port_ = nullptr;
};

TEST_F(RemoteKubeletPortForwardTest, AnotherConsumersPodIsNotFoundAndNothingIsDialed) {
  FakeCall call;
  call.push(start("web", "theirs", 8080));
  kube::Status s = kubelet_->portForward({kConsumer, "test"}, call);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().code, kube::Code::NotFound);
  EXPECT_TRUE(call.written().empty());
  std::lock_guard<std::mutex> l(mu_);
  EXPECT_TRUE(dialed_.empty());
}

TEST_F(RemoteKubeletPortForwardTest, PortZeroIsRefused) {
  FakeCall call;
  call.push(start("web", "mine", 0));
  kube::Status s = kubelet_->portForward({kConsumer, "test"}, call);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().code, kube::Code::BadRequest);
}

TEST_F(RemoteKubeletPortForwardTest, BytesFlowBothWaysAndThePodClosingEndsTheStream) {
  FakeCall call;
  call.push(start("web", "mine", 8080));
  kube::Status result;
  std::thread server([&] { result = kubelet_->portForward({kConsumer, "test"}, call); });
  ASSERT_TRUE(call.waitWritten([](const auto& f) { return f.has_opened(); }));
  {
    std::lock_guard<std::mutex> l(mu_);
    ASSERT_EQ(dialed_.size(), 1u);
    EXPECT_EQ(dialed_[0].ns, "web-" + kConsumer);
    EXPECT_EQ(dialed_[0].pod, "mine");
    EXPECT_EQ(dialed_[0].port, 8080);
  }
  v1::PortForwardFrame data;
  data.set_data("GET /hostname");
  call.push(data);
  EXPECT_TRUE(call.waitWritten(
      [](const auto& f) { return f.has_data() && f.data() == "echo:GET /hostname"; }));
  port_->podCloses();
  EXPECT_TRUE(call.waitWritten([](const auto& f) { return f.has_close_write(); }));
  call.endInput();  // the consumer ends its side once it saw the end
  server.join();
  EXPECT_TRUE(result.ok());
  auto frames = call.written();
  ASSERT_FALSE(frames.empty());
  EXPECT_TRUE(frames.front().has_opened());
  EXPECT_TRUE(frames.back().has_close_write());
}

TEST_F(RemoteKubeletPortForwardTest, AttachToAnotherConsumersPodIsNotFoundAndACommandIsRefused) {
  auto attachStart = [](const std::string& pod) {
    v1::ExecFrame f;
    f.mutable_start()->set_namespace_("web");
    f.mutable_start()->set_pod(pod);
    f.mutable_start()->set_stdout(true);
    return f;
  };
  FakeStream<v1::ExecFrame> theirs;
  theirs.push(attachStart("theirs"));
  kube::Status s = kubelet_->attach({kConsumer, "test"}, theirs);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().code, kube::Code::NotFound);
  EXPECT_EQ(s.error().message, "pods \"theirs\" not found");
  EXPECT_TRUE(theirs.written().empty());

  FakeStream<v1::ExecFrame> withCommand;
  v1::ExecFrame f = attachStart("mine");
  f.mutable_start()->add_command("sh");
  withCommand.push(f);
  s = kubelet_->attach({kConsumer, "test"}, withCommand);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().code, kube::Code::BadRequest);
}

}  // namespace
}  // namespace strait::reflection

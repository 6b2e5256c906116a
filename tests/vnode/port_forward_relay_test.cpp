// The virtual kubelet's port-forward dialer alone, on an in-memory RemoteKubelet call: the
// start frame names the consumer's Pod and port, a refusal is the dial's error, the Pod's
// bytes are read until the provider says its side closed, an error inside the Pod is a read
// error with the provider's message, and writes travel as data frames.
#include "vnode/port_forward_relay.h"

#include <gtest/gtest.h>

#include <deque>
#include <mutex>

namespace strait::vnode {
namespace {

// The client end of a PortForward call whose answers are scripted.
class ScriptedCall final : public peering::PortForwardStream {
 public:
  ScriptedCall(std::deque<v1::PortForwardFrame> answers, kube::Status end)
      : answers_(std::move(answers)), end_(std::move(end)) {}
  bool read(v1::PortForwardFrame* f) override {
    std::lock_guard<std::mutex> l(mu_);
    if (answers_.empty() || cancelled_) return false;
    *f = answers_.front();
    answers_.pop_front();
    return true;
  }
  bool write(const v1::PortForwardFrame& f) override {
    std::lock_guard<std::mutex> l(mu_);
    written.push_back(f);
    return true;
  }
  void writesDone() override {
    std::lock_guard<std::mutex> l(mu_);
    halfClosed = true;
  }
  void cancel() override {
    std::lock_guard<std::mutex> l(mu_);
    cancelled_ = true;
  }
  bool cancelled() override { return false; }
  kube::Status finish() override { return end_; }

  std::vector<v1::PortForwardFrame> written;  // guarded by mu_ while in use
  bool halfClosed = false;

 private:
  std::mutex mu_;
  std::deque<v1::PortForwardFrame> answers_;
  kube::Status end_;
  bool cancelled_ = false;
};

class OneCallClient final : public peering::KubeletClient {
 public:
  explicit OneCallClient(std::unique_ptr<ScriptedCall> call) : call_(std::move(call)) {}
  ScriptedCall* call = nullptr;

  kube::Status logs(const v1::LogsRequest&, const std::function<bool(std::string_view)>&,
                    const std::function<bool()>&) override {
    return kube::makeError(kube::Code::Internal, "unused");
  }
  kube::Result<std::unique_ptr<peering::ExecStream>> exec() override {
    return kube::makeError(kube::Code::Internal, "unused");
  }
  kube::Result<std::unique_ptr<peering::ExecStream>> attach() override {
    return kube::makeError(kube::Code::Internal, "unused");
  }
  kube::Result<std::unique_ptr<peering::PortForwardStream>> portForward() override {
    if (!call_) return kube::makeError(kube::Code::Internal, "called twice");
    call = call_.get();
    return std::unique_ptr<peering::PortForwardStream>(std::move(call_));
  }
  kube::Status listPods(v1::ListPodsResponse*, std::chrono::milliseconds) override {
    return kube::makeError(kube::Code::Internal, "unused");
  }
  kube::Status statsSummary(v1::StatsSummaryResponse*, std::chrono::milliseconds) override {
    return kube::makeError(kube::Code::Internal, "unused");
  }

 private:
  std::unique_ptr<ScriptedCall> call_;
};

v1::PortForwardFrame opened() {
  v1::PortForwardFrame f;
  f.set_opened(true);
  return f;
}
v1::PortForwardFrame data(const std::string& d) {
  v1::PortForwardFrame f;
  f.set_data(d);
  return f;
}

std::string readAll(kube::ByteStream& s, kube::Status* end) {
  std::string out;
  char buf[3];  // small, so one frame takes several reads
  for (;;) {
    auto n = s.read(buf);
    if (!n) {
      *end = n.error();
      return out;
    }
    if (*n == 0) return out;
    out.append(buf, *n);
  }
}

TEST(PortForwardRelayTest, TheProvidersRefusalIsTheDialsError) {
  OneCallClient client(std::make_unique<ScriptedCall>(
      std::deque<v1::PortForwardFrame>{},
      kube::makeError(kube::Code::NotFound, "pods \"victim\" not found")));
  auto s = dialRemotePort(client, "demo", "victim", 8080);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().code, kube::Code::NotFound);
  EXPECT_EQ(s.error().message, "pods \"victim\" not found");
}

TEST(PortForwardRelayTest, StartNamesThePodAndBytesFlowUntilThePodSideCloses) {
  v1::PortForwardFrame closed;
  closed.set_close_write(true);
  auto call = std::make_unique<ScriptedCall>(
      std::deque<v1::PortForwardFrame>{opened(), data("HTTP/1.1 200 OK\r\n"), data("web"), closed},
      kube::Status::OK());
  ScriptedCall* raw = call.get();
  OneCallClient client(std::move(call));
  auto s = dialRemotePort(client, "demo", "web", 8080);
  ASSERT_TRUE(s.ok()) << s.error().message;
  ASSERT_FALSE(raw->written.empty());
  const v1::PortForwardFrame& start = raw->written.front();
  ASSERT_TRUE(start.has_start());
  EXPECT_EQ(start.start().namespace_(), "demo");
  EXPECT_EQ(start.start().pod(), "web");
  EXPECT_EQ(start.start().port(), 8080u);

  ASSERT_TRUE((*s)->write("GET /hostname HTTP/1.1\r\n\r\n").ok());
  ASSERT_EQ(raw->written.size(), 2u);
  EXPECT_EQ(raw->written[1].data(), "GET /hostname HTTP/1.1\r\n\r\n");
  kube::Status end;
  EXPECT_EQ(readAll(**s, &end), "HTTP/1.1 200 OK\r\nweb");
  EXPECT_TRUE(end.ok());
  auto again = (*s)->read(std::span<char>());
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(*again, 0u);

  (*s)->closeWrite();
  EXPECT_TRUE(raw->written.back().has_close_write());
  EXPECT_TRUE(raw->halfClosed);
  EXPECT_FALSE((*s)->write("more").ok());
}

TEST(PortForwardRelayTest, AFailureInsideThePodIsAReadErrorWithTheProvidersMessage) {
  v1::PortForwardFrame err;
  err.set_error("failed to connect to localhost:8080: connection refused");
  OneCallClient client(std::make_unique<ScriptedCall>(
      std::deque<v1::PortForwardFrame>{opened(), err}, kube::Status::OK()));
  auto s = dialRemotePort(client, "demo", "web", 8080);
  ASSERT_TRUE(s.ok());
  kube::Status end;
  EXPECT_EQ(readAll(**s, &end), "");
  ASSERT_FALSE(end.ok());
  EXPECT_EQ(end.error().message, "failed to connect to localhost:8080: connection refused");
}

}  // namespace
}  // namespace strait::vnode

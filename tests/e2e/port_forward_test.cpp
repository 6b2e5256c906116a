// `kubectl port-forward` (the real /usr/bin/kubectl 1.32) against a minicluster: with the
// process runtime, as root, to an agnhost netexec Pod — curl through the forwarded port gets
// the Pod's name, two connections are forwarded at once, a port nobody listens on gives
// kubectl's error, the plain SPDY upgrade (KUBECTL_PORT_FORWARD_WEBSOCKETS=false) works as
// well as the default SPDY-over-WebSocket, and the Python client's WebSocket port-forward
// (v4.channel.k8s.io) reaches the Pod too. With the simulated runtime, kubectl prints that
// port-forward needs the process runtime.
//
// The process-runtime tests are skipped (with the reason) when the process runtime cannot run
// here (processRuntimeUnavailable(): not root, no usable `ip netns`, nft, dnsmasq or curl).

#include <arpa/inet.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <nlohmann/json.hpp>
#include <regex>
#include <thread>

#include "e2e/cluster_fixture.h"

namespace strait::e2e {
namespace {

using ::testing::HasSubstr;
using json = nlohmann::json;

const char* kKubectl = "/usr/bin/kubectl";
// netexec's /shell printing 3 MB of base64 (4 MB) in its JSON answer.
const char* kBigAnswer = "/shell?cmd=head%20-c%203000000%20/dev/zero%20%7C%20base64%20-w0";

std::string agnhostPod(const std::string& name) {
  return json{{"apiVersion", "v1"},
              {"kind", "Pod"},
              {"metadata", {{"name", name}, {"labels", {{"app", name}}}}},
              {"spec",
               {{"terminationGracePeriodSeconds", 1},
                {"containers",
                 json::array({{{"name", "agnhost"},
                               {"image", "registry.k8s.io/e2e-test-images/agnhost:2.52"},
                               {"args", {"netexec", "--http-port=8080"}},
                               {"ports", json::array({{{"containerPort", 8080}}})}}})}}}}
      .dump();
}

// An HTTP/1.0 GET of `path` on 127.0.0.1:`port` over a socket the caller opened.
int connectLocal(uint16_t port) {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  timeval tv{20, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}
std::string httpGet(int fd, const std::string& path) {
  std::string req = "GET " + path + " HTTP/1.0\r\nHost: localhost\r\n\r\n";
  if (::send(fd, req.data(), req.size(), MSG_NOSIGNAL) != static_cast<ssize_t>(req.size())) {
    return "";
  }
  std::string got;
  char buf[4096];
  for (ssize_t n; (n = ::recv(fd, buf, sizeof(buf), 0)) > 0;) got.append(buf, static_cast<size_t>(n));
  size_t body = got.find("\r\n\r\n");
  return body == std::string::npos ? got : got.substr(body + 4);
}

class PortForwardE2eTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    if (!processRuntimeUnavailable().empty()) return;
    cluster_ = new Minicluster();
    startError_ = cluster_->start("pf-e2e-" + std::to_string(::getpid()), 90s, {"--runtime", "process", "--nodes", "1"});
  }
  static void TearDownTestSuite() {
    delete cluster_;
    cluster_ = nullptr;
  }

  void SetUp() override {
    if (std::string why = processRuntimeUnavailable(); !why.empty()) GTEST_SKIP() << why;
    ASSERT_EQ(startError_, "") << startError_;
    home_ = std::make_unique<TempDir>("strait-pf-home");
  }

  Env env(const Env& extra = {}) {
    Env e = {{"KUBECONFIG", cluster_->kubeconfig()},
             {"KUBECACHEDIR", home_->file("cache-" + std::to_string(++calls_))},
             {"HOME", home_->path()}};
    for (const auto& [k, v] : extra) e[k] = v;
    return e;
  }
  CommandResult kubectl(const std::vector<std::string>& args, const std::string& in = {}) {
    std::vector<std::string> argv = {kKubectl};
    argv.insert(argv.end(), args.begin(), args.end());
    return runCommand(argv, env(), 60s, in);
  }

  // Creates agnhost Pod `name` once per suite and waits until it is Running.
  void ensurePod(const std::string& name) {
    if (kubectl({"get", "pod", name}).exitCode != 0) {
      CommandResult r = kubectl({"apply", "-f", "-"}, agnhostPod(name));
      ASSERT_EQ(r.exitCode, 0) << r.describe();
    }
    bool running = waitFor(
        [&] {
          auto r = kubectl({"get", "pod", name, "-o", "jsonpath={.status.phase}"});
          return r.out == "Running";
        },
        90s, 250ms);
    ASSERT_TRUE(running) << kubectl({"get", "pods", "-o", "wide"}).out << cluster_->serverLog();
  }

  // Starts `kubectl port-forward pod/NAME :REMOTE` and waits for "Forwarding from
  // 127.0.0.1:LOCAL"; returns LOCAL (0 on failure).
  uint16_t startPortForward(BackgroundProcess& p, const std::string& pod, int remote,
                            const Env& extra = {}, const std::vector<std::string>& flags = {}) {
    std::vector<std::string> argv = {kKubectl, "port-forward", "--address", "127.0.0.1",
                                     "pod/" + pod, ":" + std::to_string(remote)};
    argv.insert(argv.end(), flags.begin(), flags.end());
    std::string n = std::to_string(++background_);
    std::string error;
    if (!p.start(argv, env(extra), home_->file("pf" + n + ".out"), home_->file("pf" + n + ".err"),
                 &error)) {
      ADD_FAILURE() << error;
      return 0;
    }
    std::regex forwarding(R"(Forwarding from 127\.0\.0\.1:(\d+) -> )" + std::to_string(remote));
    std::smatch m;
    bool ok = waitFor(
        [&] {
          std::string out = p.stdoutText();
          return std::regex_search(out, m, forwarding) || !p.running();
        },
        60s, 100ms);
    std::string out = p.stdoutText();
    if (!ok || !std::regex_search(out, m, forwarding)) {
      ADD_FAILURE() << "kubectl port-forward did not start: " << out << p.stderrText();
      return 0;
    }
    return static_cast<uint16_t>(std::stoi(m[1].str()));
  }

  CommandResult curl(uint16_t local, const std::string& path) {
    return runCommand({"/usr/bin/curl", "-sS", "--max-time", "20",
                       "http://127.0.0.1:" + std::to_string(local) + path},
                      {}, 30s);
  }

  static Minicluster* cluster_;
  static std::string startError_;
  std::unique_ptr<TempDir> home_;
  int calls_ = 0;
  int background_ = 0;
};

Minicluster* PortForwardE2eTest::cluster_ = nullptr;
std::string PortForwardE2eTest::startError_;

TEST_F(PortForwardE2eTest, CurlThroughKubectlPortForwardReachesThePod) {
  ASSERT_NO_FATAL_FAILURE(ensurePod("web"));
  BackgroundProcess pf;
  // -v=6 logs the upgrade request: kubectl 1.32 tunnels SPDY in a WebSocket by default.
  uint16_t local = startPortForward(pf, "web", 8080, {}, {"-v=6"});
  ASSERT_NE(local, 0);
  CommandResult r = curl(local, "/hostname");
  EXPECT_EQ(r.exitCode, 0) << r.describe() << pf.stderrText();
  EXPECT_EQ(r.out, "web");
  r = curl(local, "/echo?msg=forwarded");
  EXPECT_EQ(r.out, "forwarded") << r.describe();
  // Megabytes in one answer (many DATA frames, no flow-control stall).
  r = curl(local, kBigAnswer);
  EXPECT_EQ(r.exitCode, 0) << r.exitCode << r.err;
  EXPECT_GT(r.out.size(), 4'000'000u);
  EXPECT_TRUE(std::regex_search(pf.stderrText(), std::regex(R"(GET https://\S+/portforward)")))
      << pf.stderrText();
  EXPECT_TRUE(pf.running()) << pf.stderrText();
}

TEST_F(PortForwardE2eTest, TwoConnectionsAtOnce) {
  ASSERT_NO_FATAL_FAILURE(ensurePod("web"));
  BackgroundProcess pf;
  uint16_t local = startPortForward(pf, "web", 8080);
  ASSERT_NE(local, 0);
  // The first connection stays open (request not yet sent) while the second is served.
  int a = connectLocal(local);
  int b = connectLocal(local);
  ASSERT_GE(a, 0);
  ASSERT_GE(b, 0);
  EXPECT_EQ(httpGet(b, "/hostname"), "web");
  EXPECT_EQ(httpGet(a, "/echo?msg=first"), "first");
  ::close(a);
  ::close(b);
  // And two curls side by side.
  CommandResult r1, r2;
  std::thread t1([&] { r1 = curl(local, "/shell?cmd=sleep%201%3Becho%20one"); });
  std::thread t2([&] { r2 = curl(local, "/shell?cmd=sleep%201%3Becho%20two"); });
  t1.join();
  t2.join();
  EXPECT_THAT(r1.out, HasSubstr("one\\n")) << r1.describe() << pf.stderrText();
  EXPECT_THAT(r2.out, HasSubstr("two\\n")) << r2.describe() << pf.stderrText();
  EXPECT_TRUE(pf.running()) << pf.stderrText();
}

TEST_F(PortForwardE2eTest, APortNobodyListensOnGivesKubectlsError) {
  ASSERT_NO_FATAL_FAILURE(ensurePod("web"));
  BackgroundProcess pf;
  uint16_t local = startPortForward(pf, "web", 9999);
  ASSERT_NE(local, 0);
  CommandResult r = curl(local, "/hostname");
  EXPECT_NE(r.exitCode, 0) << r.describe();
  bool reported = waitFor(
      [&] { return pf.stderrText().find("an error occurred forwarding") != std::string::npos; },
      20s);
  EXPECT_TRUE(reported) << pf.stderrText();
  EXPECT_THAT(pf.stderrText(), HasSubstr("-> 9999: error forwarding port 9999 to pod web"));
  EXPECT_THAT(pf.stderrText(), HasSubstr("connection refused"));
}

TEST_F(PortForwardE2eTest, PlainSpdyWhenWebSocketsAreOff) {
  ASSERT_NO_FATAL_FAILURE(ensurePod("web"));
  BackgroundProcess pf;
  uint16_t local = startPortForward(pf, "web", 8080, {{"KUBECTL_PORT_FORWARD_WEBSOCKETS", "false"}},
                                    {"-v=6"});
  ASSERT_NE(local, 0);
  CommandResult r = curl(local, "/hostname");
  EXPECT_EQ(r.exitCode, 0) << r.describe() << pf.stderrText();
  EXPECT_EQ(r.out, "web");
  r = curl(local, kBigAnswer);
  EXPECT_EQ(r.exitCode, 0) << r.exitCode << r.err;
  EXPECT_GT(r.out.size(), 4'000'000u);
  // The SPDY upgrade is a POST; no WebSocket (GET) was tried.
  EXPECT_TRUE(std::regex_search(pf.stderrText(),
                                std::regex(R"(POST https://\S+/portforward 101)")))
      << pf.stderrText();
  EXPECT_FALSE(std::regex_search(pf.stderrText(), std::regex(R"(GET https://\S+/portforward)")))
      << pf.stderrText();
}

TEST_F(PortForwardE2eTest, PythonClientWebSocketPortForward) {
  ASSERT_NO_FATAL_FAILURE(ensurePod("web"));
  if (::access("/usr/bin/python3", X_OK) != 0) GTEST_SKIP() << "no /usr/bin/python3";
  CommandResult r = runCommand(
      {"/usr/bin/python3", pythonScript("port_forward.py"), cluster_->kubeconfig(), "web", "8080"},
      env(), 60s);
  EXPECT_EQ(r.exitCode, 0) << r.describe();
  EXPECT_THAT(r.out, HasSubstr("port_forward: hostname=web")) << r.describe();
  EXPECT_THAT(r.out, HasSubstr("port_forward: refused=")) << r.describe();
}

// The simulated runtime (no root needed): its Pods are not processes.
class SimulatedPortForwardTest : public ClusterTest {
 public:
  static void SetUpTestSuite() { SetUpTestSuiteWithArgs({"--nodes", "1"}); }
};

TEST_F(SimulatedPortForwardTest, KubectlSaysPortForwardNeedsTheProcessRuntime) {
  CommandResult r = kubectl({"apply", "-f", "-"}, agnhostPod("sim"));
  ASSERT_EQ(r.exitCode, 0) << r.describe();
  ASSERT_TRUE(waitFor(
      [&] {
        return kubectl({"get", "pod", "sim", "-o", "jsonpath={.status.phase}"}).out == "Running";
      },
      60s, 250ms));
  auto pf = std::make_unique<BackgroundProcess>();
  std::string error;
  ASSERT_TRUE(pf->start({kKubectl, "port-forward", "--address", "127.0.0.1", "pod/sim", ":8080"},
                        clientEnv(), testDir() + "/pf.out", testDir() + "/pf.err", &error))
      << error;
  std::regex forwarding(R"(Forwarding from 127\.0\.0\.1:(\d+) -> 8080)");
  std::smatch m;
  std::string out;
  ASSERT_TRUE(waitFor(
      [&] {
        out = pf->stdoutText();
        return std::regex_search(out, m, forwarding) || !pf->running();
      },
      60s, 100ms));
  ASSERT_TRUE(std::regex_search(out, m, forwarding)) << out << pf->stderrText();
  CommandResult c = runCommand({"/usr/bin/curl", "-sS", "--max-time", "20",
                                "http://127.0.0.1:" + m[1].str() + "/hostname"},
                               {}, 30s);
  EXPECT_NE(c.exitCode, 0) << c.describe();
  EXPECT_TRUE(waitFor(
      [&] {
        return pf->stderrText().find("port-forward needs the process runtime") !=
               std::string::npos;
      },
      20s))
      << pf->stderrText();
}

}  // namespace
}  // namespace strait::e2e

// `kubectl attach` on Pods of the process runtime, as root (real kubelet API, real kubectl
// over WebSocket v5.channel.k8s.io): attach shows what a running container writes from now
// on (not what it wrote before), and `attach -i` delivers stdin to a container started with
// `stdin: true` (its pipe kept open by the runtime; `stdinOnce` closes it when the session's
// input ends, so a `read` loop sees end of input, exits, and the session ends with it). On the
// simulated runtime, attach fails with a clear message. A container with `tty: true` runs on
// a terminal, which attach reaches the same way.
//
// Skipped (with the reason) when the process runtime cannot run here
// (processRuntimeUnavailable()).

#include <gtest/gtest.h>
#include <unistd.h>

#include <nlohmann/json.hpp>
#include <regex>
#include <sstream>

#include "e2e/cluster_fixture.h"

namespace strait::e2e {
namespace {

using json = nlohmann::json;
using namespace std::chrono_literals;

json shellPod(const std::string& name, const std::string& script) {
  return {{"apiVersion", "v1"},
          {"kind", "Pod"},
          {"metadata", {{"name", name}}},
          {"spec",
           {{"terminationGracePeriodSeconds", 1},
            {"containers",
             json::array({{{"name", "main"},
                           {"image", "debian:12"},
                           {"command", {"sh", "-c", script}}}})}}}};
}

class ProcessAttachTest : public ::testing::Test {
 protected:
  void SetUp() override {
    home_ = std::make_unique<TempDir>("strait-attach");
  }

  CommandResult kubectl(const Minicluster& c, const std::vector<std::string>& args,
                        const std::string& in = {}, std::chrono::milliseconds timeout = 60s) {
    std::vector<std::string> argv = {"/usr/bin/kubectl", "--kubeconfig", c.kubeconfig()};
    argv.insert(argv.end(), args.begin(), args.end());
    return runCommand(argv,
                      {{"KUBECACHEDIR", home_->file("cache-" + std::to_string(++calls_))},
                       {"HOME", home_->path()}},
                      timeout, in);
  }
  bool running(const Minicluster& c, const std::string& pod) {
    return kubectl(c, {"get", "pod", pod, "-o", "jsonpath={.status.phase}"}).out == "Running";
  }

  std::unique_ptr<TempDir> home_;
  int calls_ = 0;
};

TEST_F(ProcessAttachTest, AttachShowsNewOutputAndDeliversStdinToACatLikeContainer) {
  if (std::string why = processRuntimeUnavailable(); !why.empty()) GTEST_SKIP() << why;
  Minicluster c;
  std::string err = c.start("attach-p", 90s, {"--runtime", "process", "--nodes", "1"});
  ASSERT_EQ(err, "") << err;

  // Output from now on.
  json ticker = shellPod("ticker", "i=0; while true; do i=$((i+1)); echo \"tick $i\"; sleep 0.2; done");
  ASSERT_EQ(kubectl(c, {"apply", "-f", "-"}, ticker.dump()).exitCode, 0);
  int before = 0;
  ASSERT_TRUE(waitFor(
      [&] {
        auto seen = tickNumbers(kubectl(c, {"logs", "ticker"}).out);
        before = seen.empty() ? 0 : seen.back();
        return before >= 5;
      },
      60s, 250ms))
      << kubectl(c, {"get", "pods", "-o", "wide"}).out << c.serverLog();
  CommandResult a = kubectl(c, {"attach", "ticker"}, "", 3s);
  EXPECT_TRUE(a.timedOut) << a.describe();
  std::vector<int> attached = tickNumbers(a.out);
  ASSERT_GE(attached.size(), 3u) << a.describe();
  EXPECT_GT(attached.front(), before) << "attach replayed old output:\n" << a.out;
  for (size_t i = 1; i < attached.size(); ++i) EXPECT_EQ(attached[i], attached[i - 1] + 1);

  // stdin to a cat-like container; stdinOnce ends its input with the session's.
  json cat = shellPod("cat", "echo ready; while read l; do echo \"got: $l\"; done; echo \"input closed\"");
  cat["spec"]["restartPolicy"] = "Never";
  cat["spec"]["containers"][0]["stdin"] = true;
  cat["spec"]["containers"][0]["stdinOnce"] = true;
  ASSERT_EQ(kubectl(c, {"apply", "-f", "-"}, cat.dump()).exitCode, 0);
  ASSERT_TRUE(waitFor([&] { return kubectl(c, {"logs", "cat"}).out == "ready\n"; }, 60s, 250ms))
      << kubectl(c, {"describe", "pod", "cat"}).out;
  CommandResult in = kubectl(c, {"attach", "-i", "cat"}, "hello\nworld\n", 30s);
  EXPECT_EQ(in.exitCode, 0) << in.describe();
  EXPECT_NE(in.out.find("got: hello\ngot: world\ninput closed\n"), std::string::npos)
      << in.describe();
  EXPECT_EQ(in.out.find("ready"), std::string::npos) << "attach replayed old output: " << in.out;
  EXPECT_TRUE(waitFor(
      [&] {
        return kubectl(c, {"get", "pod", "cat", "-o", "jsonpath={.status.phase}"}).out ==
               "Succeeded";
      },
      30s, 250ms));
  EXPECT_EQ(kubectl(c, {"logs", "cat"}).out, "ready\ngot: hello\ngot: world\ninput closed\n");

  // tty: true runs the container on a terminal whose output still reaches its log and attach;
  // the end of input is ^D on the terminal.
  json tty = shellPod("tty", "tty; while read l; do echo \"got: $l\"; done; echo \"input closed\"");
  tty["spec"]["restartPolicy"] = "Never";
  tty["spec"]["containers"][0]["stdin"] = true;
  tty["spec"]["containers"][0]["stdinOnce"] = true;
  tty["spec"]["containers"][0]["tty"] = true;
  ASSERT_EQ(kubectl(c, {"apply", "-f", "-"}, tty.dump()).exitCode, 0);
  ASSERT_TRUE(waitFor(
      [&] { return kubectl(c, {"logs", "tty"}).out.find("/dev/pts/") == 0; }, 60s, 250ms))
      << kubectl(c, {"logs", "tty"}).describe();
  CommandResult t = kubectl(c, {"attach", "-i", "tty"}, "on a terminal\n", 30s);
  EXPECT_EQ(t.exitCode, 0) << t.describe();
  EXPECT_NE(t.out.find("got: on a terminal\r\n"), std::string::npos) << t.describe();
  EXPECT_NE(t.out.find("input closed"), std::string::npos) << t.describe();
}

TEST_F(ProcessAttachTest, TheSimulatedRuntimeRefusesAttachWithAClearMessage) {
  Minicluster c;
  std::string err = c.start("attach-s", 60s, {"--nodes", "1"});
  ASSERT_EQ(err, "") << err;
  json pod = shellPod("app", "sleep infinity");
  ASSERT_EQ(kubectl(c, {"apply", "-f", "-"}, pod.dump()).exitCode, 0);
  ASSERT_TRUE(waitFor([&] { return running(c, "app"); }, 60s, 250ms));
  CommandResult a = kubectl(c, {"attach", "app"}, "", 20s);
  EXPECT_NE(a.exitCode, 0) << a.describe();
  EXPECT_FALSE(a.timedOut) << a.describe();
  EXPECT_NE((a.out + a.err).find("attach is not supported by the simulated runtime"),
            std::string::npos)
      << a.describe();
}

}  // namespace
}  // namespace strait::e2e

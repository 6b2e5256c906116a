// `strait demo` as a user runs it: non-interactively to completion (plain output, summary
// table, nothing left behind), and with --keep explored by real kubectl, then stopped by
// Ctrl-C. Each test checks by pid that no process the demo started is left.
#include "e2e/demo_support.h"

namespace strait::e2e {
namespace {

using namespace demo;

TEST(DemoTest, RunsToCompletionWithPlainOutputAndLeavesNothing) {
  TempDir tmp("strait-demo-test");
  std::string dir = tmp.file("demo");
  CommandResult r = runCommand(demoArgs(dir), {}, 400s);
  ASSERT_EQ(r.exitCode, 0) << r.describe();
  EXPECT_EQ(r.out.find("\033["), std::string::npos) << "terminal escapes in plain output";
  EXPECT_NE(r.out.find("progress: running_home="), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("virtual node strait-cloud is Ready"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("all 20 Pods Running"), std::string::npos) << r.out;
  auto rows = summaryRows(r.out);
  ASSERT_EQ(rows.size(), 20u) << r.out;
  int home = 0, cloud = 0;
  for (const auto& [node, remote] : rows) {
    if (node == "strait-cloud") {
      ++cloud;
      // demo-<consumer id>/node-N of the cloud cluster.
      EXPECT_TRUE(std::regex_match(remote, std::regex("demo-[a-z0-9-]+/node-[0-9]+"))) << remote;
    } else {
      ++home;
      EXPECT_EQ(remote, "-");
    }
  }
  // Home has 4 CPU (8 replicas of 500m); the rest must have gone to the cloud.
  EXPECT_GE(cloud, 12) << r.out;
  EXPECT_LE(home, 8) << r.out;
  EXPECT_NE(r.out.find("kubectl --kubeconfig " + dir + "/home.kubeconfig"), std::string::npos);
  std::vector<pid_t> pids = startedPids(r.out);
  EXPECT_EQ(pids.size(), 4u) << r.out;
  expectAllGone(pids);
  EXPECT_FALSE(exists(dir)) << "the demo folder was not removed";
  if (processRuntimeUnavailable().empty()) {
    // As root the demo's Pods are real processes, and one in the cloud answers over HTTP.
    EXPECT_NE(r.out.find("runtime: process"), std::string::npos) << r.out;
    EXPECT_TRUE(std::regex_search(r.out, std::regex("answered: web-[a-z0-9-]+"))) << r.out;
  } else {
    EXPECT_NE(r.out.find("runtime: sim"), std::string::npos) << r.out;
  }
}

TEST(DemoTest, SimRuntimeOnRequest) {
  TempDir tmp("strait-demo-test");
  std::vector<std::string> argv = demoArgs(tmp.file("demo"));
  argv.insert(argv.end(), {"--runtime", "sim", "--replicas", "3"});
  CommandResult r = runCommand(argv, {}, 300s);
  ASSERT_EQ(r.exitCode, 0) << r.describe();
  EXPECT_EQ(r.out.find("runtime: process"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("answered:"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("all 3 Pods Running"), std::string::npos) << r.out;
}

TEST(DemoTest, KeepServesKubectlUntilCtrlC) {
  TempDir tmp("strait-demo-test");
  std::string dir = tmp.file("demo");
  std::vector<std::string> argv = demoArgs(dir);
  argv.push_back("--keep");
  BackgroundProcess demo;
  std::string error;
  ASSERT_TRUE(demo.start(argv, {}, tmp.file("out"), tmp.file("err"), &error)) << error;
  bool kept = waitFor(
      [&] {
        return demo.stdoutText().find("keeps running") != std::string::npos || !demo.running();
      },
      300s, 200ms);
  ASSERT_TRUE(kept && demo.running()) << demo.stdoutText() << demo.stderrText();
  Env env = {{"KUBECACHEDIR", tmp.file("kcache")}, {"HOME", tmp.path()}};
  CommandResult pods = runCommand({"kubectl", "--kubeconfig", dir + "/home.kubeconfig", "-n",
                                   "demo", "get", "pods", "-o", "wide", "--no-headers"},
                                  env);
  ASSERT_EQ(pods.exitCode, 0) << pods.describe();
  EXPECT_NE(pods.out.find("strait-cloud"), std::string::npos) << pods.out;
  CommandResult remote = runCommand({"kubectl", "--kubeconfig", dir + "/cloud.kubeconfig", "get",
                                     "pods", "-A", "-l", "strait.io/origin-cluster-id",
                                     "--no-headers"},
                                    env);
  ASSERT_EQ(remote.exitCode, 0) << remote.describe();
  EXPECT_NE(remote.out.find("Running"), std::string::npos) << remote.out;

  std::vector<pid_t> pids = startedPids(demo.stdoutText());
  ASSERT_EQ(pids.size(), 4u) << demo.stdoutText();
  ASSERT_EQ(::kill(demo.pid(), SIGINT), 0);
  ASSERT_TRUE(waitFor([&] { return !demo.running(); }, 60s)) << demo.stdoutText();
  EXPECT_EQ(demo.exitCode(), 130) << demo.stdoutText() << demo.stderrText();
  EXPECT_NE(demo.stdoutText().find("interrupted"), std::string::npos);
  expectAllGone(pids);
  EXPECT_FALSE(exists(dir));
}

}  // namespace
}  // namespace strait::e2e

// `strait demo` interrupted early (Ctrl-C), killed outright, and with bad flags. Each test
// checks by pid that no process the demo started is left. The full runs are in
// demo_run_test.cpp.
#include "e2e/demo_support.h"

namespace strait::e2e {
namespace {

using namespace demo;

// Ctrl-C while the clusters are still starting: the demo stops what it started so far.
TEST(DemoTest, CtrlCDuringStartStopsEverything) {
  TempDir tmp("strait-demo-test");
  std::string dir = tmp.file("new/demo");  // both folders are the demo's to remove
  BackgroundProcess demo;
  std::string error;
  ASSERT_TRUE(demo.start(demoArgs(dir), {}, tmp.file("out"), tmp.file("err"), &error)) << error;
  ASSERT_TRUE(waitFor([&] { return startedPids(demo.stdoutText()).size() >= 2 || !demo.running(); },
                      60s));
  std::vector<pid_t> pids = startedPids(demo.stdoutText());
  ASSERT_GE(pids.size(), 2u) << demo.stdoutText() << demo.stderrText();
  ASSERT_TRUE(demo.running()) << demo.stdoutText() << demo.stderrText();
  ASSERT_EQ(::kill(demo.pid(), SIGINT), 0);
  ASSERT_TRUE(waitFor([&] { return !demo.running(); }, 60s));
  EXPECT_EQ(demo.exitCode(), 130) << demo.stdoutText() << demo.stderrText();
  pids = startedPids(demo.stdoutText());  // a child may have started just before the signal
  expectAllGone(pids);
  EXPECT_FALSE(exists(tmp.file("new")));
}

// SIGKILL leaves no chance to clean up; the children still die with their parent.
TEST(DemoTest, KilledDemoTakesItsChildrenWithIt) {
  TempDir tmp("strait-demo-test");
  std::string dir = tmp.file("demo");
  BackgroundProcess demo;
  std::string error;
  ASSERT_TRUE(demo.start(demoArgs(dir), {}, tmp.file("out"), tmp.file("err"), &error)) << error;
  ASSERT_TRUE(waitFor([&] { return startedPids(demo.stdoutText()).size() >= 4 || !demo.running(); },
                      120s));
  std::vector<pid_t> pids = startedPids(demo.stdoutText());
  ASSERT_EQ(pids.size(), 4u) << demo.stdoutText() << demo.stderrText();
  ASSERT_TRUE(demo.running()) << demo.stdoutText() << demo.stderrText();
  ASSERT_EQ(::kill(demo.pid(), SIGKILL), 0);
  ASSERT_TRUE(waitFor([&] { return !demo.running(); }, 30s));
  expectAllGone(pids);
}

TEST(DemoTest, BadFlagsGiveClearErrors) {
  TempDir tmp("strait-demo-test");
  ASSERT_TRUE(writeFile(tmp.file("a-file"), "x"));
  struct Case {
    std::vector<std::string> args;
    std::string message;
  };
  std::vector<Case> cases = {
      {{"--replicas", "0"}, "--replicas"},
      {{"--cpu-request", "lots"}, "--cpu-request"},
      {{"--cpu-request", "-1"}, "--cpu-request"},
      {{"--timeout", "soon"}, "--timeout"},
      {{"--pod-start-latency", "1x"}, "--pod-start-latency"},
      {{"--dir", tmp.file("a-file")}, "is not a folder"},
      {{"--no-such-flag"}, "--no-such-flag"},
  };
  for (const Case& c : cases) {
    std::vector<std::string> argv = {straitBinary(), "demo"};
    argv.insert(argv.end(), c.args.begin(), c.args.end());
    CommandResult r = runCommand(argv, {}, 30s);
    EXPECT_NE(r.exitCode, 0) << c.args[0];
    EXPECT_NE(r.err.find(c.message), std::string::npos) << r.describe();
    EXPECT_EQ(r.out.find("started"), std::string::npos) << "started processes: " << r.out;
  }
}

}  // namespace
}  // namespace strait::e2e

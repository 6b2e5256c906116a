#pragma once
// End-to-end test support: starts a real `strait minicluster` process per test suite and
// runs the users' own tools (kubectl, python3-kubernetes, curl) against it.
//
// Hermetic: the server listens on port 0 in a temporary data dir; each test gets a fresh
// KUBECACHEDIR so kubectl never reuses discovery from another server. Nothing sleeps for a
// fixed time: waitFor() polls a condition until a deadline. Processes are stopped by the
// pid this file started them with (SIGTERM, then SIGKILL), never by name.
//
// Not thread-safe: call from the test thread only.

#include <gtest/gtest.h>
#include <sys/types.h>

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <source_location>
#include <string>
#include <vector>

namespace strait::e2e {

using Env = std::map<std::string, std::string>;
using namespace std::chrono_literals;

// A directory under $TMPDIR (or /tmp) removed recursively by the destructor.
class TempDir {
 public:
  explicit TempDir(const std::string& prefix = "strait-e2e");
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }
  // path()/name
  std::string file(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

struct CommandResult {
  int exitCode = -1;       // exit status; 128+N if killed by signal N; -1 if it never ran
  bool timedOut = false;   // killed because the timeout expired
  std::string out;         // stdout
  std::string err;         // stderr
  // "exit=N stdout=... stderr=..." for assertion messages.
  std::string describe() const;
};

// Runs argv[0] (searched in PATH) with the current environment plus `env` (which overrides),
// feeding `stdinData` on stdin. Blocks until the process exits or `timeout` expires; on
// timeout the whole process group is killed (SIGTERM, then SIGKILL) and timedOut is set.
CommandResult runCommand(const std::vector<std::string>& argv, const Env& env = {},
                         std::chrono::milliseconds timeout = 60s,
                         const std::string& stdinData = {});

// A process running in the background with stdout and stderr going to files; stopped
// (its process group: SIGTERM, then SIGKILL after a grace period) by stop() or the
// destructor. Not copyable.
class BackgroundProcess {
 public:
  BackgroundProcess() = default;
  ~BackgroundProcess();
  BackgroundProcess(const BackgroundProcess&) = delete;
  BackgroundProcess& operator=(const BackgroundProcess&) = delete;

  // Starts argv; stdout -> stdoutPath, stderr -> stderrPath. Returns false (and sets
  // *error) when the process could not be started. May be called again once the process
  // has exited or was stopped.
  bool start(const std::vector<std::string>& argv, const Env& env, const std::string& stdoutPath,
             const std::string& stderrPath, std::string* error);
  // True while the process has not exited (reaps it when it has).
  bool running();
  // SIGTERM to the process group, wait up to `grace`, then SIGKILL. Returns the exit code
  // as in CommandResult. Idempotent.
  int stop(std::chrono::milliseconds grace = 5s);
  pid_t pid() const { return pid_; }
  // Exit code once running() returned false or stop() ran; -1 before.
  int exitCode() const { return exitCode_; }
  // Current contents of the output files.
  std::string stdoutText() const;
  std::string stderrText() const;

 private:
  pid_t pid_ = -1;
  bool exited_ = false;
  int exitCode_ = -1;
  std::string stdoutPath_;
  std::string stderrPath_;
};

// Polls `condition` (first at once, then every `interval`) until it returns true or
// `deadline` has passed since the call. Returns the last result of `condition`.
// With STRAIT_E2E_TRACE set in the environment, runCommand and waitFor write one line each
// to stderr ("trace <seconds since start> cmd|wait <duration> ..."), which shows where a
// test spends its time.
bool waitFor(const std::function<bool()>& condition, std::chrono::milliseconds deadline,
             std::chrono::milliseconds interval = 50ms,
             std::source_location caller = std::source_location::current());

// Runs each step on a thread of its own (independent start-ups: two clusters, two agents)
// and waits for all of them. Returns the first non-empty result in the order given, or "".
// Steps must not use gtest assertions (they run off the test thread) and must not share
// unsynchronized state.
std::string inParallel(const std::vector<std::function<std::string()>>& steps);

// The numbers N of the lines "tick N" (a trailing \r allowed) in `text`, in order.
std::vector<int> tickNumbers(const std::string& text);

// Reads a whole file; empty if it does not exist.
std::string readFile(const std::string& path);
// The 1, 5 and 15 minute load averages ("0.52 0.61 0.70"), to print beside a measured time.
std::string loadAverage();
// Seconds of the steady clock since `t`.
double secondsSince(std::chrono::steady_clock::time_point t);
// Writes a file (truncating); false on error.
bool writeFile(const std::string& path, const std::string& content);

// The strait binary: $STRAIT_BIN, else the `strait` beside the test binary. Empty if none.
std::string straitBinary();
// tests/e2e/python/<name> in the source tree.
std::string pythonScript(const std::string& name);
// Why the minicluster's process runtime cannot run here (not root, no usable `ip netns`, no
// nft, dnsmasq or curl, no strait binary); "" when it can.
std::string processRuntimeUnavailable();

// The credentials and address found in a kubeconfig written by the minicluster, with
// the PEM blocks decoded into files so that curl can use them.
struct AdminCredentials {
  std::string server;    // https://127.0.0.1:PORT
  std::string caFile;    // PEM files under the directory passed to loadAdminCredentials
  std::string certFile;
  std::string keyFile;
};
// Parses the kubeconfig at `kubeconfigPath` (current-context, falling back to the first
// cluster/user) and writes ca.crt, admin.crt, admin.key under `dir`.
std::optional<AdminCredentials> loadAdminCredentials(const std::string& kubeconfigPath,
                                                     const std::string& dir,
                                                     std::string* error);

// One `strait minicluster` process: port 0, its own data dir, kubeconfig in that dir.
class Minicluster {
 public:
  Minicluster() = default;
  ~Minicluster() { stop(); }

  // Starts the process and waits (up to `deadline`) for the kubeconfig file to appear.
  // Returns an empty string on success, else what went wrong (with the server's stderr).
  // `extraArgs` are appended to the minicluster command line (e.g. --watch-history 50).
  std::string start(const std::string& name, std::chrono::milliseconds deadline = 60s,
                    const std::vector<std::string>& extraArgs = {});
  // Stops the process (SIGTERM, or SIGKILL when `kill`) and starts it again on the same
  // port, data dir and arguments; waits for the new kubeconfig. Returns "" or the error.
  std::string restart(bool kill = false, std::chrono::milliseconds deadline = 60s);
  // SIGTERM, then SIGKILL after a grace period. Idempotent.
  void stop();
  bool running() { return process_.running(); }
  // Exit code (128+signal) after the process ended; -1 while running.
  int exitCode() const { return process_.exitCode(); }

  const std::string& kubeconfig() const { return kubeconfig_; }
  const std::string& server() const { return server_; }
  // The server process's pid; -1 when not started.
  pid_t pid() const { return process_.pid(); }
  // What the server wrote so far (stdout, then stderr).
  std::string serverLog() const { return process_.stdoutText() + process_.stderrText(); }
  const std::string& workDir() const { return dir_->path(); }

 private:
  std::unique_ptr<TempDir> dir_;
  BackgroundProcess process_;
  std::string kubeconfig_;
  std::string server_;
  std::string name_;
  std::vector<std::string> extraArgs_;
  // Starts the process listening on `listen` and waits for the kubeconfig.
  std::string launch(const std::string& listen, std::chrono::milliseconds deadline);
};

// Base fixture: one minicluster shared by all tests of a suite (started in
// SetUpTestSuite, stopped in TearDownTestSuite); a fresh KUBECACHEDIR per test.
// A test whose suite could not start the server fails with the server's log. If the
// server died during an earlier test (which then failed), the next test starts a new one,
// so that one crash does not hide the results of the other tests.
class ClusterTest : public ::testing::Test {
 public:
  static void SetUpTestSuite();
  static void TearDownTestSuite();
  // For suites that need minicluster flags: call from their own SetUpTestSuite instead of
  // SetUpTestSuite(); the args also apply when a crashed server is restarted.
  static void SetUpTestSuiteWithArgs(std::vector<std::string> miniclusterArgs);

 protected:
  void SetUp() override;
  void TearDown() override;

  // The environment every client gets: KUBECONFIG, KUBECACHEDIR, HOME (a temp dir).
  Env clientEnv() const;
  // kubectl ARGS... with clientEnv(); `stdinData` is fed on stdin (use "-f -").
  CommandResult kubectl(const std::vector<std::string>& args, const std::string& stdinData = {},
                        std::chrono::milliseconds timeout = 60s) const;
  // Starts kubectl ARGS... in the background (e.g. a watch) with output in files.
  std::unique_ptr<BackgroundProcess> kubectlBackground(const std::vector<std::string>& args);

  static Minicluster& cluster();
  const std::string& testDir() const { return testDir_->path(); }

 private:
  std::unique_ptr<TempDir> testDir_;
  // Starts a new minicluster into cluster_/startError_.
  static void startCluster();
  static Minicluster* cluster_;
  static std::string suiteName_;
  static std::string startError_;
  static std::vector<std::string> extraArgs_;
  int backgroundCount_ = 0;
};

}  // namespace strait::e2e

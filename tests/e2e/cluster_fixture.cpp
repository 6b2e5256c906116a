#include "e2e/cluster_fixture.h"

#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cerrno>
#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <deque>
#include <filesystem>
#include <fstream>
#include <future>
#include <iostream>
#include <memory>
#include <mutex>
#include <regex>
#include <sstream>
#include <thread>

namespace strait::e2e {
namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

// ---------------------------------------------------------------------------------------
// Files and directories

TempDir::TempDir(const std::string& prefix) {
  const char* base = getenv("TMPDIR");
  std::string tmpl = std::string(base && *base ? base : "/tmp") + "/" + prefix + "-XXXXXX";
  std::vector<char> buf(tmpl.begin(), tmpl.end());
  buf.push_back('\0');
  if (mkdtemp(buf.data()) == nullptr) {
    throw std::runtime_error("mkdtemp " + tmpl + ": " + strerror(errno));
  }
  path_ = buf.data();
}

TempDir::~TempDir() {
  std::error_code ec;
  fs::remove_all(path_, ec);
}

std::string readFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return {};
  }
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string loadAverage() {
  std::string s = readFile("/proc/loadavg");
  size_t end = 0;
  for (int i = 0; i < 3 && end != std::string::npos; ++i) end = s.find(' ', end + 1);
  return s.substr(0, end);
}

double secondsSince(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

bool writeFile(const std::string& path, const std::string& content) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << content;
  return static_cast<bool>(out);
}

std::string CommandResult::describe() const {
  std::ostringstream ss;
  ss << "exit=" << exitCode << (timedOut ? " (timed out)" : "") << "\n--- stdout ---\n"
     << out << "\n--- stderr ---\n"
     << err;
  return ss.str();
}

namespace {

// STRAIT_E2E_TRACE set: one line per command and per wait on stderr.
bool tracing() {
  static const bool on = [] {
    const char* v = getenv("STRAIT_E2E_TRACE");
    return v != nullptr && *v != '\0';
  }();
  return on;
}

const Clock::time_point kTraceOrigin = Clock::now();

void trace(const std::string& what, Clock::time_point began) {
  char head[64];
  snprintf(head, sizeof head, "trace %8.3f ",
           std::chrono::duration<double>(began - kTraceOrigin).count());
  char took[32];
  snprintf(took, sizeof took, " %7.3fs ",
           std::chrono::duration<double>(Clock::now() - began).count());
  std::cerr << head << what.substr(0, what.find(' ')) << took
            << what.substr(std::min(what.size(), what.find(' ') + 1)) << "\n";
}

}  // namespace

bool waitFor(const std::function<bool()>& condition, std::chrono::milliseconds deadline,
             std::chrono::milliseconds interval, std::source_location caller) {
  const auto began = Clock::now();
  const auto end = began + deadline;
  int polls = 0;
  auto done = [&](bool result) {
    if (tracing()) {
      std::string file = caller.file_name();
      file = file.substr(file.rfind('/') + 1);
      trace("wait " + file + ":" + std::to_string(caller.line()) + " " +
                (result ? "met" : "NOT met") + " after " + std::to_string(polls) + " polls of " +
                std::to_string(interval.count()) + "ms",
            began);
    }
    return result;
  };
  while (true) {
    ++polls;
    if (condition()) {
      return done(true);
    }
    if (Clock::now() >= end) {
      ++polls;
      return done(condition());
    }
    std::this_thread::sleep_for(interval);
  }
}

namespace {

// Threads that run inParallel's steps and never end: a process started by a step gets
// SIGTERM when the thread that forked it ends (PR_SET_PDEATHSIG follows the thread), so
// these threads live as long as the test binary, like the main thread.
class Workers {
 public:
  static Workers& get() {
    static Workers* workers = new Workers();  // never destroyed: its threads never end
    return *workers;
  }
  void run(std::function<void()> task) {
    std::lock_guard<std::mutex> l(mu_);
    queue_.push_back(std::move(task));
    // Each task not yet taken needs a waiting thread of its own, so that none waits for
    // another task to finish.
    if (waiting_ >= queue_.size()) {
      cv_.notify_one();
    } else {
      std::thread([this] { loop(); }).detach();
    }
  }

 private:
  void loop() {
    std::unique_lock<std::mutex> l(mu_);
    while (true) {
      ++waiting_;
      cv_.wait(l, [&] { return !queue_.empty(); });
      --waiting_;
      std::function<void()> task = std::move(queue_.front());
      queue_.pop_front();
      l.unlock();
      task();
      l.lock();
    }
  }
  std::mutex mu_;  // guards the fields below
  std::condition_variable cv_;
  std::deque<std::function<void()>> queue_;
  size_t waiting_ = 0;  // threads in cv_.wait
};

}  // namespace

std::string inParallel(const std::vector<std::function<std::string()>>& steps) {
  std::vector<std::future<std::string>> running;
  running.reserve(steps.size());
  for (const auto& step : steps) {
    auto promise = std::make_shared<std::promise<std::string>>();
    running.push_back(promise->get_future());
    Workers::get().run([promise, step] { promise->set_value(step()); });
  }
  std::string first;
  for (auto& r : running) {
    std::string e = r.get();
    if (first.empty()) first = std::move(e);
  }
  return first;
}

// ---------------------------------------------------------------------------------------
// Processes

namespace {

// argv/envp prepared before fork(): the child only calls async-signal-safe functions.
struct ExecPlan {
  std::vector<std::string> args;
  std::vector<std::string> envStrings;
  std::vector<char*> argv;
  std::vector<char*> envp;
};

ExecPlan makePlan(const std::vector<std::string>& args, const Env& extra) {
  ExecPlan plan;
  plan.args = args;
  Env merged;
  for (char** e = environ; e && *e; ++e) {
    std::string kv = *e;
    auto eq = kv.find('=');
    if (eq != std::string::npos) {
      merged[kv.substr(0, eq)] = kv.substr(eq + 1);
    }
  }
  for (const auto& [k, v] : extra) {
    merged[k] = v;
  }
  for (const auto& [k, v] : merged) {
    plan.envStrings.push_back(k + "=" + v);
  }
  for (auto& a : plan.args) {
    plan.argv.push_back(a.data());
  }
  plan.argv.push_back(nullptr);
  for (auto& e : plan.envStrings) {
    plan.envp.push_back(e.data());
  }
  plan.envp.push_back(nullptr);
  return plan;
}

int exitCodeOf(int status) {
  if (WIFEXITED(status)) {
    return WEXITSTATUS(status);
  }
  if (WIFSIGNALED(status)) {
    return 128 + WTERMSIG(status);
  }
  return -1;
}

// Forks and execs `plan` in a new process group with stdin/stdout/stderr from the given
// paths (stdin may be empty = /dev/null). Returns the pid, or -1 with *error set.
pid_t spawn(ExecPlan& plan, const std::string& stdinPath, const std::string& stdoutPath,
            const std::string& stderrPath, std::string* error) {
  int in = open(stdinPath.empty() ? "/dev/null" : stdinPath.c_str(), O_RDONLY | O_CLOEXEC);
  int out = open(stdoutPath.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  int err = open(stderrPath.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (in < 0 || out < 0 || err < 0) {
    *error = std::string("open redirection files: ") + strerror(errno);
    for (int fd : {in, out, err}) {
      if (fd >= 0) {
        close(fd);
      }
    }
    return -1;
  }
  const pid_t parent = getpid();
  pid_t pid = fork();
  if (pid == 0) {
    setpgid(0, 0);
    // If the test binary dies, do not leave servers behind.
    prctl(PR_SET_PDEATHSIG, SIGTERM);
    if (getppid() != parent) {
      _exit(127);
    }
    dup2(in, 0);
    dup2(out, 1);
    dup2(err, 2);
    execvpe(plan.argv[0], plan.argv.data(), plan.envp.data());
    const char msg[] = "exec failed\n";
    (void)!write(2, msg, sizeof msg - 1);
    _exit(127);
  }
  int saved = errno;
  close(in);
  close(out);
  close(err);
  if (pid < 0) {
    *error = std::string("fork: ") + strerror(saved);
    return -1;
  }
  setpgid(pid, pid);  // also in the parent, so that kill(-pid) works at once
  return pid;
}

// Waits up to `limit` for pid to exit; returns its exit code or nullopt if still running.
std::optional<int> waitExit(pid_t pid, std::chrono::milliseconds limit) {
  const auto end = Clock::now() + limit;
  while (true) {
    int status = 0;
    pid_t r = waitpid(pid, &status, WNOHANG);
    if (r == pid) {
      return exitCodeOf(status);
    }
    if (r < 0 && errno != EINTR) {
      return -1;  // not our child any more
    }
    if (Clock::now() >= end) {
      return std::nullopt;
    }
    std::this_thread::sleep_for(10ms);
  }
}

// SIGTERM to the group, then SIGKILL after `grace`. Returns the exit code of pid.
int terminateGroup(pid_t pid, std::chrono::milliseconds grace) {
  kill(-pid, SIGTERM);
  kill(pid, SIGTERM);
  if (auto code = waitExit(pid, grace)) {
    kill(-pid, SIGKILL);  // leftovers of the group (e.g. kubectl's re-exec'd child)
    return *code;
  }
  kill(-pid, SIGKILL);
  kill(pid, SIGKILL);
  auto code = waitExit(pid, 10s);
  return code.value_or(-1);
}

}  // namespace

CommandResult runCommand(const std::vector<std::string>& argv, const Env& env,
                         std::chrono::milliseconds timeout, const std::string& stdinData) {
  CommandResult result;
  const auto began = Clock::now();
  TempDir io("strait-cmd");
  std::string stdinPath;
  if (!stdinData.empty()) {
    stdinPath = io.file("stdin");
    writeFile(stdinPath, stdinData);
  }
  ExecPlan plan = makePlan(argv, env);
  std::string error;
  pid_t pid = spawn(plan, stdinPath, io.file("stdout"), io.file("stderr"), &error);
  if (pid < 0) {
    result.err = error;
    return result;
  }
  if (auto code = waitExit(pid, timeout)) {
    result.exitCode = *code;
    kill(-pid, SIGKILL);  // nothing of the group may outlive the command
  } else {
    result.timedOut = true;
    result.exitCode = terminateGroup(pid, 2s);
  }
  result.out = readFile(io.file("stdout"));
  result.err = readFile(io.file("stderr"));
  if (tracing()) {
    std::string line = "cmd exit=" + std::to_string(result.exitCode);
    for (const std::string& a : argv) {
      line += " " + (a.size() > 60 ? a.substr(0, 57) + "..." : a);
      if (line.size() > 240) break;
    }
    trace(line, began);
  }
  return result;
}

BackgroundProcess::~BackgroundProcess() { stop(); }

bool BackgroundProcess::start(const std::vector<std::string>& argv, const Env& env,
                              const std::string& stdoutPath, const std::string& stderrPath,
                              std::string* error) {
  if (pid_ > 0 && !exited_) {
    *error = "already started";
    return false;
  }
  exited_ = false;  // a stopped process may be started again
  exitCode_ = -1;
  stdoutPath_ = stdoutPath;
  stderrPath_ = stderrPath;
  ExecPlan plan = makePlan(argv, env);
  pid_ = spawn(plan, "", stdoutPath, stderrPath, error);
  return pid_ > 0;
}

bool BackgroundProcess::running() {
  if (pid_ <= 0 || exited_) {
    return false;
  }
  if (auto code = waitExit(pid_, 0ms)) {
    exited_ = true;
    exitCode_ = *code;
    return false;
  }
  return true;
}

int BackgroundProcess::stop(std::chrono::milliseconds grace) {
  if (pid_ <= 0) {
    return exitCode_;
  }
  if (!exited_) {
    if (running()) {
      exitCode_ = terminateGroup(pid_, grace);
    }
    exited_ = true;
  }
  return exitCode_;
}

std::string BackgroundProcess::stdoutText() const { return readFile(stdoutPath_); }
std::string BackgroundProcess::stderrText() const { return readFile(stderrPath_); }

// ---------------------------------------------------------------------------------------
// Binaries and credentials

std::string straitBinary() {
  if (const char* env = getenv("STRAIT_BIN"); env && *env && access(env, X_OK) == 0) {
    return env;
  }
  // The test binaries are built beside `strait` (ctest sets STRAIT_BIN itself).
  std::error_code ec;
  fs::path self = fs::read_symlink("/proc/self/exe", ec);
  fs::path bin = self.parent_path() / "strait";
  return !ec && access(bin.c_str(), X_OK) == 0 ? bin.string() : std::string();
}

std::vector<int> tickNumbers(const std::string& text) {
  std::vector<int> out;
  std::regex line(R"(^tick (\d+)\r?$)");
  std::stringstream ss(text);
  for (std::string l; std::getline(ss, l);) {
    std::smatch m;
    if (std::regex_match(l, m, line)) out.push_back(std::stoi(m[1]));
  }
  return out;
}

std::string processRuntimeUnavailable() {
  if (::geteuid() != 0) return "the process runtime needs root";
  if (runCommand({"ip", "netns", "list"}).exitCode != 0) return "`ip netns` is not usable here";
  for (const char* program : {"/usr/sbin/nft", "/usr/sbin/dnsmasq", "/usr/bin/curl"}) {
    if (::access(program, X_OK) != 0) {
      return std::string(program) + " is not installed (scripts/install-deps.sh)";
    }
  }
  if (straitBinary().empty()) return "no strait binary";
  return {};
}

std::string pythonScript(const std::string& name) {
  return (fs::path(__FILE__).parent_path() / "python" / name).string();
}

namespace {

std::optional<std::string> base64Decode(const std::string& in) {
  static const std::string alphabet =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  uint32_t acc = 0;
  int bits = 0;
  for (char c : in) {
    if (c == '=' || c == '\n' || c == '\r' || c == ' ') {
      continue;
    }
    auto pos = alphabet.find(c);
    if (pos == std::string::npos) {
      return std::nullopt;
    }
    acc = (acc << 6) | static_cast<uint32_t>(pos);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out.push_back(static_cast<char>((acc >> bits) & 0xff));
    }
  }
  return out;
}

// The entry of list `listName` whose name is `name` (or the first one if `name` is empty
// or not found): its `field` map.
YAML::Node namedEntry(const YAML::Node& root, const std::string& listName,
                      const std::string& name, const std::string& field) {
  YAML::Node list = root[listName];
  if (!list || !list.IsSequence() || list.size() == 0) {
    return YAML::Node();
  }
  for (const auto& item : list) {
    if (item["name"] && item["name"].as<std::string>() == name) {
      return item[field];
    }
  }
  return list[0][field];
}

// PEM from `<key>-data` (base64) or from the file named by `<key>`.
std::optional<std::string> pemOf(const YAML::Node& node, const std::string& key) {
  if (node[key + "-data"]) {
    return base64Decode(node[key + "-data"].as<std::string>());
  }
  if (node[key]) {
    std::string content = readFile(node[key].as<std::string>());
    if (!content.empty()) {
      return content;
    }
  }
  return std::nullopt;
}

}  // namespace

std::optional<AdminCredentials> loadAdminCredentials(const std::string& kubeconfigPath,
                                                     const std::string& dir,
                                                     std::string* error) {
  try {
    YAML::Node root = YAML::LoadFile(kubeconfigPath);
    std::string contextName =
        root["current-context"] ? root["current-context"].as<std::string>() : "";
    YAML::Node context = namedEntry(root, "contexts", contextName, "context");
    std::string clusterName = context && context["cluster"] ? context["cluster"].as<std::string>() : "";
    std::string userName = context && context["user"] ? context["user"].as<std::string>() : "";
    YAML::Node cluster = namedEntry(root, "clusters", clusterName, "cluster");
    YAML::Node user = namedEntry(root, "users", userName, "user");
    if (!cluster || !cluster["server"]) {
      *error = "kubeconfig has no cluster with a server";
      return std::nullopt;
    }
    if (!user) {
      *error = "kubeconfig has no user";
      return std::nullopt;
    }
    auto ca = pemOf(cluster, "certificate-authority");
    auto cert = pemOf(user, "client-certificate");
    auto key = pemOf(user, "client-key");
    if (!ca || !cert || !key) {
      *error = "kubeconfig lacks certificate-authority-data, client-certificate-data or "
               "client-key-data";
      return std::nullopt;
    }
    AdminCredentials creds;
    creds.server = cluster["server"].as<std::string>();
    creds.caFile = dir + "/ca.crt";
    creds.certFile = dir + "/admin.crt";
    creds.keyFile = dir + "/admin.key";
    if (!writeFile(creds.caFile, *ca) || !writeFile(creds.certFile, *cert) ||
        !writeFile(creds.keyFile, *key)) {
      *error = "cannot write credential files under " + dir;
      return std::nullopt;
    }
    chmod(creds.keyFile.c_str(), 0600);
    return creds;
  } catch (const std::exception& e) {
    *error = std::string("parse kubeconfig ") + kubeconfigPath + ": " + e.what();
    return std::nullopt;
  }
}

// ---------------------------------------------------------------------------------------
// Minicluster

std::string Minicluster::start(const std::string& name, std::chrono::milliseconds deadline,
                               const std::vector<std::string>& extraArgs) {
  dir_ = std::make_unique<TempDir>("strait-minicluster");
  kubeconfig_ = dir_->file("kubeconfig");
  fs::create_directories(dir_->file("data"));
  name_ = name;
  extraArgs_ = extraArgs;
  return launch("127.0.0.1:0", deadline);
}

std::string Minicluster::restart(bool kill, std::chrono::milliseconds deadline) {
  if (!dir_ || server_.empty()) return "restart: the minicluster was never started";
  std::string port = server_.substr(server_.rfind(':') + 1);
  if (kill) {
    ::kill(process_.pid(), SIGKILL);
    waitFor([&] { return !process_.running(); }, 30s, 10ms);
  }
  process_.stop();
  fs::remove(kubeconfig_);
  return launch("127.0.0.1:" + port, deadline);
}

std::string Minicluster::launch(const std::string& listen, std::chrono::milliseconds deadline) {
  std::string bin = straitBinary();
  if (bin.empty()) {
    return "strait binary not found: set STRAIT_BIN or build strait beside the test binary";
  }
  std::string error;
  std::vector<std::string> argv = {bin, "minicluster", "--name", name_, "--listen", listen,
                                   "--kubeconfig-out", kubeconfig_, "--data-dir",
                                   dir_->file("data")};
  argv.insert(argv.end(), extraArgs_.begin(), extraArgs_.end());
  if (!process_.start(argv, {}, dir_->file("server.out"), dir_->file("server.err"), &error)) {
    return "start " + bin + ": " + error;
  }
  bool exited = false;
  bool ready = waitFor(
      [&] {
        if (!process_.running()) {
          exited = true;
          return true;
        }
        return fs::exists(kubeconfig_);
      },
      deadline, 20ms);
  if (exited || !ready) {
    std::string log = process_.stderrText();
    int code = process_.stop();
    return std::string(exited ? "minicluster exited (code " + std::to_string(code) + ")"
                              : "no kubeconfig within the deadline") +
           " before writing " + kubeconfig_ + "\n--- server stderr ---\n" + log;
  }
  TempDir scratch("strait-creds");
  auto creds = loadAdminCredentials(kubeconfig_, scratch.path(), &error);
  if (!creds) {
    std::string log = process_.stderrText();
    process_.stop();
    return "bad kubeconfig: " + error + "\n--- server stderr ---\n" + log;
  }
  server_ = creds->server;
  return {};
}

void Minicluster::stop() { process_.stop(10s); }

// ---------------------------------------------------------------------------------------
// ClusterTest

Minicluster* ClusterTest::cluster_ = nullptr;
std::string ClusterTest::startError_;
std::string ClusterTest::suiteName_;
std::vector<std::string> ClusterTest::extraArgs_;

void ClusterTest::startCluster() {
  delete cluster_;
  cluster_ = new Minicluster();
  startError_ = cluster_->start(suiteName_, 60s, extraArgs_);
}

void ClusterTest::SetUpTestSuiteWithArgs(std::vector<std::string> args) {
  extraArgs_ = std::move(args);
  SetUpTestSuite();
}

void ClusterTest::SetUpTestSuite() {
  const auto* suite = ::testing::UnitTest::GetInstance()->current_test_suite();
  suiteName_ = "e2e";
  if (suite != nullptr) {
    suiteName_ = suite->name();
    for (auto& c : suiteName_) {
      c = std::isalnum(static_cast<unsigned char>(c))
              ? static_cast<char>(std::tolower(static_cast<unsigned char>(c)))
              : '-';
    }
  }
  startCluster();
}

void ClusterTest::TearDownTestSuite() {
  if (cluster_ != nullptr) {
    cluster_->stop();
    delete cluster_;
    cluster_ = nullptr;
  }
  startError_.clear();
  extraArgs_.clear();
}

Minicluster& ClusterTest::cluster() { return *cluster_; }

void ClusterTest::SetUp() {
  ASSERT_NE(cluster_, nullptr);
  if (startError_.empty() && !cluster_->running()) {
    std::cerr << "--- minicluster died during an earlier test (exit " << cluster_->exitCode()
              << "); starting a new one ---\n";
    startCluster();
  }
  ASSERT_TRUE(startError_.empty()) << startError_;
  testDir_ = std::make_unique<TempDir>("strait-test");
  fs::create_directories(testDir_->file("cache"));
  fs::create_directories(testDir_->file("home"));
}

void ClusterTest::TearDown() {
  if (HasFailure() && cluster_ != nullptr) {
    std::string log = cluster_->serverLog();
    constexpr size_t kTail = 4000;
    if (log.size() > kTail) {
      log = "..." + log.substr(log.size() - kTail);
    }
    std::cerr << "--- minicluster log (tail) ---\n" << log << "\n";
    if (!cluster_->running()) {
      std::cerr << "--- minicluster exited with " << cluster_->exitCode()
                << " (128+N = signal N) ---\n";
    }
  }
}

Env ClusterTest::clientEnv() const {
  return {{"KUBECONFIG", cluster_->kubeconfig()},
          {"KUBECACHEDIR", testDir_->file("cache")},
          {"HOME", testDir_->file("home")}};
}

CommandResult ClusterTest::kubectl(const std::vector<std::string>& args,
                                   const std::string& stdinData,
                                   std::chrono::milliseconds timeout) const {
  std::vector<std::string> argv{"kubectl"};
  argv.insert(argv.end(), args.begin(), args.end());
  return runCommand(argv, clientEnv(), timeout, stdinData);
}

std::unique_ptr<BackgroundProcess> ClusterTest::kubectlBackground(
    const std::vector<std::string>& args) {
  std::vector<std::string> argv{"kubectl"};
  argv.insert(argv.end(), args.begin(), args.end());
  auto proc = std::make_unique<BackgroundProcess>();
  int n = backgroundCount_++;
  std::string error;
  if (!proc->start(argv, clientEnv(), testDir_->file("bg" + std::to_string(n) + ".out"),
                   testDir_->file("bg" + std::to_string(n) + ".err"), &error)) {
    ADD_FAILURE() << "start kubectl in background: " << error;
  }
  return proc;
}

}  // namespace strait::e2e

// `strait demo`: two miniclusters ("home": 2 nodes of 2 CPU, "cloud": 4 nodes of 8 CPU), their
// agents, an in-band peering, namespace `demo` offloaded, and a Deployment that does not fit
// at home. Shows the Pods spreading (live), then where each runs and how to explore.
// Composition root: every step is a child process (`strait minicluster|agent|peer|offload`)
// or one Kubernetes call; Ctrl-C at any point stops the children by pid and removes the files.
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <sstream>
#include <thread>

#include "cmd/cli_util.h"
#include "cmd/commands.h"
#include "cmd/demo_processes.h"
#include "cmd/demo_view.h"
#include "kube/exec_client.h"
#include "kube/quantity.h"
#include "minicluster/netns.h"

namespace strait::cmd {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

std::atomic<bool> g_abort{false};
void onSignal(int) { g_abort = true; }

constexpr const char* kNamespace = "demo";
constexpr const char* kProviderName = "cloud";
constexpr const char* kVirtualNode = "strait-cloud";

struct DemoFlags {
  std::string dir = "./strait-demo";
  bool keep = false;
  int replicas = 20;
  std::string cpuRequest = "500m";
  std::string timeout = "3m";
  std::string podStartLatency = "1s";
  std::string runtime = "auto";  // auto | process | sim
};

// The demo's state: its folder, its children (in start order) and what it created.
class Demo {
 public:
  Demo(const DemoFlags& f, std::chrono::milliseconds timeout, std::string runtime)
      : flags_(f),
        timeout_(timeout),
        runtime_(std::move(runtime)),
        terminal_(::isatty(STDOUT_FILENO) == 1) {}
  ~Demo() { cleanUp(); }

  int run();

 private:
  // Each step returns "" or the error to print.
  std::string prepareDir();
  std::string startClusters();
  std::string startAgents();
  std::string peer();
  std::string offloadNamespace();
  std::string createDeployment();
  std::string waitForPods();
  std::string printSummary();
  // Process runtime: asks one Pod running in the cloud for its hostname over HTTP, from
  // inside that Pod, through home's API server and the virtual node.
  std::string askCloudPod();
  void printExploreHints() const;
  std::string keepRunning();
  // A child process running this binary with `args`; its output in logs/<name>.log.
  ChildProcess& spawn(const std::string& name, std::vector<std::string> args);
  std::string startChild(ChildProcess& c);
  // "" while every long-running child is alive, else which one died and its log tail.
  std::string deadChild();
  std::string runStep(const std::string& name, std::vector<std::string> args,
                      std::chrono::milliseconds deadline);
  std::string kubeconfig(const std::string& cluster) const {
    return (dir_ / (cluster + ".kubeconfig")).string();
  }
  std::string aborted() const { return "interrupted"; }
  // Stops the children (newest first) and removes the files the demo created. Idempotent.
  void cleanUp();

  DemoFlags flags_;
  std::chrono::milliseconds timeout_;
  std::string runtime_;  // process | sim
  bool terminal_;
  std::string self_;
  fs::path dir_;
  bool createdDir_ = false;
  fs::path createdRoot_;  // the outermost folder created for dir_
  std::vector<fs::path> createdFiles_;
  std::vector<std::unique_ptr<ChildProcess>> children_;  // long-running ones
  std::vector<std::unique_ptr<ChildProcess>> steps_;     // strait peer, strait offload
  std::unique_ptr<kube::Client> home_;
  std::unique_ptr<kube::Client> cloud_;
  Clock::time_point started_ = Clock::now();
};

int Demo::run() {
  self_ = selfExecutable();
  if (self_.empty()) {
    std::cerr << "error: cannot find the strait binary (/proc/self/exe)\n";
    return 1;
  }
  std::string err = prepareDir();
  if (!err.empty()) {
    std::cerr << "error: " << err << "\n";
    cleanUp();
    return 2;
  }
  for (auto step : {&Demo::startClusters, &Demo::startAgents, &Demo::peer,
                    &Demo::offloadNamespace, &Demo::createDeployment, &Demo::waitForPods,
                    &Demo::printSummary, &Demo::askCloudPod}) {
    if (!err.empty()) break;
    err = (this->*step)();
  }
  if (err.empty()) {
    printExploreHints();
    if (flags_.keep) err = keepRunning();
  }
  bool interrupted = g_abort.load();
  if (!err.empty() && !interrupted) std::cerr << "error: " << err << "\n";
  std::cout << (interrupted ? "\ninterrupted: " : "") << "stopping " << children_.size()
            << " processes and removing " << dir_.string() << "\n"
            << std::flush;
  cleanUp();
  std::cout << "done\n";
  if (interrupted) return 130;
  return err.empty() ? 0 : 1;
}

std::string Demo::prepareDir() {
  std::error_code ec;
  dir_ = fs::absolute(flags_.dir, ec);
  if (ec) return "--dir " + flags_.dir + ": " + ec.message();
  if (fs::exists(dir_, ec)) {
    if (!fs::is_directory(dir_, ec)) return "--dir " + dir_.string() + " exists and is not a folder";
    for (const char* name : {"home.kubeconfig", "cloud.kubeconfig", "logs"}) {
      if (fs::exists(dir_ / name, ec)) {
        return "--dir " + dir_.string() + " already holds " + name +
               " (another demo running, or left over?): stop it or remove the folder";
      }
    }
  } else {
    // Remove at the end the outermost folder this creates, not only the leaf.
    createdRoot_ = dir_;
    while (createdRoot_.has_parent_path() && createdRoot_.parent_path() != createdRoot_ &&
           !fs::exists(createdRoot_.parent_path(), ec)) {
      createdRoot_ = createdRoot_.parent_path();
    }
    if (!fs::create_directories(dir_, ec)) {
      return "--dir " + dir_.string() + ": cannot create: " + ec.message();
    }
    createdDir_ = true;
  }
  if (!fs::create_directory(dir_ / "logs", ec)) {
    return "cannot create " + (dir_ / "logs").string() + ": " + ec.message();
  }
  createdFiles_ = {dir_ / "logs", dir_ / "home.kubeconfig", dir_ / "cloud.kubeconfig"};
  std::cout << "strait demo: everything lives in " << dir_.string()
            << " (logs in logs/); Ctrl-C stops it and removes it\n";
  return {};
}

ChildProcess& Demo::spawn(const std::string& name, std::vector<std::string> args) {
  args.insert(args.begin(), self_);
  auto c = std::make_unique<ChildProcess>(name, std::move(args),
                                          (dir_ / "logs" / (name + ".log")).string());
  children_.push_back(std::move(c));
  return *children_.back();
}

std::string Demo::startChild(ChildProcess& c) {
  std::string err = c.start();
  if (err.empty()) std::cout << "  started " << c.label() << " (pid " << c.pid() << ")\n";
  return err;
}

std::string Demo::deadChild() {
  for (auto& c : children_) {
    if (!c->running()) {
      return c->label() + " (pid " + std::to_string(c->pid()) + ") exited with status " +
             std::to_string(c->exitCode()) + "; last lines of " + c->logPath() + ":\n" +
             c->logTail();
    }
  }
  return {};
}

std::string Demo::startClusters() {
  std::cout << "1/6 starting two clusters: home (2 nodes of 2 CPU) and cloud (4 nodes of 8 CPU)\n";
  struct Spec {
    const char* name;
    const char* nodes;
    const char* cpu;
    const char* memory;
    const char* cidr;
  };
  for (Spec s : {Spec{"home", "2", "2", "4Gi", "10.244.0.0/16"},
                 Spec{"cloud", "4", "8", "32Gi", "10.245.0.0/16"}}) {
    // The minicluster's name is unique per demo: a process-runtime cluster owns namespaces
    // and a lock named after it, so two demos on one machine must not share one.
    std::string clusterName = std::string(s.name) + "-" + std::to_string(::getpid());
    ChildProcess& c =
        spawn(std::string("minicluster-") + s.name,
              {"minicluster", "--name", clusterName, "--listen", "127.0.0.1:0", "--kubeconfig-out",
               kubeconfig(s.name), "--nodes", s.nodes, "--node-cpu", s.cpu, "--node-memory",
               s.memory, "--pod-cidr", s.cidr, "--pod-start-latency", flags_.podStartLatency,
               "--runtime", runtime_, "--log-level", "warn"});
    if (std::string err = startChild(c); !err.empty()) return err;
  }
  bool up = pollUntil(
      [&] {
        return !deadChild().empty() ||
               (fs::exists(kubeconfig("home")) && fs::exists(kubeconfig("cloud")));
      },
      60s, g_abort);
  if (g_abort) return aborted();
  if (std::string dead = deadChild(); !dead.empty()) return dead;
  if (!up) return "the clusters did not write their kubeconfigs within 60s";
  for (auto [name, client] : {std::pair{"home", &home_}, std::pair{"cloud", &cloud_}}) {
    auto c = clientFor(kubeconfig(name));
    if (!c.ok()) return c.error().message;
    *client = std::move(*c);
  }
  return {};
}

std::string Demo::startAgents() {
  std::cout << "2/6 starting the Strait agent of each cluster\n";
  for (const char* name : {"home", "cloud"}) {
    ChildProcess& c = spawn(std::string("agent-") + name,
                            {"agent", "--kubeconfig", kubeconfig(name), "--cluster-name", name,
                             "--listen", "127.0.0.1:0", "--kubelet-port", "0", "--log-level",
                             "info"});
    if (std::string err = startChild(c); !err.empty()) return err;
  }
  auto started = [&](const ChildProcess& c) {
    std::ifstream in(c.logPath());
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str().find("event=agent_started") != std::string::npos;
  };
  bool up = pollUntil(
      [&] {
        return !deadChild().empty() ||
               (started(*children_[children_.size() - 2]) && started(*children_.back()));
      },
      60s, g_abort);
  if (g_abort) return aborted();
  if (std::string dead = deadChild(); !dead.empty()) return dead;
  if (!up) return "the agents did not start within 60s (see " + (dir_ / "logs").string() + ")";
  return {};
}

std::string Demo::runStep(const std::string& name, std::vector<std::string> args,
                          std::chrono::milliseconds deadline) {
  args.insert(args.begin(), self_);
  std::string log = (dir_ / "logs" / (name + ".log")).string();
  steps_.push_back(std::make_unique<ChildProcess>(name, std::move(args), log));
  ChildProcess& c = *steps_.back();
  if (std::string err = c.start(); !err.empty()) return err;
  int code = runToCompletion(c, deadline, g_abort);
  if (g_abort) return aborted();
  if (code != 0) {
    return "`strait " + name + "` " +
           (code < 0 ? "did not finish in time" : "failed (exit " + std::to_string(code) + ")") +
           ":\n" + c.logTail();
  }
  std::ifstream in(log);
  std::string line;
  while (std::getline(in, line)) {
    if (!line.empty() && line.find(" info ") == std::string::npos) std::cout << "  " << line << "\n";
  }
  return {};
}

std::string Demo::peer() {
  std::cout << "3/6 peering home with cloud (strait peer, in-band)\n";
  std::string err = runStep("peer",
                            {"peer", "--kubeconfig", kubeconfig("home"), "--remote-kubeconfig",
                             kubeconfig("cloud"), "--cpu", "16", "--memory", "32Gi", "--pods",
                             "100", "--timeout", "60s"},
                            90s);
  if (!err.empty()) return err;
  // The virtual node must be Ready before the scheduler can place Pods on it.
  std::string status = "absent";
  bool ready = pollUntil(
      [&] {
        if (!deadChild().empty()) return true;
        auto node = home_->get(kube::resources::kNodes, "", kVirtualNode);
        if (!node.ok()) return false;
        status = "not Ready";
        for (const auto& c : node->value("/status/conditions"_json_pointer, nlohmann::json::array())) {
          if (c.value("type", "") == "Ready" && c.value("status", "") == "True") return true;
        }
        return false;
      },
      60s, g_abort);
  if (g_abort) return aborted();
  if (std::string dead = deadChild(); !dead.empty()) return dead;
  if (!ready) {
    return std::string("the virtual node ") + kVirtualNode + " is " + status +
           " in home after 60s; last lines of the home agent's log:\n" + children_[2]->logTail();
  }
  std::cout << "  virtual node " << kVirtualNode << " is Ready in home\n";
  return {};
}

std::string Demo::offloadNamespace() {
  std::cout << "4/6 offloading namespace " << kNamespace << " to cloud\n";
  nlohmann::json ns = {{"apiVersion", "v1"},
                       {"kind", "Namespace"},
                       {"metadata", {{"name", kNamespace}}}};
  auto created = home_->create(kube::resources::kNamespaces, "", ns);
  if (!created.ok() && created.error().code != kube::Code::AlreadyExists) {
    return "creating namespace demo: " + created.error().message;
  }
  return runStep("offload",
                 {"offload", "namespace", kNamespace, "--kubeconfig", kubeconfig("home"),
                  "--remote-name", kProviderName},
                 90s);
}

std::string Demo::createDeployment() {
  std::cout << "5/6 creating Deployment web: " << flags_.replicas << " replicas requesting "
            << flags_.cpuRequest << " CPU each (home has 4 CPU)\n";
  nlohmann::json preferHome = {
      {"weight", 100},
      {"preference",
       {{"matchExpressions",
         {{{"key", "type"}, {"operator", "NotIn"}, {"values", {"virtual-kubelet"}}}}}}}};
  nlohmann::json container = {
      {"name", "web"},
      {"image", "nginx:1.27"},
      {"resources", {{"requests", {{"cpu", flags_.cpuRequest}, {"memory", "64Mi"}}}}}};
  nlohmann::json d = {
      {"apiVersion", "apps/v1"},
      {"kind", "Deployment"},
      {"metadata", {{"name", "web"}, {"namespace", kNamespace}, {"labels", {{"app", "web"}}}}},
      {"spec",
       {{"replicas", flags_.replicas},
        {"selector", {{"matchLabels", {{"app", "web"}}}}},
        {"template",
         {{"metadata", {{"labels", {{"app", "web"}}}}},
          {"spec",
           {{"affinity",
             {{"nodeAffinity",
               {{"preferredDuringSchedulingIgnoredDuringExecution", {preferHome}}}}}},
            {"containers", {container}}}}}}}}};
  auto r = home_->create(kube::resources::kDeployments, kNamespace, d);
  if (!r.ok()) return "creating Deployment demo/web: " + r.error().message;
  return {};
}

std::string Demo::waitForPods() {
  std::cout << "6/6 waiting for the Pods (Running at home / in the cloud / Pending)\n";
  ProgressDisplay display(std::cout, terminal_, flags_.replicas);
  auto start = Clock::now();
  DemoProgress p;
  std::string listError;
  bool done = pollUntil(
      [&] {
        if (!deadChild().empty()) return true;
        kube::ListOptions o;
        o.labelSelector = "app=web";
        auto pods = home_->list(kube::resources::kPods, kNamespace, o);
        if (!pods.ok()) {
          listError = pods.error().message;
          return false;
        }
        p = countProgress(*pods, kVirtualNode);
        display.update(p, std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - start));
        return p.runningHome + p.runningCloud == flags_.replicas && p.pending == 0;
      },
      timeout_, g_abort);
  display.finish();
  if (g_abort) return aborted();
  if (std::string dead = deadChild(); !dead.empty()) return dead;
  if (!done) {
    return "not every Pod was Running after " + flags_.timeout + " (home " +
           std::to_string(p.runningHome) + ", cloud " + std::to_string(p.runningCloud) +
           ", pending " + std::to_string(p.pending) + ")" +
           (listError.empty() ? "" : "; last error: " + listError) + "; see " +
           (dir_ / "logs").string();
  }
  char secs[32];
  std::snprintf(secs, sizeof(secs), "%.1f",
                std::chrono::duration<double>(Clock::now() - start).count());
  std::cout << "all " << flags_.replicas << " Pods Running after " << secs << "s: "
            << p.runningHome << " at home, " << p.runningCloud << " in the cloud\n";
  return {};
}

std::string Demo::printSummary() {
  auto local = home_->list(kube::resources::kPods, kNamespace, {.labelSelector = "app=web"});
  if (!local.ok()) return "listing Pods in home: " + local.error().message;
  auto remote = cloud_->list(kube::resources::kPods, "",
                             {.labelSelector = "strait.io/origin-cluster-id"});
  if (!remote.ok()) return "listing Pods in cloud: " + remote.error().message;
  std::cout << "\n" << summaryTable(summaryRows(*local, *remote, kVirtualNode));
  return {};
}

std::string Demo::askCloudPod() {
  if (runtime_ != "process") return {};
  auto pods = home_->list(kube::resources::kPods, kNamespace, {.labelSelector = "app=web"});
  if (!pods.ok()) return "listing Pods in home: " + pods.error().message;
  std::string pod;
  for (const auto& p : pods->value("items", nlohmann::json::array())) {
    if (p.value("/spec/nodeName"_json_pointer, "") == kVirtualNode &&
        p.value("/status/phase"_json_pointer, "") == "Running") {
      pod = p.value("/metadata/name"_json_pointer, "");
      break;
    }
  }
  if (pod.empty()) return {};  // everything fit at home
  auto cfg = kube::loadKubeconfig({.paths = {kubeconfig("home")}});
  if (!cfg.ok()) return cfg.error().message;
  kube::ExecRequest req{.ns = kNamespace,
                        .pod = pod,
                        .command = {"curl", "-s", "--max-time", "5", "http://127.0.0.1/hostname"}};
  // Running is not listening yet: the server in the container may take a moment to bind.
  std::string answer, status;
  for (int attempt = 0; attempt < 20 && answer.empty() && !g_abort; ++attempt) {
    if (attempt > 0) std::this_thread::sleep_for(500ms);
    auto ws = kube::openExec(*cfg, req);
    if (!ws.ok()) return "exec into " + pod + " through the virtual node: " + ws.error().message;
    std::string message;
    while ((*ws)->read(message)) {
      if (message.empty()) continue;
      if (message[0] == static_cast<char>(kube::ExecChannel::Stdout)) answer += message.substr(1);
      if (message[0] == static_cast<char>(kube::ExecChannel::Status)) status = message.substr(1);
    }
  }
  if (answer.empty()) {
    return "the cloud Pod " + pod + " did not answer GET /hostname (status " + status + ")";
  }
  std::cout << "\ntraffic: " << pod << " runs in the cloud as a real process; `curl http://127.0.0.1/hostname` "
            << "inside it, run through home's API server and the virtual node, answered: "
            << answer << "\n";
  return {};
}

void Demo::printExploreHints() const {
  std::string home = "kubectl --kubeconfig " + kubeconfig("home");
  std::string cloud = "kubectl --kubeconfig " + kubeconfig("cloud");
  std::cout << "\nExplore (while the demo runs):\n"
            << "  " << home << " get nodes\n"
            << "  " << home << " -n demo get pods -o wide\n"
            << "  " << cloud << " get pods -A -l strait.io/origin-cluster-id\n"
            << "  " << home << " -n demo scale deployment web --replicas 30\n"
            << "  " << self_ << " status --kubeconfig " << kubeconfig("home") << "\n";
  if (!flags_.keep) {
    std::cout << "(run `strait demo --keep` or `make demo` to keep the clusters running)\n";
  }
}

std::string Demo::keepRunning() {
  std::cout << "\nThe demo keeps running; Ctrl-C stops it and removes " << dir_.string()
            << "\n"
            << std::flush;
  std::string dead;
  pollUntil([&] { return !(dead = deadChild()).empty(); }, std::chrono::hours(24 * 365),
            g_abort);
  return g_abort ? aborted() : dead;
}

void Demo::cleanUp() {
  for (auto it = steps_.rbegin(); it != steps_.rend(); ++it) (*it)->stop(2s);
  for (auto it = children_.rbegin(); it != children_.rend(); ++it) (*it)->stop(10s);
  home_.reset();
  cloud_.reset();
  std::error_code ec;
  if (createdDir_) {
    fs::remove_all(createdRoot_, ec);
  } else {
    for (const fs::path& p : createdFiles_) fs::remove_all(p, ec);
  }
  createdFiles_.clear();
  createdDir_ = false;
}

int runDemo(const DemoFlags& f) {
  setupLogging("error");
  std::cout << std::unitbuf;  // each line is visible at once, also in a pipe or a file
  auto fail = [](const std::string& msg) {
    std::cerr << "error: " << msg << "\n";
    return 2;
  };
  if (f.replicas < 1 || f.replicas > 1000) return fail("--replicas: expected 1 to 1000");
  auto cpu = kube::Quantity::parse(f.cpuRequest);
  if (!cpu.ok() || cpu->milliValue() <= 0) {
    return fail("--cpu-request: expected a positive CPU quantity such as 500m, got \"" +
                f.cpuRequest + "\"");
  }
  auto timeout = parseDuration(f.timeout);
  if (!timeout || timeout->count() <= 0) return fail("--timeout: expected a duration like 3m");
  if (!parseDuration(f.podStartLatency)) {
    return fail("--pod-start-latency: expected a duration like 1s");
  }
  if (f.dir.empty()) return fail("--dir: must not be empty");
  struct sigaction sa {};
  sa.sa_handler = onSignal;
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
  sigaction(SIGHUP, &sa, nullptr);
  signal(SIGPIPE, SIG_IGN);
  std::string runtime = f.runtime;
  if (runtime == "auto") {
    std::vector<std::string> missing = minicluster::missingProcessRuntimePrerequisites(true, true);
    runtime = missing.empty() ? "process" : "sim";
    if (!missing.empty()) {
      std::string why;
      for (const std::string& m : missing) why += (why.empty() ? "" : ", ") + m;
      std::cout << "runtime: sim (Pods are simulated, nothing really runs) because this machine "
                   "lacks "
                << why << "\n";
    }
  }
  if (runtime == "process") {
    std::cout << "runtime: process (each Pod is real processes in its own network namespace)\n";
  }
  Demo demo(f, *timeout, runtime);
  return demo.run();
}

}  // namespace

void addDemoCommand(CLI::App& app) {
  auto f = std::make_shared<DemoFlags>();
  CLI::App* sub = app.add_subcommand(
      "demo", "two clusters on this machine, peered; a Deployment bursts into the cloud");
  sub->add_option("--dir", f->dir, "folder for kubeconfigs and logs (removed at the end)")
      ->capture_default_str();
  sub->add_flag("--keep", f->keep, "keep everything running until Ctrl-C");
  sub->add_option("--replicas", f->replicas, "replicas of the demo Deployment (1 to 1000)")
      ->capture_default_str()
      ->check(numberRange(1, 1000));
  sub->add_option("--cpu-request", f->cpuRequest, "CPU request of each replica")
      ->capture_default_str()
      ->check(positiveQuantityValidator());
  sub->add_option("--timeout", f->timeout,
                  "how long to wait for every Pod to be Running (1s to 24h)")
      ->capture_default_str()
      ->check(durationValidator(std::chrono::seconds(1), std::chrono::hours(24)));
  sub->add_option("--pod-start-latency", f->podStartLatency,
                  "simulated time from binding to Running in both clusters (0s to 1h)")
      ->capture_default_str()
      ->check(durationValidator(std::chrono::milliseconds(0), std::chrono::hours(1)));
  sub->add_option("--runtime", f->runtime,
                  "how the clusters run Pods: process (real processes, needs root, ip netns, "
                  "nft, dnsmasq), sim (simulated), auto (process when possible)")
      ->capture_default_str()
      ->check(CLI::IsMember({"auto", "process", "sim"}));
  sub->callback([f] { setExitCode(runDemo(*f)); });
}

}  // namespace strait::cmd

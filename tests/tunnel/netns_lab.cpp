#include "tunnel/netns_lab.h"

#include <sys/stat.h>
#include <unistd.h>

#include <atomic>

#include "tunnel/crypto.h"

namespace strait::tunnel::testing {

namespace {
std::atomic<int> g_labs{0};

bool onPath(const std::string& tool) {
  return e2e::runCommand({"sh", "-c", "command -v " + tool}).exitCode == 0;
}
}  // namespace

NetnsLab::NetnsLab() : dir_("strait-netns") {
  int n = g_labs++;
  tag_ = "st" + std::to_string(getpid() % 100000) + std::string(1, static_cast<char>('a' + n % 26));
  a_ = tag_ + "A";
  b_ = tag_ + "B";
}

std::string NetnsLab::unavailableReason() {
  if (geteuid() != 0) return "needs root (network namespaces)";
  for (const char* tool : {"ip", "wg", "wireguard-go", "socat", "ping", "sha256sum"}) {
    if (!onPath(tool)) return std::string(tool) + " not installed (scripts/install-deps.sh)";
  }
  return "";
}

std::string NetnsLab::setUp() {
  std::string va = tag_ + "va", vb = tag_ + "vb";
  std::vector<std::vector<std::string>> steps = {
      {"ip", "netns", "add", a_},
      {"ip", "netns", "add", b_},
      {"ip", "link", "add", va, "type", "veth", "peer", "name", vb},
      {"ip", "link", "set", va, "netns", a_},
      {"ip", "link", "set", vb, "netns", b_},
      {"ip", "-n", a_, "addr", "add", "10.99.0.1/24", "dev", va},
      {"ip", "-n", b_, "addr", "add", "10.99.0.2/24", "dev", vb},
      {"ip", "-n", a_, "link", "set", "lo", "up"},
      {"ip", "-n", b_, "link", "set", "lo", "up"},
      {"ip", "-n", a_, "link", "set", va, "up"},
      {"ip", "-n", b_, "link", "set", vb, "up"},
  };
  for (const auto& s : steps) {
    e2e::CommandResult r = e2e::runCommand(s);
    if (s[2] == "add" && s[1] == "netns" && r.exitCode == 0) created_ = true;
    if (r.exitCode != 0) {
      std::string cmd;
      for (const auto& w : s) cmd += w + " ";
      return cmd + ": " + r.describe();
    }
  }
  return "";
}

NetnsLab::~NetnsLab() {
  for (auto& p : processes_) p->stop();
  // Deleting a namespace removes the veth end inside it (and so its peer).
  e2e::runCommand({"ip", "netns", "del", a_});
  e2e::runCommand({"ip", "netns", "del", b_});
  for (const std::string& ns : extra_) e2e::runCommand({"ip", "netns", "del", ns});
}

std::string NetnsLab::addNamespace(const std::string& suffix) {
  std::string ns = tag_ + suffix;
  e2e::CommandResult r = e2e::runCommand({"ip", "netns", "add", ns});
  if (r.exitCode != 0) {
    ADD_FAILURE() << "ip netns add " << ns << ": " << r.describe();
    return "";
  }
  extra_.push_back(ns);
  r = e2e::runCommand({"ip", "-n", ns, "link", "set", "lo", "up"});
  if (r.exitCode != 0) ADD_FAILURE() << "lo up in " << ns << ": " << r.describe();
  return ns;
}

e2e::CommandResult NetnsLab::exec(const std::string& ns, const std::vector<std::string>& argv,
                                  std::chrono::milliseconds timeout) {
  std::vector<std::string> full = {"ip", "netns", "exec", ns};
  full.insert(full.end(), argv.begin(), argv.end());
  return e2e::runCommand(full, {}, timeout);
}

e2e::BackgroundProcess& NetnsLab::spawn(const std::string& ns, const std::vector<std::string>& argv,
                                        const std::string& label, const e2e::Env& env) {
  std::vector<std::string> full = {"ip", "netns", "exec", ns};
  full.insert(full.end(), argv.begin(), argv.end());
  processes_.push_back(std::make_unique<e2e::BackgroundProcess>());
  std::string error;
  if (!processes_.back()->start(full, env, file(label + ".out"), file(label + ".err"), &error)) {
    ADD_FAILURE() << "cannot start " << argv[0] << ": " << error;
  }
  return *processes_.back();
}

bool NetnsLab::waitForUapi(const std::string& iface, std::chrono::milliseconds deadline) {
  std::string path = "/var/run/wireguard/" + iface + ".sock";
  return e2e::waitFor(
      [&] {
        struct stat st {};
        return stat(path.c_str(), &st) == 0 && S_ISSOCK(st.st_mode);
      },
      deadline);
}

WgKeys wgKeys() {
  PrivateKey k = generatePrivateKey();
  return {keyToBase64(k.bytes()), keyToBase64(*publicKeyOf(k))};
}

}  // namespace strait::tunnel::testing

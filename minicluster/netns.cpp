// The process runtime's network, made with the `ip` program of iproute2 (no hand-built
// netlink). Each step is one `ip` invocation whose stderr becomes the error message.
#include "minicluster/netns.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <spawn.h>
#include <spdlog/spdlog.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <thread>

namespace strait::minicluster {
namespace {

using kube::Code;
using kube::makeError;

}  // namespace

ProgramOutput runProgram(const std::vector<std::string>& argv) {
  ProgramOutput o;
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) {
    o.text = std::string("pipe: ") + std::strerror(errno);
    return o;
  }
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  // posix_spawn, not fork: the minicluster is large and multi-threaded, and copying its page
  // tables for every `ip`/`nft` run cost tens of milliseconds each under load.
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&actions, fds[1], 1);
  posix_spawn_file_actions_adddup2(&actions, fds[1], 2);
  pid_t pid = -1;
  int err = ::posix_spawnp(&pid, args[0], &actions, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  ::close(fds[1]);
  if (err != 0) {
    ::close(fds[0]);
    o.exitCode = 127;
    o.text = "cannot run " + argv[0] + ": " + std::strerror(err);
    return o;
  }
  char buf[4096];
  ssize_t n;
  while ((n = ::read(fds[0], buf, sizeof(buf))) > 0 || (n < 0 && errno == EINTR)) {
    if (n > 0) o.text.append(buf, static_cast<size_t>(n));
  }
  ::close(fds[0]);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  o.exitCode = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  while (!o.text.empty() && (o.text.back() == '\n' || o.text.back() == ' ')) o.text.pop_back();
  return o;
}

namespace {

kube::Status ip(const std::vector<std::string>& args) {
  std::vector<std::string> argv = {"ip"};
  argv.insert(argv.end(), args.begin(), args.end());
  ProgramOutput o = runProgram(argv);
  if (o.exitCode == 0) return kube::Status::OK();
  std::string cmd;
  for (const auto& a : argv) cmd += (cmd.empty() ? "" : " ") + a;
  return makeError(Code::Internal, "`" + cmd + "` failed: " + o.text);
}

// Runs `commands` (ip commands without the leading "ip") as one `ip -n <netns> -batch`.
kube::Status ipBatch(const std::string& netns, const std::vector<std::string>& commands) {
  char path[] = "/tmp/strait-ip-batch-XXXXXX";
  int fd = ::mkstemp(path);
  if (fd < 0) return makeError(Code::Internal, std::string("mkstemp: ") + std::strerror(errno));
  std::string text;
  for (const auto& c : commands) text += c + "\n";
  bool written = ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
  ::close(fd);
  kube::Status st = written ? ip({"-n", netns, "-batch", path})
                            : makeError(Code::Internal, std::string("writing ") + path);
  ::unlink(path);
  if (!st) return makeError(Code::Internal, st.error().message + " (batch: " + text + ")");
  return st;
}

bool inPath(const std::string& program) {
  const char* path = std::getenv("PATH");
  std::string p = path ? path : "/usr/sbin:/usr/bin:/sbin:/bin";
  p += ":/usr/sbin:/sbin";
  size_t i = 0;
  while (i <= p.size()) {
    size_t j = p.find(':', i);
    if (j == std::string::npos) j = p.size();
    std::string f = p.substr(i, j - i) + "/" + program;
    if (j > i && ::access(f.c_str(), X_OK) == 0) return true;
    i = j + 1;
  }
  return false;
}

uint32_t fnv1a(const std::string& s) {
  uint32_t h = 2166136261u;
  for (unsigned char c : s) {
    h ^= c;
    h *= 16777619u;
  }
  return h;
}

std::string sanitize(const std::string& name) {
  std::string out;
  for (char c : name) {
    char l = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    out += std::isalnum(static_cast<unsigned char>(l)) ? l : '-';
    if (out.size() == 24) break;
  }
  return out.empty() ? "cluster" : out;
}

// "10.244.1.0/24" -> ("10.244.1.1", 24).
std::pair<std::string, int> firstHost(const std::string& cidr) {
  auto slash = cidr.find('/');
  in_addr a{};
  inet_pton(AF_INET, cidr.substr(0, slash).c_str(), &a);
  uint32_t v = ntohl(a.s_addr) + 1;
  a.s_addr = htonl(v);
  char buf[INET_ADDRSTRLEN];
  inet_ntop(AF_INET, &a, buf, sizeof(buf));
  return {buf, slash == std::string::npos ? 32 : std::atoi(cidr.c_str() + slash + 1)};
}

bool writeProcFile(const std::string& path, const std::string& value) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC);
  if (fd < 0) return false;
  bool written = ::write(fd, value.data(), value.size()) == static_cast<ssize_t>(value.size());
  ::close(fd);
  return written;
}

// Loads `rules` with `nft -f` inside the network namespace `netns`.
kube::Status nftInNetns(const std::string& netns, const std::string& rules) {
  char path[] = "/tmp/strait-nft-XXXXXX";
  int fd = ::mkstemp(path);
  if (fd < 0) return makeError(Code::Internal, std::string("mkstemp: ") + std::strerror(errno));
  bool written = ::write(fd, rules.data(), rules.size()) == static_cast<ssize_t>(rules.size());
  ::close(fd);
  ProgramOutput o = written ? runProgram({"ip", "netns", "exec", netns, "nft", "-f", path})
                            : ProgramOutput{-1, std::string("writing ") + path};
  ::unlink(path);
  if (o.exitCode == 0) return kube::Status::OK();
  return makeError(Code::Internal, "nft in " + netns + " failed: " + o.text + " (rules: " + rules + ")");
}

bool pathExists(const std::string& p) {
  struct stat st {};
  return ::stat(p.c_str(), &st) == 0;
}

std::vector<std::string> netnsNamesWithPrefix(const std::string& prefix) {
  std::vector<std::string> out;
  DIR* d = ::opendir("/run/netns");
  if (!d) return out;
  while (dirent* e = ::readdir(d)) {
    std::string n = e->d_name;
    if (n.rfind(prefix, 0) == 0) out.push_back(n);
  }
  ::closedir(d);
  return out;
}

// Pids (other than this process) whose network namespace is (dev, ino).
std::vector<pid_t> pidsInNetns(dev_t dev, ino_t ino) {
  std::vector<pid_t> out;
  DIR* d = ::opendir("/proc");
  if (!d) return out;
  pid_t self = ::getpid();
  while (dirent* e = ::readdir(d)) {
    char* end = nullptr;
    long pid = std::strtol(e->d_name, &end, 10);
    if (!end || *end != '\0' || pid <= 0 || pid == self) continue;
    struct stat st {};
    std::string p = std::string("/proc/") + e->d_name + "/ns/net";
    if (::stat(p.c_str(), &st) == 0 && st.st_ino == ino && st.st_dev == dev) {
      out.push_back(static_cast<pid_t>(pid));
    }
  }
  ::closedir(d);
  return out;
}

}  // namespace

std::vector<std::string> missingProcessRuntimePrerequisites(bool needNft, bool needDnsmasq) {
  std::vector<std::string> missing;
  if (::geteuid() != 0) missing.push_back("root (network namespaces need CAP_SYS_ADMIN and CAP_NET_ADMIN)");
  if (!inPath("ip")) {
    missing.push_back("the ip program (Debian package iproute2)");
  } else if (ProgramOutput o = runProgram({"ip", "netns", "list"}); o.exitCode != 0) {
    missing.push_back("a usable `ip netns` (" + o.text + ")");
  }
  if (!pathExists("/proc/self/ns/net")) missing.push_back("network namespaces in the kernel");
  if (needNft && !inPath("nft")) missing.push_back("the nft program (Debian package nftables)");
  if (needDnsmasq && !inPath("dnsmasq")) {
    missing.push_back("the dnsmasq program (Debian package dnsmasq-base)");
  }
  return missing;
}

std::string networkMarker(const std::string& clusterName) {
  char buf[16];
  std::snprintf(buf, sizeof(buf), "st%06x", fnv1a(clusterName) & 0xffffffu);
  return buf;
}

std::string namespacePrefix(const std::string& clusterName) {
  return networkMarker(clusterName) + "-" + sanitize(clusterName) + "-";
}

bool runInNetns(const std::string& netnsPath, const std::function<void()>& fn) {
  bool ok = false;
  std::thread t([&] {
    int fd = ::open(netnsPath.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return;
    ok = ::setns(fd, CLONE_NEWNET) == 0;
    ::close(fd);
    if (ok) fn();
  });
  t.join();
  return ok;
}

std::vector<pid_t> killProcessesInNetns(const std::string& netnsPath) {
  struct stat st {};
  if (::stat(netnsPath.c_str(), &st) != 0) return {};
  std::vector<pid_t> killed = pidsInNetns(st.st_dev, st.st_ino);
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(2);
  for (auto pids = killed; !pids.empty(); pids = pidsInNetns(st.st_dev, st.st_ino)) {
    for (pid_t p : pids) ::kill(p, SIGKILL);
    if (std::chrono::steady_clock::now() > deadline) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return killed;
}

SweepReport sweepClusterNetwork(const std::string& clusterName) {
  SweepReport r;
  std::string link = networkMarker(clusterName) + "h";
  if (runProgram({"ip", "link", "show", "dev", link}).exitCode == 0) {
    if (auto s = ip({"link", "delete", "dev", link}); !s) {
      spdlog::warn("event=link_delete_failed link={} error=\"{}\"", link, s.error().message);
    }
    r.links.push_back(link);
  }
  std::string prefix = namespacePrefix(clusterName);
  for (const auto& ns : netnsNamesWithPrefix(prefix)) {
    auto pids = killProcessesInNetns(ClusterNetwork::netnsPath(ns));
    r.processes.insert(r.processes.end(), pids.begin(), pids.end());
    if (auto s = ip({"netns", "delete", ns}); !s) {
      spdlog::warn("event=netns_delete_failed netns={} error=\"{}\"", ns, s.error().message);
    }
    r.namespaces.push_back(ns);
  }
  return r;
}

ClusterNetwork::ClusterNetwork(std::string clusterName)
    : cluster_(std::move(clusterName)),
      marker_(networkMarker(cluster_)),
      prefix_(namespacePrefix(cluster_)),
      hostLink_(marker_ + "h") {}

std::string ClusterNetwork::netnsPath(const std::string& netns) { return "/run/netns/" + netns; }

kube::Status ClusterNetwork::create(const std::vector<std::pair<std::string, std::string>>& nodes) {
  if (nodes.size() > 250) {
    return makeError(Code::Invalid, "the process runtime runs at most 250 nodes per cluster");
  }
  // The underlay /24: from the cluster name's hash, the next one if this host uses it.
  std::string used = runProgram({"ip", "-4", "-o", "addr", "show"}).text + "\n" +
                     runProgram({"ip", "-4", "route", "show", "table", "all"}).text;
  uint32_t base = fnv1a("underlay/" + cluster_) % 16384;
  for (uint32_t k = 0; k < 16384; ++k) {
    uint32_t idx = (base + k) % 16384;
    std::string p = "100." + std::to_string(64 + idx / 256) + "." + std::to_string(idx % 256) + ".";
    if (used.find(" " + p) == std::string::npos && used.find("\n" + p) == std::string::npos &&
        used.rfind(p, 0) != 0) {
      underlayPrefix_ = p;
      break;
    }
  }
  if (underlayPrefix_.empty()) return makeError(Code::Unavailable, "no free underlay /24 in 100.64.0.0/10");
  const std::string ul = prefix_ + "underlay";
  auto fail = [&](kube::Status s) {
    destroy();
    return s;
  };
  std::vector<std::vector<std::string>> steps = {
      {"netns", "add", ul},
      {"-n", ul, "link", "set", "lo", "up"},
      // Fixed bridge addresses: a bridge otherwise takes the lowest address of its ports, and
      // changes it when that port goes, leaving stale gateway entries in neighbours' caches.
      {"-n", ul, "link", "add", "br0", "address", "02:5e:ff:00:00:01", "type", "bridge"},
      {"-n", ul, "link", "set", "br0", "up"},
      {"link", "add", hostLink_, "type", "veth", "peer", "name", "host", "netns", ul},
      {"-n", ul, "link", "set", "host", "master", "br0", "up"},
      {"addr", "add", underlayPrefix_ + "1/24", "dev", hostLink_},
      {"link", "set", hostLink_, "up"},
  };
  int i = 0;
  for (const auto& [name, cidr] : nodes) {
    NodeNetwork n;
    n.name = name;
    n.netns = prefix_ + name;
    n.address = underlayPrefix_ + std::to_string(i + 2);
    n.podCidr = cidr;
    auto [gw, len] = firstHost(cidr);
    n.gateway = gw;
    std::string uplink = "n" + std::to_string(i);
    char mac[18];
    std::snprintf(mac, sizeof(mac), "02:5e:00:00:%02x:%02x", (i >> 8) & 255, i & 255);
    std::vector<std::vector<std::string>> node = {
        {"netns", "add", n.netns},
        {"-n", n.netns, "link", "set", "lo", "up"},
        {"-n", n.netns, "link", "add", "eth0", "type", "veth", "peer", "name", uplink, "netns", ul},
        {"-n", ul, "link", "set", uplink, "master", "br0", "up"},
        {"-n", n.netns, "addr", "add", n.address + "/24", "dev", "eth0"},
        {"-n", n.netns, "link", "set", "eth0", "up"},
        // The Service CIDR towards the host, as a node's default route would send it: a
        // ClusterIP then has a route, so the output hook can DNAT connections the node
        // itself (and its hostNetwork Pods) opens. No default route: nothing a Pod sends
        // leaves the cluster's namespaces through the host.
        {"-n", n.netns, "route", "add", kServiceCidr, "via", underlayPrefix_ + "1"},
        // The other clusters' underlays, through the host (the internet between clouds).
        // Pod and Service CIDRs are never routed between clusters.
        {"-n", n.netns, "route", "add", kUnderlayCidr, "via", underlayPrefix_ + "1"},
        {"-n", n.netns, "link", "add", "cbr0", "address", mac, "type", "bridge"},
        {"-n", n.netns, "addr", "add", gw + "/" + std::to_string(len), "dev", "cbr0"},
        {"-n", n.netns, "link", "set", "cbr0", "up"},
    };
    steps.insert(steps.end(), node.begin(), node.end());
    nodes_[name] = std::move(n);
    ++i;
  }
  for (const auto& a : nodes_) {
    for (const auto& b : nodes_) {
      if (a.first == b.first) continue;
      steps.push_back({"-n", a.second.netns, "route", "add", b.second.podCidr, "via",
                       b.second.address});
    }
  }
  for (const auto& s : steps) {
    if (auto st = ip(s); !st) return fail(st);
  }
  // The host forwards between the underlay links of the clusters on it (this link's setting
  // goes with the link) and reaches every Pod IP (the API server dials virtual kubelets and
  // webhooks on Pod IPs). A pod CIDR another cluster on this host already routes is left to
  // that cluster: give clusters that must reach each other's API servers distinct --pod-cidr.
  if (!writeProcFile("/proc/sys/net/ipv4/conf/" + hostLink_ + "/forwarding", "1\n")) {
    return fail(makeError(Code::Internal, "cannot turn on IPv4 forwarding on " + hostLink_));
  }
  for (const auto& [name, n] : nodes_) {
    if (auto st = ip({"route", "add", n.podCidr, "via", n.address, "dev", hostLink_}); !st) {
      spdlog::warn("event=pod_cidr_route_skipped cidr={} node={} error=\"{}\"", n.podCidr, name,
                   st.error().message);
    }
  }
  for (const auto& [name, n] : nodes_) {
    bool written = false;
    bool entered = runInNetns(netnsPath(n.netns), [&] {
      written = writeProcFile("/proc/sys/net/ipv4/ip_forward", "1\n");
    });
    if (!entered || !written) {
      return fail(makeError(Code::Internal, "cannot turn on IPv4 forwarding in " + n.netns));
    }
    // Pods leaving the cluster for another underlay leave with the node's address, as
    // behind a cloud's NAT gateway.
    std::string rules = std::string("table ip ") + kEgressTable + " {\n"
                        "  chain postrouting {\n"
                        "    type nat hook postrouting priority 110; policy accept;\n"
                        "    oifname \"eth0\" ip saddr " + n.podCidr + " ip daddr " + kUnderlayCidr +
                        " ip daddr != " + underlayPrefix_ + "0/24 masquerade\n  }\n}\n";
    if (auto st = nftInNetns(n.netns, rules); !st) return fail(st);
  }
  spdlog::info("event=cluster_network_created marker={} underlay={}0/24 nodes={}", marker_,
               underlayPrefix_, nodes_.size());
  return kube::Status::OK();
}

void ClusterNetwork::destroy() {
  SweepReport r = sweepClusterNetwork(cluster_);
  if (!r.namespaces.empty() || !r.links.empty()) {
    spdlog::info("event=cluster_network_removed marker={} namespaces={} links={} processes={}",
                 marker_, r.namespaces.size(), r.links.size(), r.processes.size());
  }
}

std::string ClusterNetwork::podNetns(const std::string& podUid) const {
  std::string id;
  for (char c : podUid) {
    if (c != '-') id += c;
    if (id.size() == 16) break;
  }
  return prefix_ + "pod-" + id;
}

kube::Result<std::string> ClusterNetwork::addPod(const std::string& node, const std::string& podUid,
                                                 const std::string& podIP) {
  auto it = nodes_.find(node);
  if (it == nodes_.end()) return makeError(Code::NotFound, "node " + node + " has no network");
  const NodeNetwork& n = it->second;
  std::string ns = podNetns(podUid);
  if (pathExists(netnsPath(ns))) removePod(podUid);
  std::string veth = "veth" + ns.substr(ns.size() - std::min<size_t>(ns.size(), 16)).substr(0, 8);
  int len = firstHost(n.podCidr).second;
  // Three `ip` runs instead of seven (each run costs a fork and exec, the bulk of a Pod's
  // sandbox time): the namespace, then a batch in the node's namespace, one in the Pod's.
  std::vector<std::pair<std::string, std::vector<std::string>>> batches = {
      {n.netns,
       {"link add " + veth + " type veth peer name eth0 netns " + ns,
        "link set " + veth + " master cbr0 up"}},
      {ns,
       {"link set lo up", "addr add " + podIP + "/" + std::to_string(len) + " dev eth0",
        "link set eth0 up", "route add default via " + n.gateway}},
  };
  kube::Status st = ip({"netns", "add", ns});
  for (size_t i = 0; st && i < batches.size(); ++i) {
    st = ipBatch(batches[i].first, batches[i].second);
  }
  if (!st) {
    removePod(podUid);
    return st.error();
  }
  return ns;
}

void ClusterNetwork::removePod(const std::string& podUid) {
  std::string ns = podNetns(podUid);
  if (!pathExists(netnsPath(ns))) return;
  killProcessesInNetns(netnsPath(ns));
  if (auto s = ip({"netns", "delete", ns}); !s) {
    spdlog::warn("event=netns_delete_failed netns={} error=\"{}\"", ns, s.error().message);
  }
}

}  // namespace strait::minicluster

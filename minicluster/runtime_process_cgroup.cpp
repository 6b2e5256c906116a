// cgroups of the process runtime's containers (see runtime_process_cgroup.h).
#include "minicluster/runtime_process_cgroup.h"

#include <dirent.h>
#include <signal.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <functional>
#include <fstream>
#include <set>
#include <sstream>
#include <thread>

#include "kube/quantity.h"
#include "minicluster/netns.h"

namespace strait::minicluster {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using namespace std::chrono_literals;

std::string readFile(const std::string& path) {
  std::ifstream in(path);
  if (!in) return {};
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Writes `value` to a cgroup file; the error names the file and errno.
kube::Status writeFile(const std::string& path, const std::string& value) {
  FILE* f = std::fopen(path.c_str(), "w");
  if (!f) {
    return kube::makeError(kube::Code::Internal,
                           "cannot open " + path + ": " + std::strerror(errno));
  }
  bool ok = std::fputs(value.c_str(), f) >= 0;
  ok = (std::fclose(f) == 0) && ok;
  if (!ok) {
    return kube::makeError(kube::Code::Internal, "cannot write \"" + value + "\" to " + path +
                                                     ": " + std::strerror(errno));
  }
  return kube::Status::OK();
}

std::optional<uint64_t> readNumber(const std::string& path) {
  std::string s = readFile(path);
  if (s.empty()) return std::nullopt;
  try {
    return std::stoull(s);
  } catch (...) {
    return std::nullopt;
  }
}

std::vector<std::string> splitFields(std::string_view line, char sep) {
  std::vector<std::string> out;
  size_t i = 0;
  while (i <= line.size()) {
    size_t j = line.find(sep, i);
    if (j == std::string_view::npos) j = line.size();
    out.emplace_back(line.substr(i, j - i));
    i = j + 1;
  }
  return out;
}

std::vector<std::string> lines(std::string_view text) {
  std::vector<std::string> out;
  for (auto& l : splitFields(text, '\n')) {
    if (!l.empty()) out.push_back(std::move(l));
  }
  return out;
}

// SIGKILLs every process in the cgroup at `dir` and waits (≤ 2 s) until it is empty.
void killAllIn(const std::string& dir) {
  auto deadline = std::chrono::steady_clock::now() + 2s;
  for (;;) {
    auto pids = lines(readFile(dir + "/cgroup.procs"));
    if (pids.empty() || std::chrono::steady_clock::now() > deadline) return;
    for (const auto& p : pids) {
      try {
        pid_t pid = std::stoi(p);
        if (pid > 1 && pid != ::getpid()) ::kill(pid, SIGKILL);
      } catch (...) {
      }
    }
    std::this_thread::sleep_for(20ms);
  }
}

// Kills the processes of `dir` and of every cgroup below it and removes them, deepest
// first. Returns how many were removed.
int removeTree(const std::string& dir, bool removeSelf) {
  int removed = 0;
  std::error_code ec;
  std::vector<std::string> children;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    if (e.is_directory(ec)) children.push_back(e.path().string());
  }
  for (const auto& c : children) removed += removeTree(c, true);
  if (!removeSelf) return removed;
  killAllIn(dir);
  for (int i = 0; i < 50; ++i) {
    if (::rmdir(dir.c_str()) == 0 || errno == ENOENT) return removed + 1;
    std::this_thread::sleep_for(20ms);  // the last exits are still being accounted
  }
  spdlog::warn("event=cgroup_remove_failed cgroup={} error=\"{}\"", dir, std::strerror(errno));
  return removed;
}

bool enableControllers(const std::string& dir) {
  return writeFile(dir + "/cgroup.subtree_control", "+cpu +memory").ok();
}

bool hasControllers(const std::string& dir) {
  std::set<std::string> have;
  for (const auto& c : splitFields(readFile(dir + "/cgroup.controllers"), ' ')) {
    std::string t = c;
    while (!t.empty() && (t.back() == '\n' || t.back() == ' ')) t.pop_back();
    have.insert(t);
  }
  return have.count("cpu") && have.count("memory");
}

}  // namespace

CgroupMounts parseCgroupMounts(std::string_view procSelfCgroup, std::string_view mountinfo) {
  // Our path per hierarchy: "0::/path" (v2), "4:memory:/path", "2:cpu,cpuacct:/path" (v1).
  std::string unifiedPath;
  bool haveUnified = false;
  std::map<std::string, std::string> v1Paths;
  for (const auto& l : lines(procSelfCgroup)) {
    auto a = l.find(':');
    auto b = a == std::string::npos ? a : l.find(':', a + 1);
    if (b == std::string::npos) continue;
    std::string controllers = l.substr(a + 1, b - a - 1);
    std::string path = l.substr(b + 1);
    if (l.substr(0, a) == "0" && controllers.empty()) {
      unifiedPath = path;
      haveUnified = true;
      continue;
    }
    for (const auto& c : splitFields(controllers, ',')) v1Paths[c] = path;
  }
  // Mounts: "id parent maj:min root mountpoint options [optional...] - fstype source super".
  auto join = [](const std::string& mount, const std::string& root, const std::string& path) {
    std::string rel = path;
    if (root != "/" && rel.rfind(root, 0) == 0) rel = rel.substr(root.size());
    if (rel.empty() || rel == "/") return mount;
    return mount + (rel.front() == '/' ? "" : "/") + rel;
  };
  CgroupMounts out;
  for (const auto& l : lines(mountinfo)) {
    auto f = splitFields(l, ' ');
    size_t dash = std::find(f.begin(), f.end(), "-") - f.begin();
    if (f.size() < 5 || dash + 3 >= f.size()) continue;  // needs fstype, source, options
    const std::string& root = f[3];
    const std::string& mount = f[4];
    const std::string& type = f[dash + 1];
    if (type == "cgroup2" && haveUnified && out.unifiedDir.empty()) {
      out.unifiedDir = join(mount, root, unifiedPath);
      out.mountPoints.push_back(mount);
    } else if (type == "cgroup") {
      bool used = false;
      for (const auto& opt : splitFields(f[dash + 3], ',')) {
        auto it = v1Paths.find(opt);
        if (it != v1Paths.end() && !out.v1Dirs.count(opt)) {
          out.v1Dirs[opt] = join(mount, root, it->second);
          used = true;
        }
      }
      if (used) out.mountPoints.push_back(mount);
    }
  }
  return out;
}

std::string cgroupParentName(const std::string& clusterName) {
  std::string p = namespacePrefix(clusterName);
  return "strait-" + p.substr(0, p.size() - 1);
}

int64_t ContainerLimits::cpuWeight() const {
  int64_t shares = std::clamp<int64_t>(cpuShares, 2, 262144);
  return 1 + ((shares - 2) * 9999) / 262142;
}

ContainerLimits containerLimits(const json& container) {
  ContainerLimits l;
  const json res = container.is_object() ? container.value("resources", json::object())
                                         : json::object();
  auto quantity = [&](const char* list, const char* name) -> std::optional<kube::Quantity> {
    if (!res.contains(list) || !res[list].is_object() || !res[list].contains(name)) {
      return std::nullopt;
    }
    const json& v = res[list][name];
    auto q = kube::Quantity::parse(v.is_string() ? v.get<std::string>() : v.dump());
    if (!q || q->sign() <= 0) return std::nullopt;
    return *q;
  };
  if (auto m = quantity("limits", "memory")) l.memoryBytes = m->value();
  auto cpuLimit = quantity("limits", "cpu");
  if (cpuLimit) {
    // As the kubelet: quota = milliCPU x period / 1000, at least 1 ms.
    l.cpuQuotaUs = std::max<int64_t>(cpuLimit->milliValue() * l.cpuPeriodUs / 1000, 1000);
  }
  auto cpuRequest = quantity("requests", "cpu");
  if (!cpuRequest) cpuRequest = cpuLimit;
  if (cpuRequest) l.cpuShares = std::max<int64_t>(cpuRequest->milliValue() * 1024 / 1000, 2);
  return l;
}

std::optional<uint64_t> statField(std::string_view text, std::string_view key) {
  for (const auto& l : lines(text)) {
    auto sp = l.find(' ');
    if (sp == std::string::npos || std::string_view(l).substr(0, sp) != key) continue;
    try {
      return std::stoull(l.substr(sp + 1));
    } catch (...) {
      return std::nullopt;
    }
  }
  return std::nullopt;
}

UsageSample sampleSession(pid_t sid) {
  UsageSample s;
  static const long ticks = ::sysconf(_SC_CLK_TCK);
  static const long page = ::sysconf(_SC_PAGESIZE);
  uint64_t cpuTicks = 0, rssPages = 0;
  bool any = false;
  DIR* d = ::opendir("/proc");
  if (!d) return s;
  while (dirent* e = ::readdir(d)) {
    if (e->d_name[0] < '0' || e->d_name[0] > '9') continue;
    std::string stat = readFile(std::string("/proc/") + e->d_name + "/stat");
    auto close = stat.rfind(')');
    if (close == std::string::npos) continue;
    // After "pid (comm)": state(3) ppid pgrp session(6) ... utime(14) stime cutime cstime(17)
    // ... rss(24); f[0] is field 3.
    auto f = splitFields(std::string_view(stat).substr(close + 2), ' ');
    if (f.size() < 22) continue;
    try {
      if (std::stol(f[3]) != sid) continue;
      cpuTicks += std::stoull(f[11]) + std::stoull(f[12]) + std::stoull(f[13]) + std::stoull(f[14]);
      rssPages += std::stoull(f[21]);
      any = true;
    } catch (...) {
    }
  }
  ::closedir(d);
  if (!any || ticks <= 0) return s;
  s.cpuNs = cpuTicks * (1000000000ull / static_cast<uint64_t>(ticks));
  s.rss = rssPages * static_cast<uint64_t>(page);
  s.memoryUsage = s.rss;
  s.workingSet = s.rss;
  return s;
}

std::unique_ptr<ProcessCgroups> ProcessCgroups::open(const std::string& clusterName) {
  std::unique_ptr<ProcessCgroups> c(new ProcessCgroups());
  const std::string name = cgroupParentName(clusterName);
  if (int swept = sweepCluster(clusterName); swept > 0) {
    spdlog::info("event=cgroups_swept cluster={} cgroups={}", clusterName, swept);
  }
  CgroupMounts m =
      parseCgroupMounts(readFile("/proc/self/cgroup"), readFile("/proc/self/mountinfo"));
  std::error_code ec;
  std::string v2Why;
  if (m.unifiedDir.empty()) {
    v2Why = "no cgroup2 mount";
  } else if (!hasControllers(m.unifiedDir)) {
    v2Why = "the cgroup2 hierarchy (" + m.unifiedDir + ") has no cpu and memory controllers";
  } else {
    std::string parent = m.unifiedDir + "/" + name;
    fs::create_directories(parent, ec);
    if (ec) {
      v2Why = "cannot create " + parent + ": " + ec.message();
    } else if (!hasControllers(parent) &&
               !(enableControllers(m.unifiedDir) && hasControllers(parent))) {
      v2Why = "cannot enable cpu and memory below " + m.unifiedDir +
              " (a cgroup with processes cannot delegate controllers)";
      ::rmdir(parent.c_str());
    } else if (!enableControllers(parent)) {
      v2Why = "cannot enable cpu and memory in " + parent;
      ::rmdir(parent.c_str());
    } else {
      c->mode_ = CgroupMode::V2;
      c->v2Parent_ = parent;
    }
  }
  if (c->mode_ == CgroupMode::None) {
    std::string v1Why;
    for (const char* ctl : {"memory", "cpu", "cpuacct"}) {
      auto it = m.v1Dirs.find(ctl);
      if (it == m.v1Dirs.end()) {
        v1Why = std::string("no cgroup v1 ") + ctl + " hierarchy";
        break;
      }
      std::string parent = it->second + "/" + name;
      fs::create_directories(parent, ec);
      if (ec) {
        v1Why = "cannot create " + parent + ": " + ec.message();
        break;
      }
      (std::string(ctl) == "memory" ? c->memoryParent_
                                    : std::string(ctl) == "cpu" ? c->cpuParent_
                                                                : c->cpuacctParent_) = parent;
    }
    if (v1Why.empty()) {
      c->mode_ = CgroupMode::V1;
    } else {
      for (const auto& p : {c->memoryParent_, c->cpuParent_, c->cpuacctParent_}) {
        if (!p.empty()) ::rmdir(p.c_str());
      }
      c->memoryParent_.clear();
      c->cpuParent_.clear();
      c->cpuacctParent_.clear();
      c->reason_ = "cgroup v2: " + v2Why + "; cgroup v1: " + v1Why;
    }
  }
  return c;
}

std::string ProcessCgroups::describe() const {
  switch (mode_) {
    case CgroupMode::V2:
      return "cgroup v2";
    case CgroupMode::V1:
      return "cgroup v1";
    case CgroupMode::None:
      break;
  }
  return "none: " + reason_;
}

std::vector<std::string> ProcessCgroups::parents() const {
  std::vector<std::string> out;
  if (mode_ == CgroupMode::V2) out.push_back(v2Parent_);
  if (mode_ == CgroupMode::V1) {
    for (const auto& p : {memoryParent_, cpuParent_, cpuacctParent_}) {
      if (std::find(out.begin(), out.end(), p) == out.end()) out.push_back(p);
    }
  }
  return out;
}

std::string ProcessCgroups::dirIn(const std::string& parent, const std::string& podUid,
                                  const std::string& container) const {
  std::string d = parent + "/pod" + podUid;
  return container.empty() ? d : d + "/" + container;
}

kube::Result<std::vector<std::string>> ProcessCgroups::prepareContainer(
    const std::string& podUid, const std::string& container, const ContainerLimits& limits) {
  std::vector<std::string> procs;
  if (mode_ == CgroupMode::None) return procs;
  std::error_code ec;
  for (const auto& parent : parents()) {
    std::string pod = dirIn(parent, podUid, "");
    std::string dir = dirIn(parent, podUid, container);
    removeTree(dir, true);  // the previous instance's, with its counters
    fs::create_directories(dir, ec);
    if (ec) return kube::makeError(kube::Code::Internal, "cannot create " + dir + ": " + ec.message());
    if (mode_ == CgroupMode::V2) {
      if (!enableControllers(pod)) {
        return kube::makeError(kube::Code::Internal, "cannot enable cpu and memory in " + pod);
      }
      if (limits.memoryBytes) {
        if (auto s = writeFile(dir + "/memory.max", std::to_string(*limits.memoryBytes)); !s) {
          return s.error();
        }
        (void)writeFile(dir + "/memory.swap.max", "0");  // absent without swap accounting
      }
      std::string max = limits.cpuQuotaUs ? std::to_string(*limits.cpuQuotaUs) : "max";
      if (auto s = writeFile(dir + "/cpu.max", max + " " + std::to_string(limits.cpuPeriodUs));
          !s) {
        return s.error();
      }
      if (auto s = writeFile(dir + "/cpu.weight", std::to_string(limits.cpuWeight())); !s) {
        return s.error();
      }
    }
    if (parent == memoryParent_ && limits.memoryBytes) {
      if (auto s = writeFile(dir + "/memory.limit_in_bytes", std::to_string(*limits.memoryBytes));
          !s) {
        return s.error();
      }
      (void)writeFile(dir + "/memory.swappiness", "0");
      (void)writeFile(dir + "/memory.memsw.limit_in_bytes", std::to_string(*limits.memoryBytes));
    }
    if (parent == cpuParent_) {
      if (auto s = writeFile(dir + "/cpu.cfs_period_us", std::to_string(limits.cpuPeriodUs)); !s) {
        return s.error();
      }
      std::string quota = limits.cpuQuotaUs ? std::to_string(*limits.cpuQuotaUs) : "-1";
      if (auto s = writeFile(dir + "/cpu.cfs_quota_us", quota); !s) return s.error();
      if (auto s = writeFile(dir + "/cpu.shares", std::to_string(limits.cpuShares)); !s) {
        return s.error();
      }
    }
    procs.push_back(dir + "/cgroup.procs");
  }
  return procs;
}

UsageSample ProcessCgroups::sampleContainer(const std::string& podUid,
                                            const std::string& container) const {
  UsageSample s;
  if (mode_ == CgroupMode::V2) {
    std::string dir = dirIn(v2Parent_, podUid, container);
    if (auto usec = statField(readFile(dir + "/cpu.stat"), "usage_usec")) s.cpuNs = *usec * 1000;
    s.memoryUsage = readNumber(dir + "/memory.current");
    std::string stat = readFile(dir + "/memory.stat");
    s.rss = statField(stat, "anon");
    auto inactive = statField(stat, "inactive_file");
    if (s.memoryUsage) {
      s.workingSet = *s.memoryUsage - std::min(*s.memoryUsage, inactive.value_or(0));
    }
  } else if (mode_ == CgroupMode::V1) {
    s.cpuNs = readNumber(dirIn(cpuacctParent_, podUid, container) + "/cpuacct.usage");
    std::string dir = dirIn(memoryParent_, podUid, container);
    s.memoryUsage = readNumber(dir + "/memory.usage_in_bytes");
    std::string stat = readFile(dir + "/memory.stat");
    s.rss = statField(stat, "total_rss");
    if (!s.rss) s.rss = statField(stat, "rss");
    auto inactive = statField(stat, "total_inactive_file");
    if (!inactive) inactive = statField(stat, "inactive_file");
    if (s.memoryUsage) {
      s.workingSet = *s.memoryUsage - std::min(*s.memoryUsage, inactive.value_or(0));
    }
  }
  return s;
}

uint64_t ProcessCgroups::oomKills(const std::string& podUid, const std::string& container) const {
  if (mode_ == CgroupMode::V2) {
    return statField(readFile(dirIn(v2Parent_, podUid, container) + "/memory.events"), "oom_kill")
        .value_or(0);
  }
  if (mode_ == CgroupMode::V1) {
    return statField(readFile(dirIn(memoryParent_, podUid, container) + "/memory.oom_control"),
                     "oom_kill")
        .value_or(0);
  }
  return 0;
}

void ProcessCgroups::removePod(const std::string& podUid) {
  for (const auto& parent : parents()) {
    std::string dir = dirIn(parent, podUid, "");
    std::error_code ec;
    if (fs::exists(dir, ec)) removeTree(dir, true);
  }
}

int ProcessCgroups::sweep(bool removeParent) {
  int removed = 0;
  for (const auto& parent : parents()) {
    std::error_code ec;
    if (fs::exists(parent, ec)) removed += removeTree(parent, removeParent);
  }
  return removed;
}

int ProcessCgroups::sweepCluster(const std::string& clusterName) {
  // Whatever the mode now, a predecessor may have used either, from any cgroup: look in every
  // hierarchy, a few levels deep, never inside another cluster's parent.
  const std::string name = cgroupParentName(clusterName);
  CgroupMounts m =
      parseCgroupMounts(readFile("/proc/self/cgroup"), readFile("/proc/self/mountinfo"));
  std::vector<std::string> found;
  std::function<void(const fs::path&, int)> walk = [&](const fs::path& dir, int depth) {
    std::error_code ec;
    for (const auto& e : fs::directory_iterator(dir, ec)) {
      if (!e.is_directory(ec) || e.is_symlink(ec)) continue;
      const std::string leaf = e.path().filename().string();
      if (leaf == name) {
        found.push_back(e.path().string());
      } else if (depth < 4 && leaf.rfind("strait-", 0) != 0) {
        walk(e.path(), depth + 1);
      }
    }
  };
  for (const auto& mount : m.mountPoints) walk(mount, 1);
  int removed = 0;
  for (const auto& d : found) removed += removeTree(d, true);
  return removed;
}

}  // namespace strait::minicluster

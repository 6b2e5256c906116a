#pragma once
// Small /proc readers and helpers shared by the benchmarks that start processes: the load
// average, a process's RSS, CPU seconds and context switches, a free loopback port, a
// metrics scrape.
// Thread-safe (no state).

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <map>
#include <sstream>
#include <string>

namespace strait::bench {

inline std::string loadavg() {
  std::ifstream in("/proc/loadavg");
  std::string a, b, c;
  in >> a >> b >> c;
  return a + " " + b + " " + c;
}

// A field of /proc/<pid>/status in KiB (VmRSS, VmHWM); -1 when unreadable.
inline long procStatusKiB(pid_t pid, const std::string& field) {
  if (pid <= 0) return -1;
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(field + ":", 0) == 0) return std::stol(line.substr(field.size() + 1));
  }
  return -1;
}

// utime + stime of a process in seconds; -1 when unreadable.
inline double cpuSeconds(pid_t pid) {
  if (pid <= 0) return -1;
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  size_t paren = text.rfind(')');
  if (paren == std::string::npos) return -1;
  std::istringstream rest(text.substr(paren + 2));
  std::string field;
  unsigned long long utime = 0, stime = 0;
  for (int i = 3; i <= 15 && rest >> field; ++i) {
    if (i == 14) utime = std::stoull(field);
    if (i == 15) stime = std::stoull(field);
  }
  return static_cast<double>(utime + stime) / static_cast<double>(sysconf(_SC_CLK_TCK));
}

// Context switches (voluntary + involuntary) of each live thread of a process: tid ->
// (thread name, switches), from /proc/<pid>/task/<tid>/{status,comm}. Threads that already
// exited are not in it (unlike CPU seconds, the kernel keeps no total of theirs). Empty
// when the process is gone.
struct ThreadSwitches {
  std::string name;
  long long switches = 0;
};
inline std::map<pid_t, ThreadSwitches> threadContextSwitches(pid_t pid) {
  std::map<pid_t, ThreadSwitches> out;
  if (pid <= 0) return out;
  std::error_code ec;
  const std::filesystem::path dir = "/proc/" + std::to_string(pid) + "/task";
  for (const auto& entry : std::filesystem::directory_iterator(dir, ec)) {
    const std::string tidText = entry.path().filename().string();
    ThreadSwitches t;
    std::ifstream comm(entry.path() / "comm");
    std::getline(comm, t.name);
    std::ifstream status(entry.path() / "status");
    std::string line;
    bool any = false;
    while (std::getline(status, line)) {
      for (const char* field : {"voluntary_ctxt_switches:", "nonvoluntary_ctxt_switches:"}) {
        if (line.rfind(field, 0) == 0) {
          t.switches += std::stoll(line.substr(std::char_traits<char>::length(field)));
          any = true;
        }
      }
    }
    if (any) out[static_cast<pid_t>(std::stol(tidText))] = std::move(t);
  }
  return out;
}

// Switches between two snapshots of threadContextSwitches, summed by thread name (threads
// born in between count from zero), and their total under "all".
inline std::map<std::string, long long> contextSwitchesBetween(
    const std::map<pid_t, ThreadSwitches>& before, const std::map<pid_t, ThreadSwitches>& after) {
  std::map<std::string, long long> out;
  long long all = 0;
  for (const auto& [tid, t] : after) {
    auto it = before.find(tid);
    const long long d = t.switches - (it == before.end() ? 0 : it->second.switches);
    out[t.name] += d;
    all += d;
  }
  out["all"] = all;
  return out;
}

// A loopback port free at the time of the call (0 when none could be bound).
inline uint16_t freePort() {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return 0;
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  uint16_t port = 0;
  socklen_t len = sizeof a;
  if (bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0 &&
      getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) == 0) {
    port = ntohs(a.sin_port);
  }
  close(fd);
  return port;
}

inline double msBetween(std::chrono::steady_clock::time_point a,
                        std::chrono::steady_clock::time_point b) {
  return std::chrono::duration<double, std::milli>(b - a).count();
}

// The text of http://`hostPort`/metrics (curl, 10 s at most); empty when the scrape failed.
inline std::string scrapeMetrics(const std::string& hostPort) {
  std::string cmd = "curl -sf --max-time 10 http://" + hostPort + "/metrics";
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) return "";
  std::string text;
  char buf[65536];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) text.append(buf, n);
  pclose(p);
  return text;
}

// apiserver_request_total from a minicluster's --metrics-listen endpoint (curl): "VERB
// resource" -> count of 2xx answers, "VERB resource CODE" for the others. Empty when the
// scrape failed.
inline std::map<std::string, double> apiRequestCounts(const std::string& hostPort) {
  std::map<std::string, double> out;
  std::istringstream in(scrapeMetrics(hostPort));
  std::string line;
  const std::string metric = "apiserver_request_total{";
  auto label = [](const std::string& l, const std::string& key) {
    size_t at = l.find(key + "=\"");
    if (at == std::string::npos) return std::string();
    at += key.size() + 2;
    return l.substr(at, l.find('"', at) - at);
  };
  while (std::getline(in, line)) {
    if (line.rfind(metric, 0) != 0) continue;
    size_t close = line.rfind('}');
    if (close == std::string::npos) continue;
    std::string labels = line.substr(0, close);
    const std::string code = label(labels, "code");
    out[label(labels, "verb") + " " + label(labels, "resource") +
        (code.empty() || code[0] == '2' ? "" : " " + code)] += std::stod(line.substr(close + 1));
  }
  return out;
}

}  // namespace strait::bench

#pragma once
// Helpers shared by the `strait demo` tests: the pids the demo reports starting, whether a
// pid is still alive, and the rows of its summary table. Test thread only.
#include <signal.h>
#include <sys/stat.h>

#include <regex>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "e2e/cluster_fixture.h"

namespace strait::e2e::demo {

// The pids printed as "started <label> (pid N)".
inline std::vector<pid_t> startedPids(const std::string& out) {
  std::vector<pid_t> pids;
  static const std::regex re(R"(started [a-z-]+ \(pid ([0-9]+)\))");
  for (auto it = std::sregex_iterator(out.begin(), out.end(), re); it != std::sregex_iterator();
       ++it) {
    pids.push_back(static_cast<pid_t>(std::stol((*it)[1].str())));
  }
  return pids;
}

inline bool alive(pid_t pid) {
  if (::kill(pid, 0) != 0) return false;
  // A zombie (exited, not yet reaped by init) counts as gone.
  std::string stat = readFile("/proc/" + std::to_string(pid) + "/stat");
  size_t paren = stat.rfind(')');
  return paren == std::string::npos || stat.size() < paren + 3 || stat[paren + 2] != 'Z';
}

inline void expectAllGone(const std::vector<pid_t>& pids) {
  for (pid_t pid : pids) {
    EXPECT_TRUE(waitFor([&] { return !alive(pid); }, 30s)) << "pid " << pid << " is still alive";
  }
}

inline bool exists(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0;
}

// Summary rows "  web-...  NODE  PHASE  IP  REMOTE": (node, remote) per pod.
inline std::vector<std::pair<std::string, std::string>> summaryRows(const std::string& out) {
  std::vector<std::pair<std::string, std::string>> rows;
  std::istringstream in(out);
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream words(line);
    std::string pod, node, phase, ip, remote;
    words >> pod >> node >> phase >> ip >> remote;
    if (pod.rfind("web-", 0) == 0 && !remote.empty()) rows.emplace_back(node, remote);
  }
  return rows;
}

inline std::vector<std::string> demoArgs(const std::string& dir) {
  return {straitBinary(), "demo", "--dir", dir, "--timeout", "4m"};
}

}  // namespace strait::e2e::demo

#pragma once
// The built-in commands a simulated container runs for `kubectl exec`: echo, printf-free
// basics (hostname, env/printenv, cat, true, false, exit N, pwd, ls of mounted files, sleep
// up to 10 s) and `sh -c SCRIPT` over them (;, &&, ||, |, quotes, $VAR, ${VAR}, $?).
// Pure functions; file contents come from a callback. Thread-safe.

#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace strait::minicluster {

struct ExecContext {
  std::string hostname;
  std::vector<std::pair<std::string, std::string>> env;  // in order, later wins
  // Contents of a file at an absolute path (mounted ConfigMap/Secret keys), or nullopt.
  std::function<std::optional<std::string>(const std::string& path)> readFile;
  // Names under a directory (for ls), or nullopt if it is not a known directory.
  std::function<std::optional<std::vector<std::string>>(const std::string& dir)> listDir;
};

struct ExecResult {
  std::string out, err;
  int exitCode = 0;
};

// Whether running argv would read standard input (cat without files, sh -c with such a cat).
bool commandReadsStdin(const std::vector<std::string>& argv);

// Runs argv with `stdinData` as standard input. Unknown commands exit 127 with a message on
// stderr; a malformed script exits 2. Never throws.
ExecResult runCommand(const std::vector<std::string>& argv, const ExecContext& ctx,
                      const std::string& stdinData);

}  // namespace strait::minicluster

#pragma once
// Container log files of the process runtime with a time per line (private to
// minicluster/): a container writes into a pipe; a copier thread appends what it reads to
// the log file unchanged and, for each line that starts, "<offset> <RFC 3339 time>\n" to an
// index file beside it (written before the line itself, so the index never lags the log).
// The kubelet API reads both for `kubectl logs --timestamps`, `--since` and `--since-time`.

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace strait::minicluster {

// Starts a copier from a new pipe to `logFd` (duplicated; the caller keeps its own) and
// `indexPath`. Returns the pipe's write end for the container's stdout and stderr (close it
// once the child has it), or -1 when the pipe or the thread cannot be made (write to logFd
// directly then). The thread ends when every writer has closed the pipe.
int startTimestampedLog(int logFd, const std::string& indexPath);

// One line of a log: its text (with its newline, if it has one) and when it was written
// (nullopt when the index does not cover it).
struct LogLine {
  std::string text;
  std::optional<std::chrono::system_clock::time_point> time;
};

// Splits `body` (the log from byte `offset` on) into lines timed by the index file's
// `index` text.
std::vector<LogLine> timedLines(const std::string& body, uint64_t offset, const std::string& index);

// RFC 3339 with nanoseconds in UTC, as the kubelet prefixes lines: 2024-01-02T03:04:05.123456789Z.
std::string rfc3339Nano(std::chrono::system_clock::time_point t);

// Parses "2024-01-02T03:04:05Z" (fraction and numeric offset allowed); nullopt if malformed.
std::optional<std::chrono::system_clock::time_point> parseRfc3339(const std::string& s);

}  // namespace strait::minicluster

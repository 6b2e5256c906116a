// Timestamped container logs (see runtime_process_logs.h).
#include "minicluster/runtime_process_logs.h"

#include <fcntl.h>
#include <unistd.h>

#include <cstdio>
#include <ctime>
#include <map>
#include <sstream>
#include <thread>

namespace strait::minicluster {
namespace {

using SysClock = std::chrono::system_clock;

bool writeAll(int fd, const char* p, size_t n) {
  while (n > 0) {
    ssize_t w = ::write(fd, p, n);
    if (w <= 0) return false;
    p += w;
    n -= static_cast<size_t>(w);
  }
  return true;
}

void copy(int in, int log, int index) {
  // The log is opened O_APPEND by the runtime; its size is where our bytes land.
  off_t offset = ::lseek(log, 0, SEEK_END);
  if (offset < 0) offset = 0;
  bool lineStart = true;
  char buf[16384];
  for (;;) {
    ssize_t n = ::read(in, buf, sizeof(buf));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    std::string stamp = rfc3339Nano(SysClock::now());
    std::string entries;
    for (ssize_t i = 0; i < n; ++i) {
      if (lineStart) entries += std::to_string(offset + i) + " " + stamp + "\n";
      lineStart = buf[i] == '\n';
    }
    if (index >= 0 && !entries.empty()) writeAll(index, entries.data(), entries.size());
    if (!writeAll(log, buf, static_cast<size_t>(n))) break;
    offset += n;
  }
  ::close(in);
  ::close(log);
  if (index >= 0) ::close(index);
}

}  // namespace

std::string rfc3339Nano(SysClock::time_point t) {
  auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch()).count();
  std::time_t secs = static_cast<std::time_t>(ns / 1000000000);
  std::tm tm{};
  gmtime_r(&secs, &tm);
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%04d-%02d-%02dT%02d:%02d:%02d.%09lldZ", tm.tm_year + 1900,
                tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
                static_cast<long long>(ns % 1000000000));
  return buf;
}

std::optional<SysClock::time_point> parseRfc3339(const std::string& s) {
  int y, mo, d, h, mi, sec;
  int used = 0;
  if (std::sscanf(s.c_str(), "%4d-%2d-%2dT%2d:%2d:%2d%n", &y, &mo, &d, &h, &mi, &sec, &used) != 6) {
    return std::nullopt;
  }
  size_t i = static_cast<size_t>(used);
  int64_t nanos = 0;
  if (i < s.size() && s[i] == '.') {
    int64_t scale = 100000000;
    for (++i; i < s.size() && std::isdigit(static_cast<unsigned char>(s[i])); ++i) {
      nanos += (s[i] - '0') * scale;
      scale /= 10;
    }
  }
  int64_t offsetSecs = 0;
  if (i < s.size() && (s[i] == '+' || s[i] == '-')) {
    int oh = 0, om = 0;
    if (std::sscanf(s.c_str() + i + 1, "%2d:%2d", &oh, &om) != 2) return std::nullopt;
    offsetSecs = (s[i] == '+' ? 1 : -1) * (oh * 3600 + om * 60);
  } else if (i >= s.size() || (s[i] != 'Z' && s[i] != 'z')) {
    return std::nullopt;
  }
  std::tm tm{};
  tm.tm_year = y - 1900;
  tm.tm_mon = mo - 1;
  tm.tm_mday = d;
  tm.tm_hour = h;
  tm.tm_min = mi;
  tm.tm_sec = sec;
  std::time_t t = timegm(&tm);
  // system_clock counts nanoseconds in 64 bits: past 2262 it saturates instead of wrapping.
  if (t - offsetSecs > int64_t{9000000000}) return SysClock::time_point::max();
  return SysClock::time_point(std::chrono::seconds(t - offsetSecs)) +
         std::chrono::duration_cast<SysClock::duration>(std::chrono::nanoseconds(nanos));
}

int startTimestampedLog(int logFd, const std::string& indexPath) {
  if (logFd < 0) return -1;
  int p[2];
  if (::pipe2(p, O_CLOEXEC) != 0) return -1;
  int log = ::fcntl(logFd, F_DUPFD_CLOEXEC, 0);
  int index = ::open(indexPath.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0640);
  if (log < 0) {
    ::close(p[0]);
    ::close(p[1]);
    if (index >= 0) ::close(index);
    return -1;
  }
  try {
    std::thread(copy, p[0], log, index).detach();
  } catch (...) {
    ::close(p[0]);
    ::close(p[1]);
    ::close(log);
    if (index >= 0) ::close(index);
    return -1;
  }
  return p[1];
}

std::vector<LogLine> timedLines(const std::string& body, uint64_t offset, const std::string& index) {
  std::map<uint64_t, SysClock::time_point> starts;
  std::istringstream in(index);
  for (std::string line; std::getline(in, line);) {
    auto sp = line.find(' ');
    if (sp == std::string::npos) continue;
    uint64_t off = 0;
    try {
      off = std::stoull(line.substr(0, sp));
    } catch (...) {
      continue;
    }
    if (auto t = parseRfc3339(line.substr(sp + 1))) starts[off] = *t;
  }
  std::vector<LogLine> out;
  size_t pos = 0;
  while (pos < body.size()) {
    size_t nl = body.find('\n', pos);
    size_t end = nl == std::string::npos ? body.size() : nl + 1;
    LogLine l;
    l.text = body.substr(pos, end - pos);
    // The entry at or before this line's start (a line may be read in pieces).
    auto it = starts.upper_bound(offset + pos);
    if (it != starts.begin()) l.time = std::prev(it)->second;
    out.push_back(std::move(l));
    pos = end;
  }
  return out;
}

}  // namespace strait::minicluster

// Timestamped container logs of the process runtime: the copier's index, lines timed by it,
// and the RFC 3339 times of `kubectl logs --timestamps` and `--since-time`.
#include <fcntl.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "minicluster/runtime_process_logs.h"

namespace strait::minicluster {
namespace {

using namespace std::chrono_literals;
using SysClock = std::chrono::system_clock;

std::string slurp(const std::string& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

TEST(ProcessLogsTest, Rfc3339RoundTripsWithNanoseconds) {
  auto t = parseRfc3339("2024-01-02T03:04:05.123456789Z");
  ASSERT_TRUE(t);
  EXPECT_EQ(rfc3339Nano(*t), "2024-01-02T03:04:05.123456789Z");
  EXPECT_EQ(rfc3339Nano(*parseRfc3339("2024-01-02T05:04:05+02:00")), "2024-01-02T03:04:05.000000000Z");
  EXPECT_FALSE(parseRfc3339("yesterday"));
  EXPECT_FALSE(parseRfc3339("2024-01-02T03:04:05"));
  EXPECT_EQ(*parseRfc3339("2999-01-01T00:00:00Z"), SysClock::time_point::max());
}

TEST(ProcessLogsTest, CopierTimesEachLineAndKeepsTheLogUnchanged) {
  char tmpl[] = "/tmp/strait-logs-XXXXXX";
  std::string dir = ::mkdtemp(tmpl);
  std::string log = dir + "/0.log";
  int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0640);
  ASSERT_GE(fd, 0);
  auto before = SysClock::now();
  int w = startTimestampedLog(fd, log + ".times");
  ASSERT_GE(w, 0);
  ::close(fd);
  ASSERT_EQ(::write(w, "one\ntw", 6), 6);
  std::this_thread::sleep_for(20ms);
  ASSERT_EQ(::write(w, "o\nthree\n", 8), 8);
  ::close(w);
  std::string body;
  for (int i = 0; i < 100 && (body = slurp(log)).size() < 14; ++i) std::this_thread::sleep_for(10ms);
  EXPECT_EQ(body, "one\ntwo\nthree\n");
  auto lines = timedLines(body, 0, slurp(log + ".times"));
  ASSERT_EQ(lines.size(), 3u);
  EXPECT_EQ(lines[1].text, "two\n");
  for (const auto& l : lines) {
    ASSERT_TRUE(l.time);
    EXPECT_GE(*l.time, before);
  }
  EXPECT_LT(*lines[1].time, *lines[2].time);  // "two" began before the pause
  // A piece read from the middle of the log keeps the times of its lines.
  auto tail = timedLines(body.substr(4), 4, slurp(log + ".times"));
  ASSERT_EQ(tail.size(), 2u);
  EXPECT_EQ(tail[0].time, lines[1].time);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace strait::minicluster

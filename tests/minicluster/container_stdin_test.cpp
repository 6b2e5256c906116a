// A container's stdin pipe and terminal (minicluster/container_stdin.h) alone, with the test
// in the container's place: what attach writes arrives on the child's end, stdinOnce closes
// the input when the session ends (the child reads end of file) and only then, and what the
// container writes on its terminal is copied into its log.
#include "minicluster/container_stdin.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <string>
#include <thread>

namespace strait::minicluster {
namespace {

using namespace std::chrono_literals;

// Reads what is available on `fd` within `timeout`; "" on end of file or nothing.
std::string readSome(int fd, std::chrono::milliseconds timeout = 2s) {
  pollfd p{fd, POLLIN, 0};
  if (::poll(&p, 1, static_cast<int>(timeout.count())) <= 0) return "";
  char buf[256];
  ssize_t n = ::read(fd, buf, sizeof(buf));
  return n > 0 ? std::string(buf, static_cast<size_t>(n)) : "";
}

TEST(ContainerStdinTest, AttachInputReachesTheChildAndStdinOnceClosesItAfterTheSession) {
  auto in = ContainerStdin::open(/*stdin=*/true, /*stdinOnce=*/true, /*tty=*/false, -1);
  ASSERT_TRUE(in.ok()) << in.error().message;
  std::shared_ptr<ContainerStdin> s = *in;
  EXPECT_TRUE(s->acceptsInput());
  EXPECT_FALSE(s->tty());
  EXPECT_EQ(s->ttyPath(), "");
  // The test plays the container: its own copy of the read end.
  int child = ::dup(s->childFd());
  ASSERT_GE(child, 0);
  s->releaseChildEnd();
  EXPECT_EQ(s->childFd(), -1);

  ASSERT_TRUE(s->write("hello\n"));
  EXPECT_EQ(readSome(child), "hello\n");
  // No session ended yet: the input stays open (a read would block, not see end of file).
  pollfd p{child, POLLIN, 0};
  EXPECT_EQ(::poll(&p, 1, 100), 0);

  s->sessionEnded();
  EXPECT_FALSE(s->write("late\n"));
  ASSERT_EQ(::poll(&p, 1, 2000), 1);
  char c;
  EXPECT_EQ(::read(child, &c, 1), 0);  // end of file
  ::close(child);
}

TEST(ContainerStdinTest, WithoutStdinOnceTheInputOutlivesSessions) {
  auto in = ContainerStdin::open(true, false, false, -1);
  ASSERT_TRUE(in.ok());
  std::shared_ptr<ContainerStdin> s = *in;
  int child = ::dup(s->childFd());
  s->releaseChildEnd();
  s->sessionEnded();
  ASSERT_TRUE(s->write("second session\n"));
  EXPECT_EQ(readSome(child), "second session\n");
  ::close(child);
}

TEST(ContainerStdinTest, ATerminalsOutputIsCopiedToTheLogAndInputReachesIt) {
  char path[] = "/tmp/strait-stdin-test-XXXXXX";
  int log = ::mkstemp(path);
  ASSERT_GE(log, 0);
  auto in = ContainerStdin::open(true, false, true, log);
  ASSERT_TRUE(in.ok()) << in.error().message;
  std::shared_ptr<ContainerStdin> s = *in;
  EXPECT_TRUE(s->tty());
  EXPECT_EQ(s->childFd(), -1);
  ASSERT_EQ(s->ttyPath().rfind("/dev/pts/", 0), 0u) << s->ttyPath();
  int term = ::open(s->ttyPath().c_str(), O_RDWR | O_NOCTTY);
  ASSERT_GE(term, 0);

  ASSERT_EQ(::write(term, "from the container\n", 19), 19);
  std::string logged;
  for (int i = 0; i < 40 && logged.find("from the container") == std::string::npos; ++i) {
    std::this_thread::sleep_for(50ms);
    char buf[256];
    ssize_t n = ::pread(log, buf, sizeof(buf), 0);
    logged = n > 0 ? std::string(buf, static_cast<size_t>(n)) : "";
  }
  EXPECT_NE(logged.find("from the container"), std::string::npos) << logged;

  ASSERT_TRUE(s->write("typed\n"));
  EXPECT_NE(readSome(term).find("typed"), std::string::npos);
  ::close(term);
  s.reset();  // stops the copy thread
  ::close(log);
  ::unlink(path);
}

}  // namespace
}  // namespace strait::minicluster

#include "cmd/demo_processes.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <deque>
#include <fstream>
#include <thread>

namespace strait::cmd {

namespace {

int decodeStatus(int status) {
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return -1;
}

}  // namespace

std::string ChildProcess::start() {
  if (pid_ > 0) return label_ + ": already started";
  int fd = ::open(logPath_.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
  if (fd < 0) return label_ + ": cannot open " + logPath_ + ": " + std::strerror(errno);
  std::vector<char*> args;
  for (std::string& a : argv_) args.push_back(a.data());
  args.push_back(nullptr);
  pid_t parent = ::getpid();
  pid_t pid = ::fork();
  if (pid < 0) {
    int e = errno;
    ::close(fd);
    return label_ + ": fork failed: " + std::strerror(e);
  }
  if (pid == 0) {
    // Child: own process group (the terminal's Ctrl-C goes to the demo only), die with the
    // demo, output to the log file, stdin from /dev/null.
    ::setpgid(0, 0);
    ::prctl(PR_SET_PDEATHSIG, SIGTERM);
    if (::getppid() != parent) ::_exit(127);
    int devnull = ::open("/dev/null", O_RDONLY);
    if (devnull >= 0) ::dup2(devnull, 0);
    ::dup2(fd, 1);
    ::dup2(fd, 2);
    sigset_t none;
    sigemptyset(&none);
    ::sigprocmask(SIG_SETMASK, &none, nullptr);
    ::signal(SIGINT, SIG_DFL);
    ::signal(SIGTERM, SIG_DFL);
    ::signal(SIGPIPE, SIG_DFL);
    ::execv(args[0], args.data());
    std::string msg = "exec " + argv_[0] + ": " + std::strerror(errno) + "\n";
    (void)!::write(2, msg.data(), msg.size());
    ::_exit(127);
  }
  ::setpgid(pid, pid);  // also from the parent, so the group exists before we signal it
  ::close(fd);
  pid_ = pid;
  return {};
}

bool ChildProcess::running() {
  if (pid_ <= 0 || exitCode_ >= 0) return false;
  int status = 0;
  pid_t r = ::waitpid(pid_, &status, WNOHANG);
  if (r == 0) return true;
  exitCode_ = r == pid_ ? decodeStatus(status) : 127;
  return false;
}

void ChildProcess::stop(std::chrono::milliseconds grace) {
  if (!running()) return;
  ::kill(pid_, SIGTERM);
  auto deadline = std::chrono::steady_clock::now() + grace;
  while (running() && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  if (running()) {
    ::kill(pid_, SIGKILL);
    int status = 0;
    if (::waitpid(pid_, &status, 0) == pid_) exitCode_ = decodeStatus(status);
  }
}

std::string ChildProcess::logTail(size_t maxLines) const {
  std::ifstream in(logPath_);
  std::deque<std::string> lines;
  std::string line;
  while (std::getline(in, line)) {
    lines.push_back(line);
    if (lines.size() > maxLines) lines.pop_front();
  }
  std::string out;
  for (const std::string& l : lines) out += "    " + l + "\n";
  return out;
}

bool pollUntil(const std::function<bool()>& ready, std::chrono::milliseconds deadline,
               const std::atomic<bool>& abort) {
  auto end = std::chrono::steady_clock::now() + deadline;
  while (!abort) {
    if (ready()) return true;
    if (std::chrono::steady_clock::now() >= end) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return false;
}

int runToCompletion(ChildProcess& child, std::chrono::milliseconds deadline,
                    const std::atomic<bool>& abort) {
  bool ended = pollUntil([&] { return !child.running(); }, deadline, abort);
  if (!ended) {
    child.stop(std::chrono::seconds(2));
    return -1;
  }
  return child.exitCode();
}

std::string selfExecutable() {
  char buf[4096];
  ssize_t n = ::readlink("/proc/self/exe", buf, sizeof(buf) - 1);
  if (n <= 0) return {};
  return std::string(buf, static_cast<size_t>(n));
}

}  // namespace strait::cmd

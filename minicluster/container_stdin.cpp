// A container's stdin pipe or terminal (see container_stdin.h).
#include "minicluster/container_stdin.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/ioctl.h>
#include <termios.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>

namespace strait::minicluster {

kube::Result<std::shared_ptr<ContainerStdin>> ContainerStdin::open(bool stdin, bool stdinOnce,
                                                                   bool tty, int logFd) {
  std::shared_ptr<ContainerStdin> in(new ContainerStdin(stdin, stdinOnce, tty));
  if (tty) {
    int master = ::posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);
    if (master < 0 || ::grantpt(master) != 0 || ::unlockpt(master) != 0) {
      int e = errno;
      if (master >= 0) ::close(master);
      return kube::makeError(kube::Code::Unavailable,
                             std::string("cannot allocate the container's terminal: ") +
                                 std::strerror(e));
    }
    in->ttyPath_ = ::ptsname(master);
    {
      base::MutexLock l(in->mu_);
      in->inputFd_ = master;
    }
    in->logFd_ = logFd >= 0 ? ::fcntl(logFd, F_DUPFD_CLOEXEC, 0) : -1;
    in->copier_ = std::thread([raw = in.get()] { raw->copyTerminalOutput(); });
    return in;
  }
  int p[2];
  if (::pipe2(p, O_CLOEXEC) != 0) {
    return kube::makeError(kube::Code::Unavailable,
                           std::string("cannot make the container's stdin pipe: ") +
                               std::strerror(errno));
  }
  in->childFd_ = p[0];
  base::MutexLock l(in->mu_);
  in->inputFd_ = p[1];
  return in;
}

ContainerStdin::~ContainerStdin() {
  stopping_ = true;
  if (copier_.joinable()) copier_.join();
  releaseChildEnd();
  base::MutexLock l(mu_);
  if (inputFd_ >= 0) ::close(inputFd_);
  inputFd_ = -1;
  if (logFd_ >= 0) ::close(logFd_);
}

void ContainerStdin::releaseChildEnd() {
  if (childFd_ >= 0) ::close(childFd_);
  childFd_ = -1;
}

// The terminal's output into the log, until destroyed. EIO means no process has the terminal
// open (not yet, or no more): wait and look again.
void ContainerStdin::copyTerminalOutput() {
  int master;
  {
    base::MutexLock l(mu_);
    master = inputFd_;
  }
  char buf[16384];
  while (!stopping_) {
    pollfd pfd{master, POLLIN, 0};
    int n = ::poll(&pfd, 1, 200);
    if (n <= 0) continue;
    ssize_t r = ::read(master, buf, sizeof(buf));
    if (r > 0) {
      if (logFd_ >= 0) (void)!::write(logFd_, buf, static_cast<size_t>(r));
      continue;
    }
    if (r < 0 && errno == EINTR) continue;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
}

bool ContainerStdin::write(std::string_view data) {
  base::MutexLock l(mu_);
  if (!stdin_ || closed_ || inputFd_ < 0) return false;
  size_t off = 0;
  while (off < data.size()) {
    ssize_t n = ::write(inputFd_, data.data() + off, data.size() - off);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    off += static_cast<size_t>(n);
  }
  return true;
}

void ContainerStdin::sessionEnded() {
  if (!once_) return;
  base::MutexLock l(mu_);
  if (closed_) return;
  closed_ = true;
  if (tty_) {
    if (inputFd_ >= 0) (void)!::write(inputFd_, "\x04", 1);  // end of input on a terminal
    return;  // the terminal itself stays: the container still writes to it
  }
  if (inputFd_ >= 0) ::close(inputFd_);
  inputFd_ = -1;
}

void ContainerStdin::resize(unsigned width, unsigned height) {
  if (!tty_) return;
  base::MutexLock l(mu_);
  if (inputFd_ < 0) return;
  winsize w{};
  w.ws_col = static_cast<unsigned short>(width);
  w.ws_row = static_cast<unsigned short>(height);
  ::ioctl(inputFd_, TIOCSWINSZ, &w);
}

}  // namespace strait::minicluster

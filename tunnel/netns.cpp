#include "tunnel/netns.h"

#include <fcntl.h>
#include <sched.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <thread>

namespace strait::tunnel {

base::Status runInNetns(const std::string& netnsPath, const std::function<base::Status()>& fn) {
  if (netnsPath.empty()) return fn();
  base::Status result = base::Status::OK();
  std::thread t([&] {
    int fd = ::open(netnsPath.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
      result = base::makeError(base::Code::Unavailable,
                               "network namespace " + netnsPath + ": " + std::strerror(errno));
      return;
    }
    int rc = ::setns(fd, CLONE_NEWNET);
    int err = errno;
    ::close(fd);
    if (rc != 0) {
      result = base::makeError(base::Code::Unavailable,
                               "enter network namespace " + netnsPath + ": " + std::strerror(err));
      return;
    }
    result = fn();
  });
  t.join();
  return result;
}

}  // namespace strait::tunnel

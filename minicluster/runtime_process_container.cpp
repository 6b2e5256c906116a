// Starting container and exec processes inside a Pod's namespaces, and what a container runs.
// Between fork() and exec() the child calls only async-signal-safe functions: everything it
// needs (argv, envp, descriptors) is prepared before the fork.
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "minicluster/runtime_process.h"
#include "minicluster/runtime_process_launch.h"

namespace strait::minicluster {
namespace {

using kube::Code;
using kube::makeError;
using nlohmann::json;

void writeAll(int fd, const char* a, const char* b = "", const char* c = "") {
  for (const char* s : {a, b, c}) (void)!::write(fd, s, std::strlen(s));
}

// True for registry.k8s.io/e2e-test-images/agnhost:TAG (and its mirrors: any registry,
// any path ending in /agnhost).
bool isAgnhost(const std::string& image) {
  std::string repo = image.substr(0, image.find('@'));
  auto slash = repo.rfind('/');
  auto colon = repo.find(':', slash == std::string::npos ? 0 : slash);
  if (colon != std::string::npos) repo = repo.substr(0, colon);
  std::string last = slash == std::string::npos ? repo : repo.substr(slash + 1);
  return last == "agnhost";
}

std::vector<std::string> strings(const json& c, const char* field) {
  std::vector<std::string> out;
  if (c.contains(field) && c[field].is_array()) {
    for (const auto& s : c[field]) {
      if (s.is_string()) out.push_back(s.get<std::string>());
    }
  }
  return out;
}

}  // namespace

int exitCodeOf(int waitStatus) {
  if (WIFEXITED(waitStatus)) return WEXITSTATUS(waitStatus);
  if (WIFSIGNALED(waitStatus)) return 128 + WTERMSIG(waitStatus);
  return -1;
}

namespace {

// "repo:tag@digest" -> "repo" (a ':' after the last '/' starts the tag).
std::string repositoryOf(const std::string& image) {
  std::string repo = image.substr(0, image.find('@'));
  auto slash = repo.rfind('/');
  auto colon = repo.find(':', slash == std::string::npos ? 0 : slash);
  return colon == std::string::npos ? repo : repo.substr(0, colon);
}

}  // namespace

std::string localImageBinary(const std::string& image,
                             const std::map<std::string, std::string>& localImages) {
  if (image.empty() || localImages.empty()) return "";
  if (auto it = localImages.find(image); it != localImages.end()) return it->second;
  if (auto it = localImages.find(repositoryOf(image)); it != localImages.end()) return it->second;
  return "";
}

kube::Result<std::pair<std::string, std::string>> parseLocalImage(const std::string& text) {
  auto eq = text.find('=');
  if (eq == std::string::npos) {
    return makeError(Code::Invalid, "--local-image " + text + ": expected REPO[:TAG]=/path/to/binary");
  }
  std::string image = text.substr(0, eq), binary = text.substr(eq + 1);
  if (image.empty() || image.find_first_of(" \t=") != std::string::npos) {
    return makeError(Code::Invalid, "--local-image " + text + ": the image reference is empty or has blanks");
  }
  if (binary.empty() || binary.front() != '/') {
    return makeError(Code::Invalid, "--local-image " + text + ": the binary must be an absolute path");
  }
  struct stat st {};
  if (::stat(binary.c_str(), &st) != 0 || !S_ISREG(st.st_mode) || ::access(binary.c_str(), X_OK) != 0) {
    return makeError(Code::Invalid, "--local-image " + text + ": " + binary + " is not an executable file");
  }
  return std::make_pair(image, binary);
}

std::vector<std::string> containerArgv(const json& container, const std::string& straitBinary,
                                       const std::map<std::string, std::string>& localImages) {
  std::vector<std::string> command = strings(container, "command");
  std::vector<std::string> args = strings(container, "args");
  if (std::string binary = localImageBinary(container.value("image", ""), localImages);
      !binary.empty()) {
    std::vector<std::string> argv = {binary};
    if (!command.empty()) argv.insert(argv.end(), command.begin() + 1, command.end());
    argv.insert(argv.end(), args.begin(), args.end());
    return argv;
  }
  if (!command.empty()) {
    command.insert(command.end(), args.begin(), args.end());
    return command;
  }
  std::vector<std::string> argv = {straitBinary, "agnhost"};
  if (isAgnhost(container.value("image", ""))) {
    argv.insert(argv.end(), args.begin(), args.end());
    return argv;
  }
  int port = 80;
  if (container.contains("ports") && container["ports"].is_array() &&
      !container["ports"].empty() && container["ports"][0].is_object()) {
    port = container["ports"][0].value("containerPort", 80);
  }
  argv.push_back("netexec");
  argv.push_back("--http-port=" + std::to_string(port));
  return argv;
}

namespace {

// Runs `child` in a new process that shares this one's memory and blocks the calling thread
// until it has exec'd or exited (clone(CLONE_VM | CLONE_VFORK)); it has its own stack, file
// descriptor table, signal dispositions, file system context and namespaces. Returns its
// pid, or -1 with errno set.
template <typename F>
pid_t spawnSharingMemory(F& child) {
  constexpr size_t kStack = 256 * 1024;
  void* stack = ::mmap(nullptr, kStack, PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
  if (stack == MAP_FAILED) return -1;
  auto trampoline = [](void* arg) -> int { return (*static_cast<F*>(arg))(); };
  pid_t pid = ::clone(trampoline, static_cast<char*>(stack) + kStack,
                      CLONE_VM | CLONE_VFORK | SIGCHLD, &child);
  int e = errno;
  ::munmap(stack, kStack);
  errno = e;
  return pid;
}

}  // namespace

kube::Result<pid_t> launchInSandbox(const LaunchSpec& spec) {
  if (spec.argv.empty()) return makeError(Code::Invalid, "empty command");
  int netfd = -1;
  if (!spec.netnsPath.empty()) {
    netfd = ::open(spec.netnsPath.c_str(), O_RDONLY | O_CLOEXEC);
    if (netfd < 0) {
      return makeError(Code::Unavailable, "cannot open network namespace " + spec.netnsPath +
                                              ": " + std::strerror(errno));
    }
  }
  std::vector<char*> argv;
  for (const auto& a : spec.argv) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  std::vector<std::string> envStrings;
  for (const auto& [k, v] : spec.env) envStrings.push_back(k + "=" + v);
  std::vector<char*> envp;
  for (auto& e : envStrings) envp.push_back(e.data());
  envp.push_back(nullptr);
  const char* wd = spec.workingDir.empty() ? "/" : spec.workingDir.c_str();
  std::vector<std::pair<const char*, const char*>> binds;
  for (const auto& [src, dst] : spec.bindFiles) binds.emplace_back(src.c_str(), dst.c_str());
  struct Mount {
    const char *src, *dst;
    bool readOnly;
  };
  std::vector<Mount> mounts;
  for (const auto& m : spec.mounts) mounts.push_back({m.source.c_str(), m.target.c_str(), m.readOnly});
  std::vector<const char*> cgroups;
  for (const auto& f : spec.cgroupProcs) cgroups.push_back(f.c_str());
  pid_t parent = ::getpid();
  // The child shares the caller's memory until it execs (clone with CLONE_VM|CLONE_VFORK,
  // as posix_spawn does): a fork of the large, multi-threaded minicluster copied its page
  // tables and then paid copy-on-write faults and TLB shootdowns, the bulk of a Pod's start.
  // So the child below allocates nothing and only makes system calls on what was prepared
  // above; the calling thread is suspended until the child execs or exits.
  auto child = [&]() -> int {
    ::setsid();
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != parent) ::_exit(127);
    for (const char* f : cgroups) {
      int cg = ::open(f, O_WRONLY | O_CLOEXEC);
      if (cg < 0 || ::write(cg, "0", 1) != 1) {
        int e = errno;
        writeAll(spec.stderrFd >= 0 ? spec.stderrFd : 2, "cannot join cgroup ", f, ": ");
        writeAll(spec.stderrFd >= 0 ? spec.stderrFd : 2, std::strerror(e), "\n");
        ::_exit(127);
      }
      ::close(cg);
    }
    int in = spec.stdinFd, out = spec.stdoutFd, err = spec.stderrFd;
    if (!spec.ttyPath.empty()) {
      int tty = ::open(spec.ttyPath.c_str(), O_RDWR);
      if (tty >= 0) {
        ::ioctl(tty, TIOCSCTTY, 0);
        in = out = err = tty;
      }
    }
    int devnull = ::open("/dev/null", O_RDWR);
    ::dup2(in >= 0 ? in : devnull, 0);
    ::dup2(out >= 0 ? out : devnull, 1);
    ::dup2(err >= 0 ? err : devnull, 2);
    sigset_t none;
    sigemptyset(&none);
    ::sigprocmask(SIG_SETMASK, &none, nullptr);
    for (int s : {SIGPIPE, SIGINT, SIGTERM, SIGHUP, SIGCHLD}) ::signal(s, SIG_DFL);
    if (netfd >= 0 && ::setns(netfd, CLONE_NEWNET) != 0) {
      writeAll(2, "cannot enter the pod's network namespace: ", std::strerror(errno), "\n");
      ::_exit(127);
    }
    if (!spec.hostname.empty()) {
      if (::unshare(CLONE_NEWUTS) != 0 ||
          ::sethostname(spec.hostname.c_str(), spec.hostname.size()) != 0) {
        writeAll(2, "cannot set the pod's hostname: ", std::strerror(errno), "\n");
        ::_exit(127);
      }
    }
    // O_PATH: execveat() below needs no read permission, and the descriptor closes on exec.
    int exeFd = spec.hostExecutable ? ::open(argv[0], O_PATH | O_CLOEXEC) : -1;
    if (!binds.empty() || !mounts.empty()) {
      if (::unshare(CLONE_NEWNS) != 0 ||
          ::mount(nullptr, "/", nullptr, MS_REC | MS_SLAVE, nullptr) != 0) {
        writeAll(2, "cannot make the pod's mount namespace: ", std::strerror(errno), "\n");
        ::_exit(127);
      }
      for (const auto& [src, dst] : binds) {
        if (::mount(src, dst, nullptr, MS_BIND, nullptr) != 0) {
          writeAll(2, "cannot mount ", dst, ": ");
          writeAll(2, std::strerror(errno), "\n");
        }
      }
      for (const auto& m : mounts) {
        if (::mount(m.src, m.dst, nullptr, MS_BIND | MS_REC, nullptr) != 0 ||
            (m.readOnly &&
             ::mount(nullptr, m.dst, nullptr, MS_BIND | MS_REMOUNT | MS_RDONLY, nullptr) != 0)) {
          writeAll(2, "cannot mount volume at ", m.dst, ": ");
          writeAll(2, std::strerror(errno), "\n");
          ::_exit(127);
        }
      }
    }
    if (::chdir(wd) != 0) {
      writeAll(2, "cannot enter workingDir ", wd, "\n");
      ::_exit(127);
    }
    if (exeFd >= 0) {
      ::syscall(SYS_execveat, exeFd, "", argv.data(), envp.data(), AT_EMPTY_PATH);
    } else {
      ::execvpe(argv[0], argv.data(), envp.data());
    }
    writeAll(2, "exec ", argv[0], ": ");
    writeAll(2, std::strerror(errno), "\n");
    ::_exit(127);
  };
  pid_t pid = spawnSharingMemory(child);
  int e = errno;
  if (netfd >= 0) ::close(netfd);
  if (pid < 0) return makeError(Code::Unavailable, std::string("clone: ") + std::strerror(e));
  return pid;
}

}  // namespace strait::minicluster

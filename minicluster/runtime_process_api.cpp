// The kubelet API's logs and exec for Pods of the process runtime: log files written by the
// containers themselves, and commands run inside the Pod's namespaces.
//
// Exec: the WebSocket stream protocol (channel bytes 0 stdin, 1 stdout, 2 stderr, 3 status,
// 4 resize, 255 close). A reader thread forwards the client's stdin (and terminal resizes)
// to the process; the handler's thread forwards the process's output until it closes, then
// reaps the process and sends the status. A client that goes away kills the process group.
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spdlog/spdlog.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <optional>
#include <cerrno>
#include <fstream>
#include <mutex>
#include <sstream>
#include <thread>

#include "minicluster/kubelet_exec.h"
#include "minicluster/runtime_process.h"
#include "minicluster/runtime_process_launch.h"
#include "minicluster/runtime_process_logs.h"

namespace strait::minicluster {
namespace {

using kube::HttpRequest;
using kube::HttpResponse;
using kube::Responder;
using nlohmann::json;

constexpr char kStdin = 0, kStdout = 1, kStderr = 2, kStatus = 3, kResize = 4,
               kClose = static_cast<char>(255);

void text(Responder& out, int code, const std::string& body) {
  HttpResponse r;
  r.status = code;
  r.headers["Content-Type"] = "text/plain; charset=utf-8";
  r.body = body + (body.empty() || body.back() == '\n' ? "" : "\n");
  out.respond(std::move(r));
}

std::string readFrom(const std::string& path, uint64_t offset) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return {};
  in.seekg(static_cast<std::streamoff>(offset));
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string lastLines(const std::string& body, int64_t n) {
  if (n < 0) return body;
  size_t end = body.size();
  if (end > 0 && body[end - 1] == '\n') --end;
  size_t pos = end;
  for (int64_t k = 0; k < n; ++k) {
    auto nl = pos == 0 ? std::string::npos : body.rfind('\n', pos - 1);
    if (nl == std::string::npos) return n == 0 ? std::string() : body;
    pos = nl;
  }
  return n == 0 ? std::string() : body.substr(pos + 1);
}

// What the kubelet's LogOptions ask of each line: a time prefix, and only lines written at or
// after `since`.
struct LineOptions {
  bool timestamps = false;
  std::optional<std::chrono::system_clock::time_point> since;
  bool any() const { return timestamps || since.has_value(); }
};

// `body` (the log from byte `offset` on) with the time prefixes and the since filter.
std::string applyLineOptions(const std::string& body, uint64_t offset, const std::string& logPath,
                             const LineOptions& o) {
  if (!o.any()) return body;
  std::string out;
  for (const auto& l : timedLines(body, offset, readFrom(logPath + ".times", 0))) {
    if (o.since && (!l.time || *l.time < *o.since)) continue;
    if (o.timestamps) out += (l.time ? rfc3339Nano(*l.time) : rfc3339Nano({})) + " ";
    out += l.text;
  }
  return out;
}

const ContainerRuntime* findContainer(const PodRuntime& p, const std::string& name) {
  for (const auto& c : p.containers) {
    if (c.name == name) return &c;
  }
  return nullptr;
}

// The metav1.Status an exec ends with (as a kubelet sends it on channel 3).
std::string execStatus(int exitCode, const std::vector<std::string>& argv) {
  json s = {{"metadata", json::object()}};
  if (exitCode == 0) {
    s["status"] = "Success";
    return s.dump();
  }
  std::string cmd;
  for (const auto& a : argv) cmd += (cmd.empty() ? "" : " ") + a;
  s["status"] = "Failure";
  s["message"] = "command terminated with non-zero exit code: error executing command [" + cmd +
                 "], exit code " + std::to_string(exitCode);
  s["reason"] = "NonZeroExitCode";
  s["details"] = {
      {"causes", json::array({{{"reason", "ExitCode"}, {"message", std::to_string(exitCode)}}})}};
  return s.dump();
}

}  // namespace

void serveProcessLogs(const HttpRequest& req, Responder& out, const PodRuntime& pod,
                      const std::string& container, SimulatedKubelets& kubelets,
                      const ContainerProcesses& processes) {
  const bool follow = kubeletQueryFlag(req, "follow");
  const bool previous = kubeletQueryFlag(req, "previous");
  std::optional<int64_t> tail, limit;
  try {
    if (req.hasQuery("tailLines")) tail = std::stoll(req.queryParam("tailLines"));
    if (req.hasQuery("limitBytes")) limit = std::stoll(req.queryParam("limitBytes"));
  } catch (...) {
    return text(out, 400, "tailLines and limitBytes must be integers");
  }
  LineOptions lineOpts;
  lineOpts.timestamps = kubeletQueryFlag(req, "timestamps");
  if (req.hasQuery("sinceTime")) {
    lineOpts.since = parseRfc3339(req.queryParam("sinceTime"));
    if (!lineOpts.since) return text(out, 400, "sinceTime must be an RFC 3339 time");
  } else if (req.hasQuery("sinceSeconds")) {
    try {
      lineOpts.since = std::chrono::system_clock::now() -
                       std::chrono::seconds(std::stoll(req.queryParam("sinceSeconds")));
    } catch (...) {
      return text(out, 400, "sinceSeconds must be an integer");
    }
  }
  auto sb = processes.sandbox(pod.ns, pod.name, container);
  std::string path = !sb ? "" : previous ? sb->previousLogPath : sb->logPath;
  if (path.empty()) {
    if (previous) {
      return text(out, 400, "previous terminated container \"" + container + "\" in pod \"" +
                                pod.name + "\" not found");
    }
    return text(out, 400, "container \"" + container + "\" in pod \"" + pod.name +
                              "\" is waiting to start: ContainerCreating");
  }
  std::string body = readFrom(path, 0);
  const ContainerRuntime* running = findContainer(pod, container);
  if (lineOpts.any() && follow && !previous && running && !running->finishedAt) {
    // Following with times: a line still being written is sent once it is complete.
    body.resize(body.rfind('\n') == std::string::npos ? 0 : body.rfind('\n') + 1);
  }
  uint64_t offset = body.size();
  body = applyLineOptions(body, 0, path, lineOpts);
  if (tail) body = lastLines(body, *tail);
  int64_t sent = 0;
  auto clip = [&](std::string& s) {
    if (limit && static_cast<int64_t>(s.size()) > *limit - sent) {
      s.resize(static_cast<size_t>(std::max<int64_t>(0, *limit - sent)));
    }
    sent += static_cast<int64_t>(s.size());
  };
  clip(body);
  const ContainerRuntime* c = findContainer(pod, container);
  bool finished = !c || c->finishedAt.has_value();
  if (!follow || previous || finished) {
    HttpResponse r;
    r.headers["Content-Type"] = "text/plain";
    r.body = std::move(body);
    out.respond(std::move(r));
    return;
  }
  if (!out.startStream(200, {{"Content-Type", "text/plain"}})) return;
  if (!body.empty() && !out.writeChunk(body)) return;
  // Follow this instance until it ends: the pod goes away, the container restarts (a new
  // log file) or it finished and everything it wrote was sent.
  while (!out.clientGone() && !(limit && sent >= *limit)) {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    auto cur = kubelets.pod(pod.ns, pod.name);
    auto now = processes.sandbox(pod.ns, pod.name, container);
    bool ended = !cur || cur->uid != pod.uid || !now || now->logPath != path;
    if (!ended) {
      const ContainerRuntime* cc = findContainer(*cur, container);
      ended = !cc || cc->finishedAt.has_value();
    }
    std::string chunk = readFrom(path, offset);
    if (lineOpts.any() && !ended) {
      chunk.resize(chunk.rfind('\n') == std::string::npos ? 0 : chunk.rfind('\n') + 1);
    }
    uint64_t at = offset;
    offset += chunk.size();
    chunk = applyLineOptions(chunk, at, path, lineOpts);
    clip(chunk);
    if (!chunk.empty() && !out.writeChunk(chunk)) return;
    if (ended) return;
  }
}

void serveProcessExec(const HttpRequest& req, Responder& out, const PodRuntime& pod,
                      const std::string& container, const ContainerProcesses& processes,
                      Registry& registry, Rest& rest) {
  std::vector<std::string> argv = req.queryAll("command");
  if (argv.empty()) return text(out, 400, "you must specify at least one command for the container");
  const std::string proto = kubeletStreamProtocol(req);
  if (proto.empty()) return text(out, 400, kKubeletStreamUpgradeError);
  auto sb = processes.sandbox(pod.ns, pod.name, container);
  if (!sb) return text(out, 400, "container " + container + " is not running");
  const bool wantIn = kubeletQueryFlag(req, "input", "stdin");
  const bool wantOut = kubeletQueryFlag(req, "output", "stdout");
  const bool wantErr = kubeletQueryFlag(req, "error", "stderr");
  const bool tty = kubeletQueryFlag(req, "tty");

  LaunchSpec ls;
  ls.argv = argv;
  ls.env = sb->env.empty() ? execContextFor(pod, container, registry, rest).env : sb->env;
  ls.netnsPath = sb->netnsPath;
  ls.hostname = sb->hostname;
  ls.workingDir = sb->workingDir;
  ls.bindFiles = sb->bindFiles;
  ls.mounts = sb->mounts;
  int master = -1, inW = -1, outR = -1, errR = -1;
  int childIn = -1, childOut = -1, childErr = -1;
  auto closeFd = [](int& fd) {
    if (fd >= 0) ::close(fd);
    fd = -1;
  };
  if (tty) {
    master = ::posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);
    if (master < 0 || ::grantpt(master) != 0 || ::unlockpt(master) != 0) {
      closeFd(master);
      return text(out, 500, "cannot allocate a pseudo-terminal");
    }
    ls.ttyPath = ::ptsname(master);
  } else {
    int p[2];
    if (wantIn && ::pipe2(p, O_CLOEXEC) == 0) {
      childIn = p[0];
      inW = p[1];
    }
    if (::pipe2(p, O_CLOEXEC) == 0) {
      outR = p[0];
      childOut = p[1];
    }
    if (::pipe2(p, O_CLOEXEC) == 0) {
      errR = p[0];
      childErr = p[1];
    }
    ls.stdinFd = childIn;
    ls.stdoutFd = childOut;
    ls.stderrFd = childErr;
  }
  auto ws = out.acceptWebSocket(proto);
  if (!ws) {
    for (int* fd : {&master, &inW, &outR, &errR, &childIn, &childOut, &childErr}) closeFd(*fd);
    return;
  }
  auto pid = launchInSandbox(ls);
  for (int* fd : {&childIn, &childOut, &childErr}) closeFd(*fd);
  if (!pid) {
    ws->write(std::string(1, kStderr) + pid.error().message + "\n");
    ws->write(std::string(1, kStatus) + execStatus(126, argv));
    ws->close();
    for (int* fd : {&master, &inW, &outR, &errR}) closeFd(*fd);
    return;
  }
  spdlog::debug("event=exec pod={}/{} container={} command={} pid={}", pod.ns, pod.name,
                container, argv[0], *pid);
  // stdin and resizes from the client.
  std::mutex inMu;
  int stdinFd = tty ? master : inW;
  bool stdinOpen = wantIn && stdinFd >= 0;
  std::atomic<bool> clientGone{false}, done{false};
  std::thread reader([&] {
    std::string msg;
    while (ws->read(msg)) {
      if (msg.empty()) continue;
      std::lock_guard<std::mutex> l(inMu);
      if (msg[0] == kStdin && stdinOpen) {
        size_t off = 1;
        while (off < msg.size()) {
          ssize_t n = ::write(stdinFd, msg.data() + off, msg.size() - off);
          if (n <= 0) break;
          off += static_cast<size_t>(n);
        }
      } else if (msg[0] == kClose && msg.size() >= 2 && msg[1] == kStdin && stdinOpen) {
        stdinOpen = false;
        if (tty) {
          (void)!::write(master, "\x04", 1);  // end of input on a terminal
        } else {
          closeFd(inW);
        }
      } else if (msg[0] == kResize && tty) {
        json size = json::parse(msg.substr(1), nullptr, false);
        if (size.is_object()) {
          winsize w{};
          w.ws_col = static_cast<unsigned short>(size.value("Width", 80));
          w.ws_row = static_cast<unsigned short>(size.value("Height", 24));
          ::ioctl(master, TIOCSWINSZ, &w);
        }
      }
    }
    if (!done) {
      clientGone = true;
      ::kill(-*pid, SIGKILL);
    }
  });
  // Output to the client until every stream closed.
  std::vector<std::pair<int, char>> streams;
  if (tty) {
    streams.emplace_back(master, kStdout);
  } else {
    streams.emplace_back(outR, kStdout);
    streams.emplace_back(errR, kStderr);
  }
  char buf[16384];
  while (!streams.empty() && !clientGone) {
    std::vector<pollfd> pfds;
    for (const auto& [fd, ch] : streams) pfds.push_back({fd, POLLIN, 0});
    int n = ::poll(pfds.data(), pfds.size(), 200);
    if (n < 0 && errno != EINTR) break;
    if (tty && n == 0 && ::waitpid(*pid, nullptr, WNOHANG | WNOWAIT) == *pid) {
      // The command ended; a terminal may stay open in its children: stop reading.
      break;
    }
    for (size_t i = pfds.size(); i-- > 0;) {
      if (!(pfds[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      ssize_t r = ::read(pfds[i].fd, buf, sizeof(buf));
      if (r <= 0) {
        streams.erase(streams.begin() + static_cast<long>(i));
        continue;
      }
      char ch = streams[i].second;
      bool want = ch == kStdout ? (wantOut || tty) : wantErr;
      if (want && !ws->write(std::string(1, ch) + std::string(buf, static_cast<size_t>(r)))) {
        clientGone = true;
      }
    }
  }
  int status = 0;
  if (clientGone) ::kill(-*pid, SIGKILL);
  while (::waitpid(*pid, &status, 0) < 0 && errno == EINTR) {
  }
  done = true;
  if (!clientGone) ws->write(std::string(1, kStatus) + execStatus(exitCodeOf(status), argv));
  ws->close();
  reader.join();
  std::lock_guard<std::mutex> l(inMu);
  for (int* fd : {&master, &inW, &outR, &errR}) closeFd(*fd);
}

}  // namespace strait::minicluster

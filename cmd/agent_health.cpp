#include "cmd/agent_health.h"

#include <netdb.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>

#include "peering/foreign_cluster.h"

namespace strait::cmd {
namespace {

constexpr auto kApiTimeout = std::chrono::seconds(3);
constexpr int kRequestTimeoutMs = 2000;  // for a client to send its request line
constexpr size_t kMaxRequestBytes = 8192;

const char* reason(int status) {
  switch (status) {
    case 200: return "OK";
    case 404: return "Not Found";
    case 405: return "Method Not Allowed";
    case 503: return "Service Unavailable";
    default: return "Bad Request";
  }
}

void sendAll(int fd, const std::string& data) {
  size_t off = 0;
  while (off < data.size()) {
    ssize_t n = ::send(fd, data.data() + off, data.size() - off, MSG_NOSIGNAL);
    if (n <= 0) return;
    off += static_cast<size_t>(n);
  }
}

}  // namespace

kube::Result<std::unique_ptr<AgentHealth>> AgentHealth::create(
    std::unique_ptr<kube::Client> client) {
  kube::RestConfig cfg = client->config();
  cfg.timeout = kApiTimeout;  // a probe must answer within the kubelet's timeout
  cfg.maxRetries = 0;
  kube::Result<std::unique_ptr<kube::Client>> probeClient = kube::newClient(cfg);
  if (!probeClient.ok()) return probeClient.error();
  return std::unique_ptr<AgentHealth>(new AgentHealth(std::move(*probeClient)));
}

AgentHealth::~AgentHealth() { stop(); }

kube::Status AgentHealth::start(const std::string& host, uint16_t port) {
  std::string where = (host.find(':') != std::string::npos ? "[" + host + "]" : host) + ":" +
                      std::to_string(port);
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE;
  addrinfo* addrs = nullptr;
  if (int rc = ::getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &addrs); rc != 0) {
    return kube::makeError(kube::Code::Unavailable,
                           "health listener " + where + ": " + ::gai_strerror(rc));
  }
  std::string lastError = "no address";
  for (addrinfo* a = addrs; a != nullptr && listenFd_ < 0; a = a->ai_next) {
    int fd = ::socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol);
    if (fd < 0) continue;
    int one = 1;
    ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (::bind(fd, a->ai_addr, a->ai_addrlen) == 0 && ::listen(fd, 16) == 0) {
      listenFd_ = fd;
      break;
    }
    lastError = errno == EADDRINUSE ? "port " + std::to_string(port) + " is already in use"
                                    : std::strerror(errno);
    ::close(fd);
  }
  ::freeaddrinfo(addrs);
  if (listenFd_ < 0) {
    return kube::makeError(kube::Code::Unavailable, "health listener " + where + ": " + lastError);
  }
  sockaddr_storage bound{};
  socklen_t len = sizeof bound;
  ::getsockname(listenFd_, reinterpret_cast<sockaddr*>(&bound), &len);
  port_ = ntohs(bound.ss_family == AF_INET6 ? reinterpret_cast<sockaddr_in6*>(&bound)->sin6_port
                                            : reinterpret_cast<sockaddr_in*>(&bound)->sin_port);
  thread_ = std::thread([this] { serve(); });
  return kube::Status();
}

void AgentHealth::stop() {
  stop_ = true;
  if (thread_.joinable()) thread_.join();
  if (listenFd_ >= 0) ::close(listenFd_);
  listenFd_ = -1;
}

// One connection at a time: probes are few and short, and a client that sends nothing is
// dropped after kRequestTimeoutMs.
void AgentHealth::serve() {
  while (!stop_) {
    pollfd p{listenFd_, POLLIN, 0};
    if (::poll(&p, 1, 200) <= 0) continue;
    int fd = ::accept4(listenFd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd < 0) continue;
    answer(fd);
    ::close(fd);
  }
}

void AgentHealth::answer(int fd) {
  std::string request;
  auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(kRequestTimeoutMs);
  while (request.find("\r\n\r\n") == std::string::npos && request.size() < kMaxRequestBytes) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    pollfd p{fd, POLLIN, 0};
    if (left.count() <= 0 || ::poll(&p, 1, static_cast<int>(left.count())) <= 0) return;
    char buf[1024];
    ssize_t n = ::recv(fd, buf, sizeof buf, 0);
    if (n <= 0) return;
    request.append(buf, static_cast<size_t>(n));
  }
  // Request line: METHOD SP TARGET SP VERSION.
  std::string line = request.substr(0, request.find("\r\n"));
  size_t sp1 = line.find(' ');
  size_t sp2 = sp1 == std::string::npos ? sp1 : line.find(' ', sp1 + 1);
  int status = 400;
  std::string body = "malformed request\n";
  if (sp2 != std::string::npos) {
    std::string method = line.substr(0, sp1);
    std::string path = line.substr(sp1 + 1, sp2 - sp1 - 1);
    path = path.substr(0, path.find('?'));
    if (method != "GET" && method != "HEAD") {
      status = 405;
      body = "only GET and HEAD\n";
    } else if (path == "/healthz" || path == "/livez") {
      status = 200;
      body = "ok\n";
    } else if (path == "/readyz") {
      std::tie(status, body) = readiness(false);
    } else if (path == "/readyz/leader") {
      std::tie(status, body) = readiness(true);
    } else {
      status = 404;
      body = "not found: the agent serves /healthz, /livez, /readyz and /readyz/leader\n";
    }
    if (method == "HEAD") body.clear();
  }
  sendAll(fd, "HTTP/1.1 " + std::to_string(status) + " " + reason(status) +
                  "\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: " +
                  std::to_string(body.size()) + "\r\nConnection: close\r\n\r\n" + body);
}

std::pair<int, std::string> AgentHealth::readiness(bool leaderOnly) {
  std::string report;
  bool ready = true;
  // The API server answers: any answer from it (a missing object included) will do.
  kube::Result<nlohmann::json> probe =
      client_->get(peering::kForeignClusters, "", "strait-readyz-probe");
  if (probe.ok() || probe.error().code == kube::Code::NotFound) {
    report += "[+]apiserver ok\n";
  } else {
    ready = false;
    report += "[-]apiserver failed: " + probe.error().message + "\n";
  }
  switch (role_.load()) {
    case Role::Standby:
      if (leaderOnly) {
        ready = false;
        report += "[-]leader failed: standby (waiting for the leader Lease; serves no gRPC "
                  "until it leads)\n";
      } else {
        report += "[+]grpc ok (standby: waiting for the leader Lease; serves no gRPC until it "
                  "leads)\n";
      }
      break;
    case Role::Leading:
      report += "[+]grpc ok (leader)\n";
      break;
    case Role::Stopping:
      ready = false;
      report += "[-]grpc failed: the agent is stopping\n";
      break;
  }
  report += ready ? "readyz check passed\n" : "readyz check failed\n";
  return {ready ? 200 : 503, report};
}

}  // namespace strait::cmd

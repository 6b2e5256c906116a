#include "tunnel/uapi.h"

#include <fcntl.h>
#include <poll.h>
#include <spdlog/spdlog.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstring>
#include <sstream>

namespace strait::tunnel {

using base::Code;
using base::makeError;

namespace {

constexpr int kErrInvalid = 22;  // EINVAL
constexpr int kErrIo = 5;        // EIO
constexpr size_t kMaxRequest = 1 << 20;

std::string getResponse(Device& device) {
  DeviceSnapshot s = device.snapshot();
  std::ostringstream o;
  if (s.hasPrivateKey) o << "private_key=" << toHex(s.privateKey.bytes()) << "\n";
  o << "listen_port=" << s.listenPort << "\n";
  for (const PeerSnapshot& p : s.peers) {
    o << "public_key=" << toHex(p.publicKey) << "\n";
    o << "preshared_key=" << toHex(p.presharedKey.bytes()) << "\n";
    o << "protocol_version=1\n";
    if (p.endpoint.valid()) o << "endpoint=" << p.endpoint.toString() << "\n";
    o << "last_handshake_time_sec=" << p.lastHandshakeSeconds << "\n";
    o << "last_handshake_time_nsec=" << p.lastHandshakeNanoseconds << "\n";
    o << "tx_bytes=" << p.txBytes << "\n";
    o << "rx_bytes=" << p.rxBytes << "\n";
    o << "persistent_keepalive_interval=" << p.persistentKeepalive << "\n";
    for (const IpPrefix& a : p.allowedIps) o << "allowed_ip=" << a.toString() << "\n";
  }
  o << "errno=0\n\n";
  return o.str();
}

std::optional<long> number(const std::string& v, long max) {
  long n = 0;
  auto [p, ec] = std::from_chars(v.data(), v.data() + v.size(), n);
  if (v.empty() || ec != std::errc() || p != v.data() + v.size() || n < 0 || n > max) {
    return std::nullopt;
  }
  return n;
}

// Applies a set request; returns 0 or an errno value, and logs what was wrong.
int applySet(Device& device, std::istringstream& in) {
  std::string line;
  std::optional<PublicKey> peerKey;
  PeerUpdate update;
  bool updateOnly = false, remove = false;
  auto flush = [&]() -> int {
    if (!peerKey) return 0;
    int rc = 0;
    if (remove) {
      device.removePeer(*peerKey);
    } else if (auto st = device.updatePeer(*peerKey, update, updateOnly); !st.ok()) {
      if (!(updateOnly && st.code() == Code::NotFound)) {
        spdlog::warn("event=uapi_set_failed error=\"{}\"", st.error().message);
        rc = kErrInvalid;
      }
    }
    peerKey.reset();
    update = PeerUpdate{};
    updateOnly = remove = false;
    return rc;
  };
  auto bad = [&](const std::string& what) {
    spdlog::warn("event=uapi_bad_request error=\"{}\"", what);
    return kErrInvalid;
  };
  while (std::getline(in, line)) {
    if (line.empty()) break;
    size_t eq = line.find('=');
    if (eq == std::string::npos) return bad("line without '=': " + line);
    std::string key = line.substr(0, eq), value = line.substr(eq + 1);
    if (key == "public_key") {
      if (int rc = flush()) return rc;
      auto k = keyFromHex(value);
      if (!k) return bad("public_key is not 64 hex digits");
      peerKey = *k;
      continue;
    }
    if (!peerKey) {
      if (key == "private_key") {
        auto k = keyFromHex(value);
        if (!k) return bad("private_key is not 64 hex digits");
        PrivateKey priv;
        std::memcpy(priv.data(), k->data(), 32);
        wipeMemory(k->data(), k->size());
        if (auto st = device.setPrivateKey(priv); !st.ok()) return bad(st.error().message);
      } else if (key == "listen_port") {
        auto n = number(value, 65535);
        if (!n) return bad("listen_port must be 0..65535");
        if (auto st = device.setListenPort(static_cast<uint16_t>(*n)); !st.ok()) {
          spdlog::warn("event=uapi_set_failed error=\"{}\"", st.error().message);
          return kErrIo;
        }
      } else if (key == "fwmark") {
        if (!number(value, 0xffffffffL)) return bad("fwmark must be a number");
      } else if (key == "replace_peers") {
        if (value != "true") return bad("replace_peers must be true");
        device.removeAllPeers();
      } else {
        return bad("unknown device key " + key);
      }
      continue;
    }
    if (key == "remove") {
      if (value != "true") return bad("remove must be true");
      remove = true;
    } else if (key == "update_only") {
      if (value != "true") return bad("update_only must be true");
      updateOnly = true;
    } else if (key == "preshared_key") {
      auto k = keyFromHex(value);
      if (!k) return bad("preshared_key is not 64 hex digits");
      SymmetricKey psk;
      std::memcpy(psk.data(), k->data(), 32);
      wipeMemory(k->data(), k->size());
      update.presharedKey = psk;
    } else if (key == "endpoint") {
      auto e = Endpoint::parse(value);
      if (!e.ok()) return bad(e.error().message);
      update.endpoint = *e;
    } else if (key == "persistent_keepalive_interval") {
      auto n = number(value, 65535);
      if (!n) return bad("persistent_keepalive_interval must be 0..65535");
      update.persistentKeepalive = static_cast<uint16_t>(*n);
    } else if (key == "replace_allowed_ips") {
      if (value != "true") return bad("replace_allowed_ips must be true");
      update.replaceAllowedIps = true;
    } else if (key == "allowed_ip") {
      auto p = IpPrefix::parse(value);
      if (!p.ok()) return bad(p.error().message);
      update.addAllowedIps.push_back(*p);
    } else if (key == "protocol_version") {
      if (value != "1") return bad("protocol_version must be 1");
    } else {
      return bad("unknown peer key " + key);
    }
  }
  return flush();
}

}  // namespace

std::string handleUapiRequest(Device& device, const std::string& request) {
  std::istringstream in(request);
  std::string first;
  std::getline(in, first);
  if (first == "get=1") return getResponse(device);
  if (first == "set=1") return "errno=" + std::to_string(applySet(device, in)) + "\n\n";
  spdlog::warn("event=uapi_bad_request error=\"unknown operation {}\"", first.substr(0, 32));
  return "errno=" + std::to_string(kErrInvalid) + "\n\n";
}

base::Status UapiServer::start() {
  if (mkdir(directory_.c_str(), 0755) != 0 && errno != EEXIST) {
    return makeError(Code::Unavailable, "mkdir " + directory_ + ": " + strerror(errno));
  }
  std::string path = socketPath();
  sockaddr_un sa{};
  sa.sun_family = AF_UNIX;
  if (path.size() >= sizeof sa.sun_path) {
    return makeError(Code::Invalid, "UAPI socket path too long: " + path);
  }
  std::strncpy(sa.sun_path, path.c_str(), sizeof sa.sun_path - 1);
  // A socket file nobody listens on is stale (a crashed gateway): replace it.
  int probe = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (connect(probe, reinterpret_cast<sockaddr*>(&sa), sizeof sa) == 0) {
    close(probe);
    return makeError(Code::AlreadyExists, "UAPI socket " + path + " is in use by another process");
  }
  close(probe);
  unlink(path.c_str());
  listenFd_ = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  mode_t old = umask(0077);
  int rc = bind(listenFd_, reinterpret_cast<sockaddr*>(&sa), sizeof sa);
  umask(old);
  if (rc != 0 || listen(listenFd_, 16) != 0) {
    std::string err = strerror(errno);
    close(listenFd_);
    listenFd_ = -1;
    return makeError(Code::Unavailable, "listen on " + path + ": " + err);
  }
  stopFd_ = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  running_ = true;
  thread_ = std::thread([this] { serve(); });
  spdlog::info("event=uapi_listening path={}", path);
  return base::Status::OK();
}

void UapiServer::stop() {
  if (!running_.exchange(false)) return;
  uint64_t one = 1;
  (void)!write(stopFd_, &one, sizeof one);
  if (thread_.joinable()) thread_.join();
  close(listenFd_);
  close(stopFd_);
  listenFd_ = stopFd_ = -1;
  unlink(socketPath().c_str());
}

void UapiServer::serve() {
  while (running_.load()) {
    pollfd fds[2] = {{listenFd_, POLLIN, 0}, {stopFd_, POLLIN, 0}};
    if (poll(fds, 2, -1) < 0) continue;
    if (fds[1].revents) return;
    int conn = accept4(listenFd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (conn < 0) continue;
    // Requests end with a blank line; a connection may carry several. A client that
    // stalls for 5 s is dropped so that it cannot block the others.
    std::string buffer;
    char chunk[4096];
    for (;;) {
      pollfd p[2] = {{conn, POLLIN, 0}, {stopFd_, POLLIN, 0}};
      if (poll(p, 2, 5000) <= 0 || p[1].revents) break;
      ssize_t n = read(conn, chunk, sizeof chunk);
      if (n <= 0) break;
      buffer.append(chunk, static_cast<size_t>(n));
      if (buffer.size() > kMaxRequest) break;
      size_t end;
      while ((end = buffer.find("\n\n")) != std::string::npos) {
        std::string response = handleUapiRequest(device_, buffer.substr(0, end + 1));
        buffer.erase(0, end + 2);
        (void)!write(conn, response.data(), response.size());
      }
    }
    close(conn);
  }
}

}  // namespace strait::tunnel

// Socket and TLS primitives of the pull-mode link (see link_io.h).
#include "peering/link_io.h"

#include <fcntl.h>
#include <netdb.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/x509v3.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <vector>

#include "peering/identity.h"

namespace strait::peering::linkio {
namespace {

using Clock = std::chrono::steady_clock;
using kube::Code;
using kube::makeError;

void setNonBlocking(int fd) { fcntl(fd, F_SETFL, fcntl(fd, F_GETFL, 0) | O_NONBLOCK); }

int remainingMs(Clock::time_point deadline) {
  auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
  return left.count() < 0 ? 0 : static_cast<int>(left.count());
}

// Waits for `events` on fd until `deadline`; false on timeout.
bool waitFd(int fd, short events, Clock::time_point deadline) {
  while (true) {
    pollfd p{fd, events, 0};
    int rc = ::poll(&p, 1, remainingMs(deadline));
    if (rc > 0) return true;
    if (rc == 0) return false;
    if (errno != EINTR) return true;  // let the caller's next call report the error
  }
}

// Waits for what the last SSL call asked for; false on timeout or a fatal SSL error.
bool waitSsl(const Conn& c, int rc, Clock::time_point deadline) {
  int err = SSL_get_error(c.ssl(), rc);
  if (err == SSL_ERROR_WANT_READ) return waitFd(c.fd(), POLLIN, deadline);
  if (err == SSL_ERROR_WANT_WRITE) return waitFd(c.fd(), POLLOUT, deadline);
  return false;
}

// The cluster ID in a DNS SAN "agent.<id>.strait" of `leaf`, or "".
std::string sanClusterId(X509* leaf) {
  auto* names = static_cast<GENERAL_NAMES*>(
      X509_get_ext_d2i(leaf, NID_subject_alt_name, nullptr, nullptr));
  if (!names) return {};
  std::string out;
  const std::string prefix = "agent.", suffix = ".strait";
  for (int i = 0; i < sk_GENERAL_NAME_num(names) && out.empty(); ++i) {
    const GENERAL_NAME* gn = sk_GENERAL_NAME_value(names, i);
    if (gn->type != GEN_DNS) continue;
    std::string dns(reinterpret_cast<const char*>(ASN1_STRING_get0_data(gn->d.dNSName)),
                    static_cast<size_t>(ASN1_STRING_length(gn->d.dNSName)));
    if (dns.size() > prefix.size() + suffix.size() && dns.rfind(prefix, 0) == 0 &&
        dns.compare(dns.size() - suffix.size(), suffix.size(), suffix) == 0) {
      std::string id = dns.substr(prefix.size(), dns.size() - prefix.size() - suffix.size());
      if (validClusterId(id)) out = id;
    }
  }
  GENERAL_NAMES_free(names);
  return out;
}

}  // namespace

std::string pemOf(X509* cert) {
  std::unique_ptr<BIO, decltype(&BIO_free)> bio(BIO_new(BIO_s_mem()), BIO_free);
  if (!bio || PEM_write_bio_X509(bio.get(), cert) != 1) return {};
  char* data = nullptr;
  long n = BIO_get_mem_data(bio.get(), &data);
  return n > 0 ? std::string(data, static_cast<size_t>(n)) : std::string();
}

Conn::~Conn() {
  if (ssl_) {
    SSL_shutdown(ssl_);  // best effort on a non-blocking socket
    ERR_clear_error();
    SSL_free(ssl_);
  }
  if (fd_ >= 0) ::close(fd_);
}

void Conn::abort() {
  if (fd_ >= 0) ::shutdown(fd_, SHUT_RDWR);
}

kube::Result<Ctx> makeContext(bool server, const kube::KeyPair& chain) {
  Ctx ctx(SSL_CTX_new(server ? TLS_server_method() : TLS_client_method()), SSL_CTX_free);
  if (!ctx) return makeError(Code::Internal, "link TLS: " + kube::opensslErrors());
  SSL_CTX_set_min_proto_version(ctx.get(), TLS1_2_VERSION);
  SSL_CTX_set_mode(ctx.get(), SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
  std::unique_ptr<BIO, decltype(&BIO_free)> certs(
      BIO_new_mem_buf(chain.certPem.data(), static_cast<int>(chain.certPem.size())), BIO_free);
  std::unique_ptr<BIO, decltype(&BIO_free)> key(
      BIO_new_mem_buf(chain.keyPem.data(), static_cast<int>(chain.keyPem.size())), BIO_free);
  bool first = true;
  while (X509* cert = PEM_read_bio_X509(certs.get(), nullptr, nullptr, nullptr)) {
    int ok = first ? SSL_CTX_use_certificate(ctx.get(), cert)
                   : SSL_CTX_add1_chain_cert(ctx.get(), cert);
    X509_free(cert);
    if (ok != 1) return makeError(Code::Invalid, "link TLS: certificate: " + kube::opensslErrors());
    first = false;
  }
  ERR_clear_error();  // the loop ends with a "no start line" error
  EVP_PKEY* pkey = PEM_read_bio_PrivateKey(key.get(), nullptr, nullptr, nullptr);
  if (first || !pkey || SSL_CTX_use_PrivateKey(ctx.get(), pkey) != 1) {
    if (pkey) EVP_PKEY_free(pkey);
    return makeError(Code::Invalid, "link TLS: certificate or key unusable: " + kube::opensslErrors());
  }
  EVP_PKEY_free(pkey);
  // Chains are checked by verifyPeer() against a pinned CA, not a trust store.
  SSL_CTX_set_verify(ctx.get(), SSL_VERIFY_PEER | (server ? SSL_VERIFY_FAIL_IF_NO_PEER_CERT : 0),
                     [](int, X509_STORE_CTX*) { return 1; });
  return ctx;
}

bool splitEndpoint(const std::string& endpoint, std::string* host, std::string* port) {
  if (!endpoint.empty() && endpoint[0] == '[') {
    size_t close = endpoint.find(']');
    if (close == std::string::npos || close + 1 >= endpoint.size() || endpoint[close + 1] != ':') {
      return false;
    }
    *host = endpoint.substr(1, close - 1);
    *port = endpoint.substr(close + 2);
  } else {
    size_t colon = endpoint.rfind(':');
    if (colon == std::string::npos) return false;
    *host = endpoint.substr(0, colon);
    *port = endpoint.substr(colon + 1);
  }
  return !host->empty() && !port->empty();
}

int listenOn(const std::string& hostPort, int* port, std::string* error) {
  std::string host, service;
  if (!splitEndpoint(hostPort, &host, &service)) {
    *error = "\"" + hostPort + "\" is not host:port";
    return -1;
  }
  addrinfo hints{};
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE;
  addrinfo* res = nullptr;
  if (int rc = getaddrinfo(host.c_str(), service.c_str(), &hints, &res); rc != 0) {
    *error = gai_strerror(rc);
    return -1;
  }
  std::unique_ptr<addrinfo, decltype(&freeaddrinfo)> guard(res, freeaddrinfo);
  int fd = ::socket(res->ai_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  int one = 1;
  if (fd < 0 || setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) != 0 ||
      ::bind(fd, res->ai_addr, res->ai_addrlen) != 0 || ::listen(fd, 64) != 0) {
    *error = std::strerror(errno);
    if (fd >= 0) ::close(fd);
    return -1;
  }
  sockaddr_storage addr{};
  socklen_t len = sizeof(addr);
  getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  *port = ntohs(addr.ss_family == AF_INET6 ? reinterpret_cast<sockaddr_in6*>(&addr)->sin6_port
                                           : reinterpret_cast<sockaddr_in*>(&addr)->sin_port);
  return fd;
}

int connectTo(const std::string& endpoint, std::chrono::milliseconds timeout, std::string* error) {
  std::string host, port;
  if (!splitEndpoint(endpoint, &host, &port)) {
    *error = "\"" + endpoint + "\" is not host:port";
    return -1;
  }
  addrinfo hints{};
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* res = nullptr;
  if (int rc = getaddrinfo(host.c_str(), port.c_str(), &hints, &res); rc != 0) {
    *error = gai_strerror(rc);
    return -1;
  }
  std::unique_ptr<addrinfo, decltype(&freeaddrinfo)> guard(res, freeaddrinfo);
  auto deadline = Clock::now() + timeout;
  for (addrinfo* ai = res; ai; ai = ai->ai_next) {
    int fd = ::socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK,
                      ai->ai_protocol);
    if (fd < 0) continue;
    int rc = ::connect(fd, ai->ai_addr, ai->ai_addrlen);
    if (rc != 0 && errno == EINPROGRESS) {
      int soErr = 0;
      socklen_t len = sizeof(soErr);
      if (!waitFd(fd, POLLOUT, deadline)) {
        *error = "connect timed out";
      } else if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &soErr, &len) == 0 && soErr == 0) {
        rc = 0;
      } else {
        *error = std::strerror(soErr ? soErr : errno);
      }
    } else if (rc != 0) {
      *error = std::strerror(errno);
    }
    if (rc == 0) return fd;
    ::close(fd);
  }
  return -1;
}

int acceptOn(int listenFd) {
  return ::accept4(listenFd, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
}

bool waitReadable(int fd, std::chrono::milliseconds timeout) {
  return waitFd(fd, POLLIN, Clock::now() + timeout);
}

kube::Result<std::unique_ptr<Conn>> handshake(const Ctx& ctx, int fd, bool server,
                                              std::chrono::milliseconds timeout) {
  setNonBlocking(fd);
  SSL* ssl = SSL_new(ctx.get());
  if (!ssl) {
    ::close(fd);
    return makeError(Code::Internal, "link TLS: " + kube::opensslErrors());
  }
  auto conn = std::make_unique<Conn>(fd, ssl);
  SSL_set_fd(ssl, fd);
  auto deadline = Clock::now() + timeout;
  ERR_clear_error();
  while (true) {
    ERR_clear_error();
    int rc = server ? SSL_accept(ssl) : SSL_connect(ssl);
    if (rc == 1) return conn;
    if (!waitSsl(*conn, rc, deadline)) {
      std::string why = kube::opensslErrors();
      return makeError(Code::Unavailable,
                       "TLS handshake failed: " + (why.empty() ? "timed out or closed" : why));
    }
  }
}

kube::Result<PeerIdentity> verifyPeer(const Conn& conn, const std::string& pinned) {
  X509* leaf = SSL_get0_peer_certificate(conn.ssl());
  if (!leaf) return makeError(Code::Unauthorized, "the peer presented no certificate");
  std::string leafPem = pemOf(leaf);
  PeerIdentity id;
  std::string seen;
  STACK_OF(X509)* chain = SSL_get_peer_cert_chain(conn.ssl());  // the leaf only client side
  for (int i = 0; chain && i < sk_X509_num(chain); ++i) {
    std::string pem = pemOf(sk_X509_value(chain, i));
    if (pem == leafPem) continue;
    kube::Result<kube::CertificateInfo> info = kube::certificateInfo(pem);
    if (!info.ok()) continue;
    if (info->sha256Fingerprint == pinned) {
      id.caPem = pem;
      id.caFingerprint = pinned;
      break;
    }
    seen += (seen.empty() ? "" : ", ") + info->sha256Fingerprint;
  }
  if (id.caPem.empty()) {
    return makeError(Code::Unauthorized,
                     "the peer's CA is not the pinned one (presented CA fingerprint " +
                         (seen.empty() ? std::string("none") : seen) + ", pinned " + pinned + ")");
  }
  if (!kube::verifyIssuedBy(id.caPem, leafPem).ok()) {
    return makeError(Code::Unauthorized, "the peer's certificate is not signed by the pinned CA");
  }
  kube::Result<kube::CertificateInfo> info = kube::certificateInfo(leafPem);
  if (!info.ok() || info->notAfter < std::chrono::system_clock::now()) {
    return makeError(Code::Unauthorized, "the peer's certificate has expired");
  }
  id.clusterId = sanClusterId(leaf);
  if (id.clusterId.empty()) {
    return makeError(Code::Unauthorized,
                     "the peer's certificate names no agent.<cluster-id>.strait");
  }
  return id;
}

std::string claimedClusterId(const Conn& conn) {
  X509* leaf = SSL_get0_peer_certificate(conn.ssl());
  return leaf ? sanClusterId(leaf) : std::string();
}

bool writeAll(Conn& c, std::string_view data, std::chrono::milliseconds timeout) {
  auto deadline = Clock::now() + timeout;
  while (!data.empty()) {
    ERR_clear_error();  // SSL_get_error() reads this thread's queue
    int rc = SSL_write(c.ssl(), data.data(), static_cast<int>(data.size()));
    if (rc > 0) {
      data.remove_prefix(static_cast<size_t>(rc));
    } else if (!waitSsl(c, rc, deadline)) {
      return false;
    }
  }
  return true;
}

int readSome(Conn& c, char* buf, int len, std::chrono::milliseconds timeout) {
  auto deadline = Clock::now() + timeout;
  while (true) {
    ERR_clear_error();
    int rc = SSL_read(c.ssl(), buf, len);
    if (rc > 0) return rc;
    int err = SSL_get_error(c.ssl(), rc);
    if (err != SSL_ERROR_WANT_READ && err != SSL_ERROR_WANT_WRITE) return 0;
    if (Clock::now() >= deadline) return -1;
    if (!waitSsl(c, rc, deadline)) return -1;
  }
}

bool readLine(Conn& c, std::string* line, std::chrono::milliseconds timeout) {
  auto deadline = Clock::now() + timeout;
  line->clear();
  while (line->size() < 1024) {
    char ch = 0;
    auto left = std::chrono::milliseconds(remainingMs(deadline));
    if (readSome(c, &ch, 1, left) != 1) return false;
    if (ch == '\n') return true;
    *line += ch;
  }
  return false;
}

void ThreadSet::spawn(std::function<void()> fn) {
  base::MutexLock lock(mu_);
  for (auto it = entries_.begin(); it != entries_.end();) {
    if (it->done->load()) {
      it->thread.join();
      it = entries_.erase(it);
    } else {
      ++it;
    }
  }
  auto done = std::make_shared<std::atomic<bool>>(false);
  entries_.push_back({std::thread([fn = std::move(fn), done] {
                        fn();
                        *done = true;
                      }),
                      done});
}

void ThreadSet::joinAll() {
  std::list<Entry> all;
  {
    base::MutexLock lock(mu_);
    all.swap(entries_);
  }
  for (Entry& e : all) e.thread.join();
}

void splice(Conn& link, int fd, const std::atomic<bool>& stop) {
  setNonBlocking(fd);
  constexpr size_t kCap = 256 * 1024;
  std::string toFd, toLink;
  std::vector<char> buf(16 * 1024);
  bool linkEnd = false, fdEnd = false, failed = false;
  while (!stop && !failed) {
    bool linkWantsRead = false, linkWantsWrite = false, progress = true;
    while (progress && !failed) {
      progress = false;
      if (!linkEnd && toFd.size() < kCap) {
        ERR_clear_error();
        int n = SSL_read(link.ssl(), buf.data(), static_cast<int>(buf.size()));
        if (n > 0) {
          toFd.append(buf.data(), static_cast<size_t>(n));
          progress = true;
        } else {
          int err = SSL_get_error(link.ssl(), n);
          if (err == SSL_ERROR_WANT_READ) linkWantsRead = true;
          else if (err == SSL_ERROR_WANT_WRITE) linkWantsWrite = true;
          else linkEnd = true;
        }
      }
      if (!fdEnd && toLink.size() < kCap) {
        ssize_t n = ::recv(fd, buf.data(), buf.size(), 0);
        if (n > 0) {
          toLink.append(buf.data(), static_cast<size_t>(n));
          progress = true;
        } else if (n == 0 || (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)) {
          fdEnd = true;
        }
      }
      if (!toFd.empty()) {
        ssize_t n = ::send(fd, toFd.data(), toFd.size(), MSG_NOSIGNAL);
        if (n > 0) {
          toFd.erase(0, static_cast<size_t>(n));
          progress = true;
        } else if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
          failed = true;
        }
      }
      if (!toLink.empty()) {
        ERR_clear_error();
        int n = SSL_write(link.ssl(), toLink.data(), static_cast<int>(toLink.size()));
        if (n > 0) {
          toLink.erase(0, static_cast<size_t>(n));
          progress = true;
        } else {
          int err = SSL_get_error(link.ssl(), n);
          if (err == SSL_ERROR_WANT_READ) linkWantsRead = true;
          else if (err == SSL_ERROR_WANT_WRITE) linkWantsWrite = true;
          else failed = true;
        }
      }
    }
    if ((linkEnd && toFd.empty()) || (fdEnd && toLink.empty())) break;
    pollfd p[2] = {{link.fd(), 0, 0}, {fd, 0, 0}};
    if (linkWantsRead) p[0].events |= POLLIN;
    if (linkWantsWrite) p[0].events |= POLLOUT;
    if (!fdEnd && toLink.size() < kCap) p[1].events |= POLLIN;
    if (!toFd.empty()) p[1].events |= POLLOUT;
    if (linkEnd) p[0].fd = -1;  // no busy loop on a hung-up socket
    ::poll(p, 2, 200);
  }
}

}  // namespace strait::peering::linkio

// fetchPinnedCa: one TLS handshake with OpenSSL (no verification yet), then pinning: the
// chain the server sent must contain a certificate with the token's fingerprint, and the
// server's leaf must be signed by it. Only then is that certificate trusted as the CA.
#include <netdb.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <memory>

#include "kube/pki.h"
#include "peering/transport.h"

namespace strait::peering {
namespace {

kube::Error unavailable(const std::string& endpoint, const std::string& why) {
  return kube::makeError(kube::Code::Unavailable,
                         "cannot reach the provider agent at " + endpoint + ": " + why);
}

// host:port or [v6]:port
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

int connectWithTimeout(const std::string& host, const std::string& port,
                       std::chrono::milliseconds timeout, std::string* error) {
  addrinfo hints{};
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* res = nullptr;
  if (int rc = getaddrinfo(host.c_str(), port.c_str(), &hints, &res); rc != 0) {
    *error = gai_strerror(rc);
    return -1;
  }
  std::unique_ptr<addrinfo, decltype(&freeaddrinfo)> guard(res, freeaddrinfo);
  for (addrinfo* ai = res; ai; ai = ai->ai_next) {
    int fd = ::socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC, ai->ai_protocol);
    if (fd < 0) continue;
    int flags = fcntl(fd, F_GETFL, 0);
    fcntl(fd, F_SETFL, flags | O_NONBLOCK);
    int rc = ::connect(fd, ai->ai_addr, ai->ai_addrlen);
    if (rc != 0 && errno == EINPROGRESS) {
      pollfd p{fd, POLLOUT, 0};
      rc = ::poll(&p, 1, static_cast<int>(timeout.count()));
      int soErr = 0;
      socklen_t len = sizeof(soErr);
      if (rc == 1 && getsockopt(fd, SOL_SOCKET, SO_ERROR, &soErr, &len) == 0 && soErr == 0) {
        rc = 0;
      } else {
        *error = rc == 0 ? "connect timed out" : std::strerror(soErr ? soErr : errno);
        rc = -1;
      }
    } else if (rc != 0) {
      *error = std::strerror(errno);
    }
    if (rc == 0) {
      fcntl(fd, F_SETFL, flags);
      timeval tv{static_cast<time_t>(timeout.count() / 1000),
                 static_cast<suseconds_t>((timeout.count() % 1000) * 1000)};
      setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
      setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
      return fd;
    }
    ::close(fd);
  }
  return -1;
}

std::string pemOf(X509* cert) {
  std::unique_ptr<BIO, decltype(&BIO_free)> bio(BIO_new(BIO_s_mem()), BIO_free);
  if (!bio || PEM_write_bio_X509(bio.get(), cert) != 1) return {};
  char* data = nullptr;
  long n = BIO_get_mem_data(bio.get(), &data);
  return n > 0 ? std::string(data, static_cast<size_t>(n)) : std::string();
}

}  // namespace

kube::Result<std::string> fetchPinnedCa(const std::string& endpoint,
                                        const std::string& fingerprint,
                                        std::chrono::milliseconds timeout) {
  std::string host, port, error;
  if (!splitEndpoint(endpoint, &host, &port)) {
    return kube::makeError(kube::Code::Invalid, "endpoint \"" + endpoint + "\" is not host:port");
  }
  int fd = connectWithTimeout(host, port, timeout, &error);
  if (fd < 0) return unavailable(endpoint, error);
  std::unique_ptr<SSL_CTX, decltype(&SSL_CTX_free)> ctx(SSL_CTX_new(TLS_client_method()),
                                                         SSL_CTX_free);
  std::unique_ptr<SSL, decltype(&SSL_free)> ssl(ctx ? SSL_new(ctx.get()) : nullptr, SSL_free);
  if (!ssl) {
    ::close(fd);
    return kube::makeError(kube::Code::Internal, "TLS: " + kube::opensslErrors());
  }
  SSL_CTX_set_min_proto_version(ctx.get(), TLS1_2_VERSION);
  static const unsigned char kAlpn[] = {2, 'h', '2'};
  SSL_set_alpn_protos(ssl.get(), kAlpn, sizeof(kAlpn));
  SSL_set_fd(ssl.get(), fd);
  ERR_clear_error();
  int rc = SSL_connect(ssl.get());
  std::string result;
  kube::Status status;
  if (rc != 1) {
    status = unavailable(endpoint, "TLS handshake failed: " + kube::opensslErrors());
  } else {
    STACK_OF(X509)* chain = SSL_get_peer_cert_chain(ssl.get());  // includes the leaf (client)
    X509* leaf = SSL_get0_peer_certificate(ssl.get());
    for (int i = 0; chain && i < sk_X509_num(chain); ++i) {
      std::string pem = pemOf(sk_X509_value(chain, i));
      kube::Result<kube::CertificateInfo> info = kube::certificateInfo(pem);
      if (info.ok() && info->sha256Fingerprint == fingerprint) {
        result = pem;
        break;
      }
    }
    if (result.empty()) {
      status = kube::makeError(kube::Code::Unauthorized,
                               "the agent at " + endpoint +
                                   " does not present the CA the token pins (fingerprint "
                                   "mismatch): refusing to trust it");
    } else if (!leaf || !kube::verifyIssuedBy(result, pemOf(leaf)).ok()) {
      status = kube::makeError(kube::Code::Unauthorized,
                               "the agent at " + endpoint +
                                   " presents a server certificate not signed by the pinned CA");
      result.clear();
    }
    SSL_shutdown(ssl.get());
  }
  ssl.reset();
  ::close(fd);
  if (!status.ok()) return status.error();
  return result;
}

}  // namespace strait::peering

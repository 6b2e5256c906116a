// fetchPinnedCa: one TLS handshake with OpenSSL (no verification yet), then pinning: the
// chain the server sent must contain a certificate with the token's fingerprint, and the
// server's leaf must be signed by it. Only then is that certificate trusted as the CA.
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <sys/socket.h>
#include <unistd.h>

#include <fcntl.h>
#include <memory>

#include "kube/pki.h"
#include "peering/link_io.h"
#include "peering/transport.h"

namespace strait::peering {
namespace {

kube::Error unavailable(const std::string& endpoint, const std::string& why) {
  return kube::makeError(kube::Code::Unavailable,
                         "cannot reach the provider agent at " + endpoint + ": " + why);
}

// A blocking socket connected within `timeout`, reads and writes bounded by it too.
int connectWithTimeout(const std::string& endpoint, std::chrono::milliseconds timeout,
                       std::string* error) {
  int fd = linkio::connectTo(endpoint, timeout, error);
  if (fd < 0) return -1;
  fcntl(fd, F_SETFL, fcntl(fd, F_GETFL, 0) & ~O_NONBLOCK);
  timeval tv{static_cast<time_t>(timeout.count() / 1000),
             static_cast<suseconds_t>((timeout.count() % 1000) * 1000)};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
  return fd;
}

}  // namespace

kube::Result<std::string> fetchPinnedCa(const std::string& endpoint,
                                        const std::string& fingerprint,
                                        std::chrono::milliseconds timeout) {
  std::string host, port, error;
  if (!linkio::splitEndpoint(endpoint, &host, &port)) {
    return kube::makeError(kube::Code::Invalid, "endpoint \"" + endpoint + "\" is not host:port");
  }
  int fd = connectWithTimeout(endpoint, timeout, &error);
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
      std::string pem = linkio::pemOf(sk_X509_value(chain, i));
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
    } else if (!leaf || !kube::verifyIssuedBy(result, linkio::pemOf(leaf)).ok()) {
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

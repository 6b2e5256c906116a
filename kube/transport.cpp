// Transport over cpprestsdk. TLS material is applied in the ssl_context_callback (called for
// each new connection): a fresh trust store holding only the configured CA (the system store
// when none is configured), the client certificate chain and key. tls-server-name is applied
// through the Host header, which cpprestsdk uses for SNI, certificate name checks and the
// connection-pool key.
#include "kube/transport.h"

#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <spdlog/spdlog.h>

#include <cpprest/http_client.h>
#include <pplx/threadpool.h>

#include <mutex>
#include <optional>
#include <system_error>

#include "base/thread_annotations.h"
#include "kube/api_error.h"
#include "kube/client.h"

namespace strait::kube {
namespace {

using web::http::client::http_client;
using web::http::client::http_client_config;

constexpr auto kStreamIoTimeout = std::chrono::minutes(11);  // the longest watch is 10 min
constexpr size_t kReadChunk = 64 * 1024;

// The last certificate verification failure of a transport's connections, recorded by the
// TLS context's verify function (cpprestsdk reports only "Error in SSL handshake"). Shared by
// the connections' threads.
class VerifyFailures {
 public:
  // SSL_CTX_set_cert_verify_callback: verifies the chain as OpenSSL would, recording a failure.
  static int verify(X509_STORE_CTX* ctx, void* arg) {
    int ok = X509_verify_cert(ctx);
    if (ok <= 0) {
      auto* self = static_cast<VerifyFailures*>(arg);
      base::MutexLock lock(self->mu_);
      self->last_ = X509_STORE_CTX_get_error(ctx);
    }
    return ok;
  }
  // The last failure's X509_V_ERR code (X509_V_OK: the chain verified but the name check
  // failed), or nullopt if none was recorded since the last take().
  std::optional<int> take() {
    base::MutexLock lock(mu_);
    std::optional<int> r = last_;
    last_.reset();
    return r;
  }

 private:
  base::Mutex mu_;
  std::optional<int> last_ GUARDED_BY(mu_);
};

// What did not verify, in words, for a failed handshake with `server`, whose certificate had
// to be issued for `expectedName` (the URL's host, or tls-server-name).
std::string handshakeFailure(const std::string& server, const std::string& expectedName,
                             bool kubeconfigCa, std::optional<int> verifyError,
                             const std::string& what) {
  std::string msg = "TLS handshake with " + server + " failed: ";
  if (!verifyError) return msg + what;
  const std::string detail =
      " (certificate verify failed: " +
      std::string(*verifyError == X509_V_OK || *verifyError == X509_V_ERR_UNSPECIFIED
                      ? "hostname mismatch"
                      : X509_verify_cert_error_string(*verifyError)) +
      ")";
  switch (*verifyError) {
    case X509_V_ERR_UNABLE_TO_GET_ISSUER_CERT:
    case X509_V_ERR_UNABLE_TO_GET_ISSUER_CERT_LOCALLY:
    case X509_V_ERR_UNABLE_TO_VERIFY_LEAF_SIGNATURE:
    case X509_V_ERR_SELF_SIGNED_CERT_IN_CHAIN:
    case X509_V_ERR_DEPTH_ZERO_SELF_SIGNED_CERT:
    case X509_V_ERR_CERT_SIGNATURE_FAILURE:
      return msg + "the server's certificate is not signed by " +
             (kubeconfigCa ? "the kubeconfig's certificate-authority-data"
                           : "a certificate authority this system trusts (the kubeconfig "
                             "names none)") +
             detail;
    case X509_V_ERR_CERT_HAS_EXPIRED:
      return msg + "the server's certificate has expired" + detail;
    case X509_V_ERR_CERT_NOT_YET_VALID:
      return msg + "the server's certificate is not valid yet" + detail;
    case X509_V_OK:
    case X509_V_ERR_UNSPECIFIED:  // the host name check (the only verify callback) refused it
      return msg + "the server's certificate is not issued for " + expectedName + detail;
    default:
      return msg + "the server's certificate did not verify" + detail;
  }
}

}  // namespace

Status setHttpIoThreads(size_t threads) {
  if (threads == 0) return makeError(Code::Invalid, "HTTP I/O threads must be positive");
  try {
    crossplat::threadpool::initialize_with_threads(threads);
  } catch (const std::exception& e) {
    return makeError(Code::Invalid, std::string("HTTP I/O threads: ") + e.what());
  }
  return Status::OK();
}

namespace {

class CppRestTransport : public Transport {
 public:
  CppRestTransport(const RestConfig& cfg, std::string certPem, std::string keyPem)
      : server_(cfg.server),
        verifyFailures_(std::make_shared<VerifyFailures>()),
        certPem_(std::move(certPem)),
        keyPem_(std::move(keyPem)),
        caPem_(cfg.caPem),
        hostHeader_(cfg.tlsServerName),
        userAgent_(cfg.userAgent),
        client_(web::uri(cfg.server), makeConfig(cfg, cfg.timeout)),
        streamClient_(web::uri(cfg.server), makeConfig(cfg, kStreamIoTimeout)) {}

  const std::string& certPem() const override { return certPem_; }

  Result<HttpResult> send(const std::string& method, const std::string& pathAndQuery,
                          const std::string& body, const std::string& contentType,
                          const std::string& token) override {
    try {
      web::http::http_request req = makeRequest(method, pathAndQuery, token);
      if (!contentType.empty()) req.set_body(body, contentType);
      web::http::http_response resp = client_.request(req).get();
      HttpResult r;
      r.status = resp.status_code();
      r.body = resp.extract_utf8string(true).get();
      auto ra = resp.headers().find("Retry-After");
      if (ra != resp.headers().end()) r.retryAfter = ra->second;
      return r;
    } catch (const std::exception& e) {
      return transportError(e);
    }
  }

  Status stream(const std::string& pathAndQuery, const std::string& token, std::stop_token stop,
                const std::function<Status(std::string_view)>& onChunk) override {
    pplx::cancellation_token_source cts;
    // The body's buffer, once the headers arrived: stop() closes it to end a blocked read.
    struct Shared {
      base::Mutex mu;
      bool stopped GUARDED_BY(mu) = false;
      std::optional<concurrency::streams::streambuf<uint8_t>> buf GUARDED_BY(mu);
    };
    auto shared = std::make_shared<Shared>();
    std::stop_callback onStop(stop, [&cts, shared] {
      base::MutexLock lock(shared->mu);
      shared->stopped = true;
      cts.cancel();
      if (shared->buf) shared->buf->close(std::ios_base::in).wait();
    });
    try {
      web::http::http_request req = makeRequest("GET", pathAndQuery, token);
      web::http::http_response resp = streamClient_.request(req, cts.get_token()).get();
      if (resp.status_code() != 200) {
        std::string body = resp.extract_utf8string(true).get();
        return errorFromResponse(resp.status_code(), body);
      }
      auto buf = resp.body().streambuf();
      {
        base::MutexLock lock(shared->mu);
        if (shared->stopped) return Status::OK();
        shared->buf = buf;
      }
      std::string chunk(kReadChunk, '\0');
      auto* data = reinterpret_cast<uint8_t*>(chunk.data());
      for (;;) {
        // Wait for one byte, then take whatever else has arrived.
        size_t n = buf.getn(data, 1).get();
        if (n == 0) break;  // end of body
        size_t avail = buf.in_avail();
        if (avail > 0) n += buf.getn(data + 1, std::min(avail, kReadChunk - 1)).get();
        Status s = onChunk(std::string_view(chunk.data(), n));
        if (!s.ok()) return s;
        if (stop.stop_requested()) return Status::OK();
      }
      return Status::OK();
    } catch (const pplx::task_canceled&) {
      return stop.stop_requested() ? Status::OK()
                                   : Status(makeError(Code::Unavailable, "stream canceled"));
    } catch (const std::exception& e) {
      if (stop.stop_requested()) return Status::OK();
      Error err = transportError(e);
      err.message = "stream " + pathAndQuery + ": " + err.message;
      return err;
    }
  }

 private:
  web::http::http_request makeRequest(const std::string& method, const std::string& pathAndQuery,
                                      const std::string& token) {
    web::http::http_request req(method);
    req.set_request_uri(pathAndQuery);
    req.headers().add("Accept", "application/json");
    req.headers().add("User-Agent", userAgent_);
    if (!hostHeader_.empty()) req.headers().add("Host", hostHeader_);
    if (!token.empty()) req.headers().add("Authorization", "Bearer " + token);
    return req;
  }

  Error transportError(const std::exception& e) {
    if (auto* he = dynamic_cast<const web::http::http_exception*>(&e)) {
      if (he->error_code() == std::errc::timed_out) {
        return makeError(Code::ServerTimeout, std::string("request timed out: ") + e.what());
      }
    }
    std::string what = e.what();
    if (what.find("SSL handshake") != std::string::npos ||
        what.find("handshake") != std::string::npos) {
      std::string expectedName =
          hostHeader_.empty() ? web::uri(server_).host() : hostHeader_;
      return makeError(Code::Unavailable,
                       handshakeFailure(server_, expectedName, !caPem_.empty(),
                                        verifyFailures_->take(), what));
    }
    return makeError(Code::Unavailable, what);
  }

  http_client_config makeConfig(const RestConfig& cfg, std::chrono::milliseconds timeout) {
    http_client_config c;
    c.set_timeout(timeout);
    c.set_validate_certificates(!cfg.insecureSkipTlsVerify);
    std::string ca = caPem_, cert = certPem_, key = keyPem_;
    std::shared_ptr<VerifyFailures> failures = verifyFailures_;
    c.set_ssl_context_callback([ca, cert, key, failures](boost::asio::ssl::context& ctx) {
      SSL_CTX_set_cert_verify_callback(ctx.native_handle(), &VerifyFailures::verify,
                                       failures.get());
      if (!ca.empty()) {
        // Trust only the configured CA, as client-go does with certificate-authority.
        SSL_CTX_set_cert_store(ctx.native_handle(), X509_STORE_new());
        ctx.add_certificate_authority(boost::asio::buffer(ca));
      }
      if (!cert.empty()) {
        ctx.use_certificate_chain(boost::asio::buffer(cert));
        ctx.use_private_key(boost::asio::buffer(key), boost::asio::ssl::context::pem);
      }
    });
    return c;
  }

  const std::string server_;
  const std::shared_ptr<VerifyFailures> verifyFailures_;  // outlives the TLS contexts
  const std::string certPem_;
  const std::string keyPem_;
  const std::string caPem_;
  const std::string hostHeader_;
  const std::string userAgent_;
  http_client client_;
  http_client streamClient_;
};

}  // namespace

Result<std::shared_ptr<Transport>> Transport::make(const RestConfig& cfg,
                                                   const std::string& certPem,
                                                   const std::string& keyPem) {
  if (!cfg.caPem.empty()) {
    if (auto s = checkPem(cfg.caPem, false, "certificate-authority"); !s) return s.error();
  }
  if (!certPem.empty() || !keyPem.empty()) {
    if (auto s = checkPem(certPem, false, "client-certificate"); !s) return s.error();
    if (auto s = checkPem(keyPem, true, "client-key"); !s) return s.error();
  }
  try {
    return std::shared_ptr<Transport>(std::make_shared<CppRestTransport>(cfg, certPem, keyPem));
  } catch (const std::exception& e) {
    return makeError(Code::Invalid, "server \"" + cfg.server + "\": " + e.what());
  }
}

}  // namespace strait::kube

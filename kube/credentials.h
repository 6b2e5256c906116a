#pragma once
// Request credentials for a Client: a static token, a token file (re-read at most once a
// minute, as client-go does for rotating service-account tokens), or an exec credential
// plugin (client.authentication.k8s.io v1/v1beta1) whose ExecCredential is cached until its
// expirationTimestamp and re-run after a 401.
//
// Thread-safe: get() and invalidate() may be called from any thread; a plugin runs at most
// once at a time (concurrent callers wait for its result).

#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "base/thread_annotations.h"
#include "kube/kubeconfig.h"
#include "kube/status.h"

namespace strait::kube {

struct Credentials {
  std::string token;          // bearer token; empty if none
  std::string clientCertPem;  // client certificate from the config or the plugin; may be empty
  std::string clientKeyPem;
  // When the plugin said these expire; nullopt = no expiry.
  std::optional<std::chrono::system_clock::time_point> expiry;
  bool operator==(const Credentials&) const = default;
};

// Parses a plugin's stdout (an ExecCredential of `apiVersion`). `where` names the plugin for
// errors. Unauthorized for a wrong kind/apiVersion, missing status, malformed JSON, PEM or
// timestamp.
Result<Credentials> parseExecCredential(const std::string& output, const std::string& apiVersion,
                                        const std::string& where);

class CredentialSource {
 public:
  using Clock = std::function<std::chrono::system_clock::time_point()>;
  // Constructor does no I/O. `clock` is injectable for tests (default system_clock::now).
  explicit CredentialSource(const RestConfig& cfg, Clock clock = {});

  // Current credentials: the cached ones while valid, else re-read/re-run. May block while a
  // plugin runs (bounded by its 60 s timeout). Errors: Unauthorized naming the token file or
  // plugin (with the plugin's stderr) when they cannot be obtained.
  Result<Credentials> get();
  // Called after the server answered 401 to a request made with `used`: drops the cache so
  // the next get() re-reads the token file or re-runs the plugin. Returns true if a retry
  // may help (a token file or plugin is configured).
  bool invalidate(const Credentials& used);
  // True when the credentials can change over time (token file or plugin).
  bool dynamic() const { return !cfg_.bearerTokenFile.empty() || cfg_.exec.has_value(); }

 private:
  Result<Credentials> runPlugin();

  RestConfig cfg_;
  Clock clock_;
  base::Mutex mu_;  // held while a plugin runs
  std::optional<Credentials> cached_ GUARDED_BY(mu_);
  std::chrono::system_clock::time_point readAt_ GUARDED_BY(mu_){};
};

}  // namespace strait::kube

#pragma once
// Benchmark support: a `strait minicluster` server process and a minimal HTTPS client for
// it (Boost.Beast + asio::ssl, client certificates from the admin kubeconfig).
//
// The Beast/Asio headers stay inside bench_client.cpp. Not thread-safe per object: each
// thread owns its ApiConnection; ServerProcess is driven from the main thread only.

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace strait::bench {

// Where the server listens and the admin credentials, from a minicluster kubeconfig.
struct ClusterAccess {
  std::string host;  // 127.0.0.1
  std::string port;  // decimal
  std::string caPem;
  std::string certPem;
  std::string keyPem;
};

// Parses the kubeconfig at `path` (current-context; base64 *-data fields). Returns nullopt
// with *error set when the file is missing, incomplete or malformed.
std::optional<ClusterAccess> loadKubeconfig(const std::string& path, std::string* error);

// A `strait minicluster` child process in its own process group, stdout/stderr to files.
// The destructor stops it (SIGTERM, then SIGKILL after a grace period).
class ServerProcess {
 public:
  ServerProcess() = default;
  ~ServerProcess() { stop(); }
  ServerProcess(const ServerProcess&) = delete;
  ServerProcess& operator=(const ServerProcess&) = delete;

  // Starts `strait minicluster --name bench --listen 127.0.0.1:0 --kubeconfig-out
  // workDir/kubeconfig` (plus --data-dir workDir/data when `durable`) and waits up to
  // `deadline` for a parseable kubeconfig. Returns the access data, or nullopt with *error
  // set (including the server's stderr). May be called once.
  std::optional<ClusterAccess> start(const std::string& straitPath, const std::string& workDir,
                                     bool durable, std::chrono::milliseconds deadline,
                                     std::string* error,
                                     const std::vector<std::string>& extraArgs = {});
  // SIGTERM, then SIGKILL after `grace`. Idempotent.
  void stop(std::chrono::milliseconds grace = std::chrono::seconds(10));
  pid_t pid() const { return pid_; }
  // VmRSS of the server in KiB from /proc/<pid>/status; -1 if unreadable.
  long rssKiB() const;

 private:
  pid_t pid_ = -1;
  std::string stderrPath_;
};

// The `strait` binary in this program's directory or the nearest one above it (the build
// dir); "" if none. `argv0` is used when /proc/self/exe cannot be read.
std::string straitBesideThisBinary(const char* argv0);

inline double secondsBetween(std::chrono::steady_clock::time_point a,
                             std::chrono::steady_clock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

struct ApiResponse {
  int status = 0;
  std::string body;
};

// One keep-alive HTTPS connection to the API server. Constructing does no I/O.
class ApiConnection {
 public:
  explicit ApiConnection(const ClusterAccess& access);
  ~ApiConnection();
  ApiConnection(const ApiConnection&) = delete;
  ApiConnection& operator=(const ApiConnection&) = delete;

  // TCP connect + TLS handshake with the client certificate. False with *error on failure.
  bool connect(std::string* error);
  // Sends one request (body with Content-Type application/json when non-empty) and reads
  // the whole response. Reconnects once if the server closed the kept-alive connection.
  // Blocks. False with *error on a transport failure (an HTTP error status is not one).
  bool request(const std::string& method, const std::string& target, const std::string& body,
               ApiResponse* out, std::string* error);
  // Sends a GET and feeds the (de-chunked) response body to `onData` as it arrives, until
  // the server ends the stream, `onData` returns false, or a transport error. `onData` is
  // first called once with an empty view when the response headers have arrived. Blocks.
  // Returns the HTTP status (0 on transport failure, *error set).
  int stream(const std::string& target, const std::function<bool(std::string_view)>& onData,
             std::string* error);
  // Shuts the socket down so that a blocked stream() returns. Callable from another thread
  // once stream() has passed its first onData call.
  void abort();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// Polls GET /api/v1/nodes/<node> on `probe` every 100 ms until its Ready condition is True
// (true) or `timeout` passes (false).
bool waitForNodeReady(ApiConnection& probe, const std::string& node,
                      std::chrono::milliseconds timeout);

}  // namespace strait::bench

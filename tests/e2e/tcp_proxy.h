#pragma once
// A TCP forwarder on 127.0.0.1:<ephemeral> to an upstream port, for tests that need to cut
// a client's connections without stopping the server (dropped watches, missed events).
// cut() closes every forwarded connection and refuses new ones until resume().
//
// Thread-safe; one background thread accepts and one thread per connection pumps bytes.

#include <atomic>
#include <cstdint>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

namespace strait::e2e {

class TcpProxy {
 public:
  // `upstreamPort` 0: set it with setUpstreamPort() before the first connection (when the
  // upstream must be told the proxy's port before it starts).
  explicit TcpProxy(uint16_t upstreamPort) : upstreamPort_(upstreamPort) {}
  ~TcpProxy() { stop(); }
  TcpProxy(const TcpProxy&) = delete;
  TcpProxy& operator=(const TcpProxy&) = delete;

  // Binds and starts accepting; "" or the error.
  std::string start();
  uint16_t port() const { return port_; }
  // Connections accepted from now on go to `upstreamPort`.
  void setUpstreamPort(uint16_t upstreamPort) { upstreamPort_ = upstreamPort; }
  // Closes all open connections; new ones are closed at once until resume().
  void cut();
  void resume();
  // Stops accepting, closes everything, joins the threads. Idempotent.
  void stop();
  // Bytes forwarded so far in both directions over all connections (a benchmark's
  // stream-bytes counter).
  uint64_t bytesForwarded() const { return bytes_.load(); }
  // The same, client to upstream only / upstream to client only.
  uint64_t bytesToUpstream() const { return bytesToUpstream_.load(); }
  uint64_t bytesFromUpstream() const { return bytesFromUpstream_.load(); }

 private:
  void acceptLoop();
  void pump(int client);

  std::atomic<uint16_t> upstreamPort_;
  uint16_t port_ = 0;
  int listenFd_ = -1;
  std::atomic<bool> stopping_{false};
  std::atomic<bool> cut_{false};
  std::atomic<uint64_t> bytes_{0};
  std::atomic<uint64_t> bytesToUpstream_{0}, bytesFromUpstream_{0};
  std::thread acceptor_;
  std::mutex mu_;  // guards the fields below
  std::set<int> open_;  // every live socket (both sides)
  std::vector<std::thread> pumps_;
};

}  // namespace strait::e2e

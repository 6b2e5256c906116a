#pragma once
// WireGuard's cross-platform userspace API (https://www.wireguard.com/xplatform/): a unix
// socket /var/run/wireguard/NAME.sock speaking "get=1" / "set=1" key=value requests, so that
// `wg show NAME` and `wg set NAME ...` work against a Strait gateway.
//
// Thread-safe: one accept thread serves connections one at a time; start() once, stop()
// from any thread (idempotent).

#include <atomic>
#include <string>
#include <thread>

#include "base/status.h"
#include "tunnel/device.h"

namespace strait::tunnel {

// Answers one request ("get=1\n\n" or "set=1\n...\n\n", without the final blank line is
// fine) against `device`; returns the full response including "errno=N\n\n".
std::string handleUapiRequest(Device& device, const std::string& request);

class UapiServer {
 public:
  UapiServer(Device& device, std::string interfaceName,
             std::string directory = "/var/run/wireguard")
      : device_(device), name_(std::move(interfaceName)), directory_(std::move(directory)) {}
  ~UapiServer() { stop(); }
  UapiServer(const UapiServer&) = delete;
  UapiServer& operator=(const UapiServer&) = delete;

  // Creates the directory (0755) and the socket (0600), replacing a stale socket file but
  // refusing (AlreadyExists) when another process still listens on it.
  base::Status start();
  // Stops serving and removes the socket file.
  void stop();
  std::string socketPath() const { return directory_ + "/" + name_ + ".sock"; }

 private:
  void serve();

  Device& device_;
  const std::string name_;
  const std::string directory_;
  int listenFd_ = -1;
  int stopFd_ = -1;
  std::atomic<bool> running_{false};
  std::thread thread_;
};

}  // namespace strait::tunnel

#pragma once
// Network-namespace lab for the tunnel's system tests (needs root): two namespaces joined
// by a veth pair (10.99.0.1/24 <-> 10.99.0.2/24), processes started inside them, and
// everything removed on destruction — processes stopped by pid, namespaces deleted — even
// when the test fails. Names carry the test process id so parallel runs do not collide
// (the UAPI socket directory /var/run/wireguard is shared by all namespaces).
//
// Not thread-safe: use from the test thread.
#include <memory>
#include <string>
#include <vector>

#include "e2e/cluster_fixture.h"

namespace strait::tunnel::testing {

class NetnsLab {
 public:
  NetnsLab();
  ~NetnsLab();
  NetnsLab(const NetnsLab&) = delete;
  NetnsLab& operator=(const NetnsLab&) = delete;

  // Creates the namespaces and the veth. Returns "" or what failed.
  std::string setUp();
  // Why the lab cannot run here ("" if it can): not root, or a tool missing.
  static std::string unavailableReason();

  // Creates one more namespace, named with the lab's tag and `suffix`, deleted with the
  // others. Returns its name, or "" after adding a test failure saying what went wrong.
  std::string addNamespace(const std::string& suffix);
  // Runs argv inside namespace `ns` and waits.
  e2e::CommandResult exec(const std::string& ns, const std::vector<std::string>& argv,
                          std::chrono::milliseconds timeout = std::chrono::seconds(60));
  // Starts argv inside `ns` in the background; output in dir()/<label>.{out,err}.
  e2e::BackgroundProcess& spawn(const std::string& ns, const std::vector<std::string>& argv,
                                const std::string& label, const e2e::Env& env = {});
  // A unique interface name (<= 15 characters) with `suffix`.
  std::string ifname(const std::string& suffix) const { return tag_ + suffix; }
  // Waits for /var/run/wireguard/<iface>.sock.
  bool waitForUapi(const std::string& iface, std::chrono::milliseconds deadline);

  const std::string& a() const { return a_; }
  const std::string& b() const { return b_; }
  const std::string& dir() const { return dir_.path(); }
  std::string file(const std::string& name) const { return dir_.file(name); }

 private:
  std::string tag_, a_, b_;
  std::vector<std::string> extra_;  // addNamespace()
  e2e::TempDir dir_;
  bool created_ = false;
  std::vector<std::unique_ptr<e2e::BackgroundProcess>> processes_;
};

// `wg genkey` / `wg pubkey` pair, base64.
struct WgKeys {
  std::string privateKey, publicKey;
};
WgKeys wgKeys();

}  // namespace strait::tunnel::testing

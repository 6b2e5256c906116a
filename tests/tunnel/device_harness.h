#pragma once
// In-process harness for Device tests: devices on 127.0.0.1 UDP ports, each with a
// socketpair standing in for its TUN (the test writes "outgoing" IP packets into one end and
// reads delivered ones from it). Real sockets, real crypto, no root needed.
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "tunnel/device.h"

namespace strait::tunnel::testing {

// An IPv4/UDP packet from `src` to `dst` whose payload starts with `seq` (big-endian u32).
std::vector<uint8_t> udpPacket(const char* src, const char* dst, uint32_t seq, size_t payload = 64);
// The seq of a packet built by udpPacket.
uint32_t seqOf(const std::vector<uint8_t>& packet);

struct TestDevice {
  explicit TestDevice(DeviceOptions options = {});
  ~TestDevice();
  // Starts the device on a free port.
  void start();
  // Writes a packet as if the OS routed it into the tunnel.
  void inject(const std::vector<uint8_t>& packet);
  // Next packet the tunnel delivered, or nullopt after `timeout`.
  std::optional<std::vector<uint8_t>> deliver(std::chrono::milliseconds timeout);
  Endpoint endpoint() const;

  PrivateKey key = generatePrivateKey();
  PublicKey pub{};
  std::unique_ptr<Device> device;
  int tunDevice = -1;  // the device's end
  int tunTest = -1;    // the test's end
};

// Peers `a` and `b`: a knows b at b's port with allowed `bAllowed`, and the other way round.
// `aKnowsEndpoint`/`bKnowsEndpoint` decide who can initiate.
void connect(TestDevice& a, TestDevice& b, const std::string& aAllowed, const std::string& bAllowed,
             bool aKnowsEndpoint = true, bool bKnowsEndpoint = true,
             std::optional<Endpoint> via = std::nullopt);

}  // namespace strait::tunnel::testing

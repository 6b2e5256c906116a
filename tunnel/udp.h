#pragma once
// The device's UDP socket: dual-stack (IPv6 with v4-mapped addresses), blocking sends
// (back-pressure) and non-blocking receives, with
// batched receive (recvmmsg) and send (sendmmsg), and UDP GRO/GSO when the kernel has them.
//
// Thread-safe: receive() from one thread, send() from any number of threads.

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "base/status.h"
#include "tunnel/ip.h"

namespace strait::tunnel {

struct OutPacket {
  const uint8_t* data = nullptr;
  size_t length = 0;
  Endpoint to;
};

struct InPacket {
  uint8_t* data = nullptr;
  size_t length = 0;
  Endpoint from;
};

// Receive buffers reused across calls by the receiving thread.
struct ReceiveBuffers {
  explicit ReceiveBuffers(size_t count, size_t size = 65536);
  std::vector<std::vector<uint8_t>> slots;
  std::vector<InPacket> packets;  // filled by receive()
};

class UdpSocket {
 public:
  // Binds [::]:port (0 = any free port), falling back to 0.0.0.0 when IPv6 is off.
  // `offload` asks for UDP GRO (receive) and GSO (send).
  static base::Result<std::shared_ptr<UdpSocket>> open(uint16_t port, bool offload);
  ~UdpSocket();
  UdpSocket(const UdpSocket&) = delete;
  UdpSocket& operator=(const UdpSocket&) = delete;

  int fd() const { return fd_; }
  uint16_t port() const { return port_; }
  bool gro() const { return gro_; }
  bool gso() const { return gso_; }

  // Reads the datagrams waiting (never blocks) into `buffers.packets`, splitting GRO
  // super-datagrams into their segments. Returns how many; 0 when nothing waits.
  size_t receive(ReceiveBuffers& buffers);
  // Sends each packet; runs of equal-size packets to one endpoint go out as one GSO send
  // when available. Errors drop packets (UDP is lossy); returns how many were sent.
  size_t send(std::span<const OutPacket> packets);

 private:
  UdpSocket() = default;
  int fd_ = -1;
  int family_ = 0;
  uint16_t port_ = 0;
  bool gro_ = false;
  bool gso_ = false;
};

}  // namespace strait::tunnel

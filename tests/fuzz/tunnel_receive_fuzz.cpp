// libFuzzer target over the tunnel's receive path (Device::handleDatagram).
//
// The first input byte picks what the rest becomes:
//   0: a raw UDP datagram;
//   1/2: a handshake initiation/response built from the bytes, with a valid mac1 so that it
//        reaches the Noise decryption;
//   3: the plaintext of a transport packet, encrypted under a real session with the device,
//      so that it reaches the inner-packet checks, allowed IPs and the CIDR remap.
// The session is set up once: the harness plays the peer with the noise functions and its
// own loopback UDP socket (the device is started on 127.0.0.1, port 0).
#include <arpa/inet.h>
#include <poll.h>
#include <spdlog/spdlog.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "tunnel/cookie.h"
#include "tunnel/device.h"
#include "tunnel/noise.h"

using namespace strait::tunnel;

namespace {

struct Harness {
  std::unique_ptr<Device> device;
  StaticIdentity peer;
  PublicKey devicePub{};
  CookieGenerator macs;
  Endpoint peerEndpoint;
  std::optional<SessionKeys> session;
  uint64_t counter = 0;
  int tun[2] = {-1, -1};
  int sock = -1;

  Harness() {
    spdlog::set_level(spdlog::level::off);
    DeviceOptions o;
    device = std::make_unique<Device>(o);
    PrivateKey key = generatePrivateKey();
    devicePub = *publicKeyOf(key);
    if (!device->setPrivateKey(key).ok()) std::abort();
    peer.privateKey = generatePrivateKey();
    peer.publicKey = *publicKeyOf(peer.privateKey);
    peer.set = true;
    PeerUpdate u;
    u.addAllowedIps = {*IpPrefix::parse("0.0.0.0/0"), *IpPrefix::parse("::/0")};
    u.remap = PrefixRemap::parse("10.200.0.0/16 -> 10.201.0.0/16").value();
    if (!device->updatePeer(peer.publicKey, u).ok()) std::abort();
    macs.init(devicePub);
    socketpair(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0, tun);
    if (!device->start(tun[0]).ok()) std::abort();
    sock = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    sockaddr_in sa{};
    sa.sin_family = AF_INET;
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    bind(sock, reinterpret_cast<sockaddr*>(&sa), sizeof sa);
    socklen_t len = sizeof sa;
    getsockname(sock, reinterpret_cast<sockaddr*>(&sa), &len);
    peerEndpoint = Endpoint::fromSockaddr(reinterpret_cast<sockaddr*>(&sa));
    establish();
  }

  void establish() {
    Handshake hs;
    hs.setRemoteStatic(peer, devicePub);
    MessageInitiation init;
    if (!createInitiation(peer, hs, 4242, tai64nNow(), init)) std::abort();
    macs.addMacs(MutableBytes(reinterpret_cast<uint8_t*>(&init), sizeof init),
                 std::chrono::steady_clock::now());
    device->handleDatagram(reinterpret_cast<uint8_t*>(&init), sizeof init, peerEndpoint);
    pollfd p{sock, POLLIN, 0};
    MessageResponse resp;
    if (poll(&p, 1, 5000) <= 0 || recv(sock, &resp, sizeof resp, 0) != sizeof resp ||
        !consumeResponse(peer, hs, resp)) {
      std::fprintf(stderr, "fuzz harness: no handshake response\n");
      std::abort();
    }
    session = beginSession(hs);
    send(nullptr, 0);  // confirms the session on the device side
  }

  // Encrypts `plain` as the next transport packet and hands it to the device.
  void send(const uint8_t* plain, size_t n) {
    size_t padded = (n + 15) / 16 * 16;
    std::vector<uint8_t> msg(16 + padded + 16, 0);
    MessageTransportHeader h{kMessageTransportType, session->remoteIndex, counter};
    std::memcpy(msg.data(), &h, sizeof h);
    if (n) std::memcpy(msg.data() + 16, plain, n);
    aeadSeal(session->send.data(), counter, Bytes(msg.data() + 16, padded), Bytes(),
             msg.data() + 16);
    ++counter;
    device->handleDatagram(msg.data(), msg.size(), peerEndpoint);
  }

  void drain() {
    uint8_t buf[65536];
    while (recv(tun[1], buf, sizeof buf, MSG_DONTWAIT) > 0) {
    }
    while (recv(sock, buf, sizeof buf, MSG_DONTWAIT) > 0) {
    }
  }
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static Harness h;
  if (size == 0) return 0;
  uint8_t mode = data[0] % 4;
  std::vector<uint8_t> body(data + 1, data + size);
  switch (mode) {
    case 0:
      h.device->handleDatagram(body.data(), body.size(), h.peerEndpoint);
      break;
    case 1:
    case 2: {
      size_t len = mode == 1 ? sizeof(MessageInitiation) : sizeof(MessageResponse);
      body.resize(len, 0);
      uint32_t type = mode;
      std::memcpy(body.data(), &type, 4);
      h.macs.addMacs(MutableBytes(body.data(), len), std::chrono::steady_clock::now());
      h.device->handleDatagram(body.data(), body.size(), h.peerEndpoint);
      break;
    }
    case 3:
      if (body.size() > 65000) body.resize(65000);
      h.send(body.data(), body.size());
      break;
  }
  h.drain();
  return 0;
}

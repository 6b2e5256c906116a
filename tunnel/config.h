#pragma once
// The gateway's configuration file: wg-quick syntax.
//
//   [Interface]                      [Peer]                         (any number)
//   PrivateKey = base64              PublicKey = base64
//   ListenPort = 51820               PresharedKey = base64
//   Address = 10.100.0.1/24, ...     Endpoint = host:port
//   MTU = 1420                       AllowedIPs = 10.100.0.2/32, ...
//                                    PersistentKeepalive = 25 | off
//                                    Remap = 10.200.0.0/16 -> 10.201.0.0/16   (Strait)
//
// Keys are case-insensitive; '#' starts a comment. wg-quick's host-side keys (DNS, Table,
// PreUp, PostUp, PreDown, PostDown, SaveConfig, FwMark) are accepted and ignored (listed in
// `ignoredKeys`). Any other key, a bad value or a missing PrivateKey/PublicKey is an error
// naming the file, line and key. Remap's AllowedIPs are in local (remapped) addresses.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "base/status.h"
#include "tunnel/crypto.h"
#include "tunnel/ip.h"
#include "tunnel/remap.h"

namespace strait::tunnel {

struct PeerConfig {
  PublicKey publicKey{};
  std::optional<SymmetricKey> presharedKey;
  std::optional<Endpoint> endpoint;
  std::vector<IpPrefix> allowedIps;
  uint16_t persistentKeepalive = 0;  // seconds; 0 = off
  std::optional<PrefixRemap> remap;
};

struct InterfaceConfig {
  PrivateKey privateKey;
  uint16_t listenPort = 0;  // 0 = pick a free port
  std::vector<IpPrefix> addresses;
  int mtu = 0;  // 0 = default
  std::vector<PeerConfig> peers;
  std::vector<std::string> ignoredKeys;  // "line N: Key"
};

// Parses a configuration. `origin` names the source in messages (a path).
base::Result<InterfaceConfig> parseConfig(const std::string& text, const std::string& origin);
// Reads and parses a file.
base::Result<InterfaceConfig> loadConfigFile(const std::string& path);

}  // namespace strait::tunnel

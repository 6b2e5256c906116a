#include "tunnel/config.h"

#include <algorithm>
#include <charconv>
#include <fstream>
#include <sstream>

namespace strait::tunnel {

using base::Code;
using base::makeError;

namespace {

std::string trim(const std::string& s) {
  size_t b = s.find_first_not_of(" \t\r");
  if (b == std::string::npos) return "";
  return s.substr(b, s.find_last_not_of(" \t\r") - b + 1);
}

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
  return s;
}

std::vector<std::string> splitList(const std::string& v) {
  std::vector<std::string> out;
  std::stringstream ss(v);
  std::string item;
  while (std::getline(ss, item, ',')) {
    item = trim(item);
    if (!item.empty()) out.push_back(item);
  }
  return out;
}

std::optional<long> parseNumber(const std::string& v, long min, long max) {
  long n = 0;
  auto [p, ec] = std::from_chars(v.data(), v.data() + v.size(), n);
  if (v.empty() || ec != std::errc() || p != v.data() + v.size() || n < min || n > max) {
    return std::nullopt;
  }
  return n;
}

const char* kIgnored[] = {"dns",     "table",    "preup",      "postup",
                          "predown", "postdown", "saveconfig", "fwmark"};

}  // namespace

base::Result<InterfaceConfig> parseConfig(const std::string& text, const std::string& origin) {
  InterfaceConfig cfg;
  enum class Section { None, Interface, Peer } section = Section::None;
  bool sawInterface = false, sawPrivateKey = false, peerHasKey = false;
  int peerLine = 0;
  std::istringstream in(text);
  std::string raw;
  int lineNo = 0;
  auto fail = [&](const std::string& what) {
    return makeError(Code::Invalid, origin + ":" + std::to_string(lineNo) + ": " + what);
  };
  auto endPeer = [&]() -> std::optional<base::Error> {
    if (section == Section::Peer && !peerHasKey) {
      return makeError(Code::Invalid,
                       origin + ":" + std::to_string(peerLine) + ": [Peer] has no PublicKey");
    }
    return std::nullopt;
  };
  while (std::getline(in, raw)) {
    ++lineNo;
    std::string line = trim(raw.substr(0, raw.find('#')));
    if (line.empty()) continue;
    if (line.front() == '[') {
      if (auto e = endPeer()) return *e;
      std::string name = lower(line);
      if (name == "[interface]") {
        if (sawInterface) return fail("second [Interface] section");
        sawInterface = true;
        section = Section::Interface;
      } else if (name == "[peer]") {
        section = Section::Peer;
        cfg.peers.emplace_back();
        peerHasKey = false;
        peerLine = lineNo;
      } else {
        return fail("unknown section " + line + " (expected [Interface] or [Peer])");
      }
      continue;
    }
    size_t eq = line.find('=');
    if (eq == std::string::npos) return fail("expected Key = Value, got \"" + line + "\"");
    std::string keyName = trim(line.substr(0, eq));
    std::string key = lower(keyName);
    std::string value = trim(line.substr(eq + 1));
    if (section == Section::None) return fail(keyName + " outside of a section");
    if (std::find(std::begin(kIgnored), std::end(kIgnored), key) != std::end(kIgnored)) {
      cfg.ignoredKeys.push_back("line " + std::to_string(lineNo) + ": " + keyName);
      continue;
    }
    if (section == Section::Interface) {
      if (key == "privatekey") {
        auto k = keyFromBase64(value);
        if (!k) return fail("PrivateKey is not a base64 32-byte key");
        std::copy(k->begin(), k->end(), cfg.privateKey.data());
        wipeMemory(k->data(), k->size());
        sawPrivateKey = true;
      } else if (key == "listenport") {
        auto n = parseNumber(value, 0, 65535);
        if (!n) return fail("ListenPort must be 0..65535, got \"" + value + "\"");
        cfg.listenPort = static_cast<uint16_t>(*n);
      } else if (key == "address") {
        for (const std::string& a : splitList(value)) {
          auto p = IpPrefix::parse(a);
          if (!p.ok()) return fail("Address: " + p.error().message);
          // Keep the host address (parse masks it): Address is an interface address.
          auto host = IpAddress::parse(a.substr(0, a.find('/')));
          p->address = *host;
          cfg.addresses.push_back(*p);
        }
      } else if (key == "mtu") {
        auto n = parseNumber(value, 576, 65535);
        if (!n) return fail("MTU must be 576..65535, got \"" + value + "\"");
        cfg.mtu = static_cast<int>(*n);
      } else {
        return fail("unknown key " + keyName + " in [Interface]");
      }
      continue;
    }
    PeerConfig& peer = cfg.peers.back();
    if (key == "publickey") {
      auto k = keyFromBase64(value);
      if (!k) return fail("PublicKey is not a base64 32-byte key");
      peer.publicKey = *k;
      peerHasKey = true;
    } else if (key == "presharedkey") {
      auto k = keyFromBase64(value);
      if (!k) return fail("PresharedKey is not a base64 32-byte key");
      SymmetricKey psk;
      std::copy(k->begin(), k->end(), psk.data());
      wipeMemory(k->data(), k->size());
      peer.presharedKey = psk;
    } else if (key == "endpoint") {
      auto e = Endpoint::parse(value);
      if (!e.ok()) return fail("Endpoint: " + e.error().message);
      peer.endpoint = *e;
    } else if (key == "allowedips") {
      for (const std::string& a : splitList(value)) {
        auto p = IpPrefix::parse(a);
        if (!p.ok()) return fail("AllowedIPs: " + p.error().message);
        peer.allowedIps.push_back(*p);
      }
    } else if (key == "persistentkeepalive") {
      if (lower(value) == "off") {
        peer.persistentKeepalive = 0;
      } else {
        auto n = parseNumber(value, 0, 65535);
        if (!n) return fail("PersistentKeepalive must be off or 0..65535, got \"" + value + "\"");
        peer.persistentKeepalive = static_cast<uint16_t>(*n);
      }
    } else if (key == "remap") {
      auto r = PrefixRemap::parse(value);
      if (!r.ok()) return fail(r.error().message);
      peer.remap = *r;
    } else {
      return fail("unknown key " + keyName + " in [Peer]");
    }
  }
  if (auto e = endPeer()) return *e;
  if (!sawInterface) {
    return makeError(Code::Invalid, origin + ": no [Interface] section");
  }
  if (!sawPrivateKey) {
    return makeError(Code::Invalid, origin + ": [Interface] has no PrivateKey");
  }
  for (size_t i = 0; i < cfg.peers.size(); ++i) {
    for (size_t j = i + 1; j < cfg.peers.size(); ++j) {
      if (cfg.peers[i].publicKey == cfg.peers[j].publicKey) {
        return makeError(Code::Invalid, origin + ": two [Peer] sections have PublicKey " +
                                            keyToBase64(cfg.peers[i].publicKey));
      }
    }
  }
  return cfg;
}

base::Result<InterfaceConfig> loadConfigFile(const std::string& path) {
  std::ifstream f(path);
  if (!f) return makeError(Code::NotFound, "cannot read config file " + path);
  std::stringstream ss;
  ss << f.rdbuf();
  return parseConfig(ss.str(), path);
}

}  // namespace strait::tunnel

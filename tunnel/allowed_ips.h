#pragma once
// Allowed IPs: a longest-prefix-match table from IP prefixes to a value (a peer). Used
// both ways: to pick the peer a packet from the TUN goes to (by destination), and to check
// that a decrypted packet's source belongs to the peer that sent it (cryptokey routing).
//
// Lookup walks the prefix lengths present, longest first, with one hash probe each, so a
// table holding a few distinct lengths costs a few probes whatever its size.
//
// Not thread-safe: the device guards it with its peer-table lock (readers shared).

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <optional>
#include <unordered_map>
#include <vector>

#include "tunnel/ip.h"

namespace strait::tunnel {

template <class V>
class AllowedIps {
 public:
  // Maps `prefix` to `value`, replacing any value it had (a prefix belongs to one peer).
  void insert(const IpPrefix& prefix, V value) {
    levelFor(prefix.address.family, prefix.bits).entries[keyOf(prefix.address, prefix.bits)] =
        value;
  }
  // Removes `prefix`; false if it was absent.
  bool remove(const IpPrefix& prefix) {
    for (Level& l : levels(prefix.address.family)) {
      if (l.bits == prefix.bits) return l.entries.erase(keyOf(prefix.address, prefix.bits)) > 0;
    }
    return false;
  }
  // Removes every prefix mapped to `value`.
  void removeValue(const V& value) {
    for (auto* ls : {&v4_, &v6_}) {
      for (Level& l : *ls) std::erase_if(l.entries, [&](auto& e) { return e.second == value; });
    }
  }
  // The value of the longest prefix containing `address`, if any.
  std::optional<V> lookup(const IpAddress& address) const {
    for (const Level& l : levels(address.family)) {
      if (l.entries.empty()) continue;
      auto it = l.entries.find(keyOf(address, l.bits));
      if (it != l.entries.end()) return it->second;
    }
    return std::nullopt;
  }
  // The prefixes mapped to `value`, IPv4 first, longest first.
  std::vector<IpPrefix> prefixesOf(const V& value) const {
    std::vector<IpPrefix> out;
    for (int family : {AF_INET, AF_INET6}) {
      for (const Level& l : levels(family)) {
        for (const auto& [k, v] : l.entries) {
          if (v == value) out.push_back(prefixOf(family, k, l.bits));
        }
      }
    }
    return out;
  }
  size_t size() const {
    size_t n = 0;
    for (auto* ls : {&v4_, &v6_}) {
      for (const Level& l : *ls) n += l.entries.size();
    }
    return n;
  }

 private:
  struct Key {
    uint64_t hi = 0, lo = 0;
    bool operator==(const Key&) const = default;
  };
  struct KeyHash {
    size_t operator()(const Key& k) const {
      return std::hash<uint64_t>()(k.hi * 0x9e3779b97f4a7c15ull ^ k.lo);
    }
  };
  struct Level {
    int bits;
    std::unordered_map<Key, V, KeyHash> entries;
  };

  static Key keyOf(const IpAddress& a, int bits) {
    uint8_t b[16] = {0};
    std::memcpy(b, a.bytes.data(), a.size());
    for (int i = 0; i < 16; ++i) {
      int keep = std::min(8, std::max(0, bits - 8 * i));
      b[i] &= static_cast<uint8_t>(keep == 0 ? 0 : 0xff << (8 - keep));
    }
    Key k;
    for (int i = 0; i < 8; ++i) {
      k.hi = k.hi << 8 | b[i];
      k.lo = k.lo << 8 | b[8 + i];
    }
    return k;
  }
  static IpPrefix prefixOf(int family, const Key& k, int bits) {
    IpPrefix p;
    p.address.family = family;
    p.bits = bits;
    for (int i = 0; i < 8; ++i) {
      p.address.bytes[i] = static_cast<uint8_t>(k.hi >> (56 - 8 * i));
      p.address.bytes[8 + i] = static_cast<uint8_t>(k.lo >> (56 - 8 * i));
    }
    return p;
  }
  std::vector<Level>& levels(int family) { return family == AF_INET ? v4_ : v6_; }
  const std::vector<Level>& levels(int family) const { return family == AF_INET ? v4_ : v6_; }
  Level& levelFor(int family, int bits) {
    std::vector<Level>& ls = levels(family);
    auto it = std::find_if(ls.begin(), ls.end(), [&](const Level& l) { return l.bits <= bits; });
    if (it != ls.end() && it->bits == bits) return *it;
    return *ls.insert(it, Level{bits, {}});
  }

  std::vector<Level> v4_, v6_;  // each sorted by prefix length, longest first
};

}  // namespace strait::tunnel

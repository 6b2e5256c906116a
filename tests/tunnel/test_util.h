#pragma once
// Small helpers shared by the tunnel unit tests.
#include <cstdint>
#include <string>
#include <vector>

namespace strait::tunnel::testing {

inline std::vector<uint8_t> unhex(const std::string& s) {
  std::vector<uint8_t> out;
  for (size_t i = 0; i + 1 < s.size(); i += 2) {
    out.push_back(static_cast<uint8_t>(std::stoi(s.substr(i, 2), nullptr, 16)));
  }
  return out;
}

inline std::string hexOf(const uint8_t* p, size_t n) {
  static const char* d = "0123456789abcdef";
  std::string s;
  for (size_t i = 0; i < n; ++i) {
    s.push_back(d[p[i] >> 4]);
    s.push_back(d[p[i] & 15]);
  }
  return s;
}

template <class C>
std::string hexOf(const C& c) {
  return hexOf(c.data(), c.size());
}

}  // namespace strait::tunnel::testing

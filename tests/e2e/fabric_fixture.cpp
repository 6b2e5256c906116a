// Helpers of the network fabric's e2e fixtures (fabric_fixture.h).
#include "e2e/fabric_fixture.h"

#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <sstream>

namespace strait::e2e {

using json = nlohmann::json;

std::string FabricTestBase::helmBinary() {
  std::filesystem::path helm =
      std::filesystem::path(straitBinary()).parent_path() / "tools" / "helm";
  return ::access(helm.c_str(), X_OK) == 0 ? helm.string() : "";
}

std::string FabricTestBase::trimmed(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ' || s.back() == '\r')) s.pop_back();
  return s;
}

std::vector<std::string> FabricTestBase::lines(const std::string& text) {
  std::vector<std::string> out;
  std::stringstream in(text);
  for (std::string l; std::getline(in, l);) {
    if (!trimmed(l).empty()) out.push_back(trimmed(l));
  }
  return out;
}

// The network namespace of node `node` of process-runtime cluster `cluster`
// ("<marker>-<cluster>-<node>"); "" when there is none.
std::string FabricTestBase::nodeNetns(const std::string& cluster, const std::string& node) {
  for (const std::string& l : lines(runCommand({"ip", "netns", "list"}).out)) {
    std::string name = l.substr(0, l.find(' '));
    std::string suffix = "-" + cluster + "-" + node;
    if (name.size() > suffix.size() && name.compare(0, 2, "st") == 0 &&
        name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0) {
      return name;
    }
  }
  return "";
}

// `ip route` in namespace `ns`, Strait's routes only (rtnetlink protocol 199) when `own`.
std::string FabricTestBase::routesIn(const std::string& ns, bool own) {
  std::vector<std::string> argv = {"ip", "-n", ns, "route", "show"};
  if (own) argv.insert(argv.end(), {"proto", "199"});
  return runCommand(argv).out;
}

// The items of a list (empty when `list` is not one, e.g. a failed kubectl).
json FabricTestBase::items(const json& list) {
  return list.is_object() && list.contains("items") && list["items"].is_array() ? list["items"]
                                                                               : json::array();
}

// An IPv4 address as a 32-bit number; 0 when malformed.
uint32_t FabricTestBase::ipv4(const std::string& text) {
  unsigned a, b, c, d;
  if (std::sscanf(text.c_str(), "%u.%u.%u.%u", &a, &b, &c, &d) != 4) return 0;
  return (a << 24) | (b << 16) | (c << 8) | d;
}
std::string FabricTestBase::ipv4Text(uint32_t v) {
  return std::to_string(v >> 24) + "." + std::to_string((v >> 16) & 255) + "." +
         std::to_string((v >> 8) & 255) + "." + std::to_string(v & 255);
}
bool FabricTestBase::inPrefix(const std::string& ip, const std::string& cidr) {
  int bits = std::stoi(cidr.substr(cidr.find('/') + 1));
  uint32_t mask = bits == 0 ? 0 : ~uint32_t(0) << (32 - bits);
  return (ipv4(ip) & mask) == (ipv4(cidr.substr(0, cidr.find('/'))) & mask);
}
// `ip` moved from its prefix `from` ("10.244.0.0/16") into `to` (same length).
std::string FabricTestBase::translate(const std::string& ip, const std::string& from, const std::string& to) {
  int bits = std::stoi(from.substr(from.find('/') + 1));
  uint32_t mask = bits == 0 ? 0 : ~uint32_t(0) << (32 - bits);
  uint32_t toNet = ipv4(to.substr(0, to.find('/')));
  return ipv4Text((toNet & mask) | (ipv4(ip) & ~mask));
}

}  // namespace strait::e2e

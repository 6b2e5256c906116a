#include "minicluster/simulation.h"

#include <arpa/inet.h>

#include <cctype>

#include "kube/yaml_json.h"

namespace strait::minicluster {
namespace {

using kube::Code;
using kube::makeError;
using kube::Quantity;
using nlohmann::json;

const std::map<std::string, std::string>& defaultCapacity() {
  static const std::map<std::string, std::string> d = {
      {"cpu", "4"}, {"memory", "8Gi"}, {"pods", "110"}, {"ephemeral-storage", "100Gi"}};
  return d;
}

kube::Status fillDefaults(NodePool& p) {
  for (const auto& [k, v] : defaultCapacity()) {
    if (p.capacity.count(k)) continue;
    auto q = Quantity::parse(v);
    if (!q) return q.error();
    p.capacity[k] = *q;
  }
  return kube::Status::OK();
}

std::string scalarText(const json& v) {
  if (v.is_string()) return v.get<std::string>();
  if (v.is_number_integer()) return std::to_string(v.get<int64_t>());
  if (v.is_number()) return v.dump();
  return {};
}

}  // namespace

kube::Result<NodePool> poolFromFlags(int count, const std::string& cpu, const std::string& memory,
                                     const std::string& pods, const std::string& ephemeral) {
  if (count < 0) return makeError(Code::Invalid, "--nodes must be >= 0, got " + std::to_string(count));
  NodePool p;
  p.count = count;
  const std::pair<const char*, const std::string*> flags[] = {
      {"cpu", &cpu}, {"memory", &memory}, {"pods", &pods}, {"ephemeral-storage", &ephemeral}};
  for (const auto& [res, text] : flags) {
    auto q = Quantity::parse(*text);
    if (!q || q->sign() < 0) {
      return makeError(Code::Invalid, std::string("--node-") + res + " " + *text +
                                          ": not a non-negative quantity");
    }
    p.capacity[res] = *q;
  }
  return p;
}

kube::Result<std::vector<NodePool>> parseNodePools(const std::string& yamlText,
                                                   const std::string& source) {
  auto doc = kube::yamlToJson(yamlText);
  if (!doc) return makeError(Code::Invalid, source + ": " + doc.error().message);
  if (!doc->is_object() || !doc->contains("pools") || !(*doc)["pools"].is_array()) {
    return makeError(Code::Invalid, source + ": expected a top-level \"pools\" list");
  }
  std::vector<NodePool> out;
  std::map<std::string, int> prefixes;
  int i = 0;
  for (const json& e : (*doc)["pools"]) {
    std::string where = source + ": pools[" + std::to_string(i++) + "]";
    if (!e.is_object()) return makeError(Code::Invalid, where + ": expected a mapping");
    NodePool p;
    p.namePrefix = e.contains("name") ? scalarText(e["name"]) : "";
    if (p.namePrefix.empty()) return makeError(Code::Invalid, where + ".name: required");
    for (char c : p.namePrefix) {
      if (!(std::islower(static_cast<unsigned char>(c)) || std::isdigit(static_cast<unsigned char>(c)) ||
            c == '-' || c == '.')) {
        return makeError(Code::Invalid, where + ".name: \"" + p.namePrefix +
                                            "\" must be lower-case letters, digits, '-' or '.'");
      }
    }
    if (prefixes[p.namePrefix]++) {
      return makeError(Code::Invalid, where + ".name: \"" + p.namePrefix + "\" used twice");
    }
    if (!e.contains("count") || !e["count"].is_number_integer() || e["count"].get<int64_t>() < 0 ||
        e["count"].get<int64_t>() > 100000) {
      return makeError(Code::Invalid, where + ".count: required, an integer 0-100000");
    }
    p.count = e["count"].get<int>();
    if (e.contains("capacity")) {
      if (!e["capacity"].is_object()) return makeError(Code::Invalid, where + ".capacity: expected a mapping");
      for (const auto& [k, v] : e["capacity"].items()) {
        auto q = Quantity::parse(scalarText(v));
        if (!q || q->sign() < 0) {
          return makeError(Code::Invalid, where + ".capacity." + k + ": \"" + scalarText(v) +
                                              "\" is not a non-negative quantity");
        }
        p.capacity[k] = *q;
      }
    }
    if (e.contains("labels")) {
      if (!e["labels"].is_object()) return makeError(Code::Invalid, where + ".labels: expected a mapping");
      for (const auto& [k, v] : e["labels"].items()) {
        if (!v.is_string() && !v.is_number() && !v.is_boolean()) {
          return makeError(Code::Invalid, where + ".labels." + k + ": expected a scalar");
        }
        p.labels[k] = v.is_string() ? v.get<std::string>() : v.dump();
      }
    }
    if (e.contains("taints")) {
      if (!e["taints"].is_array()) return makeError(Code::Invalid, where + ".taints: expected a list");
      int j = 0;
      for (const json& t : e["taints"]) {
        std::string tw = where + ".taints[" + std::to_string(j++) + "]";
        if (!t.is_object() || !t.contains("key") || !t["key"].is_string()) {
          return makeError(Code::Invalid, tw + ".key: required");
        }
        std::string effect = t.value("effect", "");
        if (effect != "NoSchedule" && effect != "PreferNoSchedule" && effect != "NoExecute") {
          return makeError(Code::Invalid, tw + ".effect: \"" + effect +
                                              "\" must be NoSchedule, PreferNoSchedule or NoExecute");
        }
        json taint = {{"key", t["key"]}, {"effect", effect}};
        if (t.contains("value")) taint["value"] = scalarText(t["value"]);
        p.taints.push_back(taint);
      }
    }
    if (auto s = fillDefaults(p); !s) return s.error();
    out.push_back(std::move(p));
  }
  return out;
}

kube::Result<std::vector<std::string>> splitPodCidr(const std::string& cidr, int maskSize,
                                                    int count) {
  auto slash = cidr.find('/');
  auto bad = [&](const std::string& why) {
    return makeError(Code::Invalid, "pod CIDR \"" + cidr + "\": " + why);
  };
  if (slash == std::string::npos) return bad("expected a.b.c.d/len");
  in_addr addr{};
  if (inet_pton(AF_INET, cidr.substr(0, slash).c_str(), &addr) != 1) {
    return bad("not an IPv4 address");
  }
  int len = -1;
  try {
    size_t used = 0;
    len = std::stoi(cidr.substr(slash + 1), &used);
    if (used != cidr.size() - slash - 1) len = -1;
  } catch (...) {
    len = -1;
  }
  if (len < 0 || len > 32) return bad("prefix length must be 0-32");
  if (maskSize < len || maskSize > 30) {
    return bad("node mask /" + std::to_string(maskSize) + " must be between /" +
               std::to_string(len) + " and /30");
  }
  uint64_t subnets = uint64_t{1} << (maskSize - len);
  if (static_cast<uint64_t>(count) > subnets) {
    return bad("holds " + std::to_string(subnets) + " /" + std::to_string(maskSize) +
               " node ranges, " + std::to_string(count) + " nodes need one each");
  }
  uint32_t base = ntohl(addr.s_addr);
  base &= len == 0 ? 0u : ~uint32_t{0} << (32 - len);
  std::vector<std::string> out;
  out.reserve(count);
  for (int i = 0; i < count; ++i) {
    uint32_t net = base + (static_cast<uint32_t>(i) << (32 - maskSize));
    out.push_back(std::to_string(net >> 24) + "." + std::to_string((net >> 16) & 255) + "." +
                  std::to_string((net >> 8) & 255) + "." + std::to_string(net & 255) + "/" +
                  std::to_string(maskSize));
  }
  return out;
}

kube::Result<std::chrono::milliseconds> parseDuration(const std::string& text) {
  auto bad = [&] {
    return makeError(Code::Invalid, "duration \"" + text + "\": expected e.g. 500ms, 2s, 1m30s");
  };
  if (text.empty()) return bad();
  if (text == "0") return std::chrono::milliseconds(0);
  double totalMs = 0;
  size_t i = 0;
  while (i < text.size()) {
    size_t start = i;
    while (i < text.size() && (std::isdigit(static_cast<unsigned char>(text[i])) || text[i] == '.')) ++i;
    if (i == start) return bad();
    double n = 0;
    try {
      n = std::stod(text.substr(start, i - start));
    } catch (...) {
      return bad();
    }
    size_t u = i;
    while (i < text.size() && std::isalpha(static_cast<unsigned char>(text[i]))) ++i;
    std::string unit = text.substr(u, i - u);
    double mult = unit == "ms" ? 1 : unit == "s" ? 1000 : unit == "m" ? 60000 : unit == "h" ? 3600000 : -1;
    if (mult < 0) return bad();
    totalMs += n * mult;
  }
  if (totalMs > 1e12) return bad();
  return std::chrono::milliseconds(static_cast<int64_t>(totalMs));
}

}  // namespace strait::minicluster

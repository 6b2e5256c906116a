#include "cmd/fabric_config.h"

#include <set>

namespace strait::cmd {
namespace {

std::string trim(const std::string& s) {
  size_t b = s.find_first_not_of(" \t\r\n");
  if (b == std::string::npos) return "";
  size_t e = s.find_last_not_of(" \t\r\n");
  return s.substr(b, e - b + 1);
}

std::string dataValue(const nlohmann::json& cm, const char* key) {
  auto data = cm.find("data");
  if (data == cm.end() || !data->is_object()) return "";
  auto v = data->find(key);
  return v != data->end() && v->is_string() ? v->get<std::string>() : "";
}

}  // namespace

FabricPlan planFabric(const nlohmann::json* configMap, const std::string& nodeName,
                      const std::function<bool(const tunnel::IpAddress&)>& isLocalAddress) {
  FabricPlan plan;
  if (!configMap) return plan;
  plan.gatewayNode = trim(dataValue(*configMap, "gatewayNode"));
  std::string gatewayText = trim(dataValue(*configMap, "gatewayIP"));
  if (gatewayText.empty()) {
    plan.usable = false;
    plan.error = "data.gatewayIP is missing";
    return plan;
  }
  base::Result<tunnel::IpAddress> gw = tunnel::IpAddress::parse(gatewayText);
  if (!gw) {
    plan.usable = false;
    plan.error = "data.gatewayIP \"" + gatewayText + "\": " + gw.error().message;
    return plan;
  }
  plan.gatewayIp = *gw;
  plan.isGatewayNode =
      (!plan.gatewayNode.empty() && plan.gatewayNode == nodeName) || isLocalAddress(plan.gatewayIp);

  std::string cidrs = dataValue(*configMap, "cidrs");
  std::set<std::string> seen;
  size_t index = 0, start = 0;
  while (start <= cidrs.size()) {
    size_t comma = cidrs.find(',', start);
    if (comma == std::string::npos) comma = cidrs.size();
    std::string entry = trim(cidrs.substr(start, comma - start));
    start = comma + 1;
    if (entry.empty()) continue;
    ++index;
    auto ignore = [&](const std::string& why) {
      plan.warnings.push_back("cidrs entry " + std::to_string(index) + " \"" + entry +
                              "\": " + why + "; ignored");
    };
    if (entry.find('/') == std::string::npos) {
      ignore("not a CIDR (expected ADDRESS/PREFIX-LENGTH, e.g. 10.240.0.0/16)");
      continue;
    }
    base::Result<tunnel::IpPrefix> prefix = tunnel::IpPrefix::parse(entry);
    if (!prefix) {
      ignore(prefix.error().message);
      continue;
    }
    if (prefix->toString() != entry) {
      ignore("host bits are set (the network is " + prefix->toString() + ")");
      continue;
    }
    if (prefix->address.family != plan.gatewayIp.family) {
      ignore("its address family differs from gatewayIP " + plan.gatewayIp.toString());
      continue;
    }
    if (prefix->contains(plan.gatewayIp)) {
      ignore("it contains gatewayIP " + plan.gatewayIp.toString());
      continue;
    }
    if (!seen.insert(prefix->toString()).second) {
      ignore("listed twice");
      continue;
    }
    if (!plan.isGatewayNode) plan.routes.push_back(tunnel::Route{*prefix, plan.gatewayIp});
  }
  return plan;
}

}  // namespace strait::cmd

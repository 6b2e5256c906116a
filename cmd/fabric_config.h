#pragma once
// What `strait fabric` reads from the fabric ConfigMap (<namespace>/strait-fabric, written by
// the agent that runs the gateway): the gateway node, its address, and the remote CIDRs every
// other node routes through it. Pure: turns the ConfigMap into the routes a node wants, with
// a warning for each entry it had to ignore.
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "tunnel/route_table.h"

namespace strait::cmd {

inline constexpr const char* kFabricConfigMap = "strait-fabric";

struct FabricPlan {
  // False when the ConfigMap cannot be used at all (no or a bad gatewayIP): `error` says why
  // and the node keeps the routes it has.
  bool usable = true;
  std::string error;
  std::string gatewayNode;
  tunnel::IpAddress gatewayIp;
  // One route per valid CIDR via gatewayIp, in the ConfigMap's order. Empty on the gateway
  // node itself (see planFabric).
  std::vector<tunnel::Route> routes;
  bool isGatewayNode = false;
  // "cidrs entry 2 \"10.0.0.0/33\": ... ; ignored", one per ignored entry.
  std::vector<std::string> warnings;
};

// The plan for node `nodeName` from `configMap` (the object; null when it does not exist:
// an empty, usable plan, so every own route goes). `isLocalAddress(ip)` tells whether an
// address belongs to this node's namespace: on the node named gatewayNode, or the one that
// holds gatewayIP, the plan has no routes (the gateway routes the CIDRs into its tunnel).
FabricPlan planFabric(const nlohmann::json* configMap, const std::string& nodeName,
                      const std::function<bool(const tunnel::IpAddress&)>& isLocalAddress);

}  // namespace strait::cmd

#pragma once
// What `strait pool add|resize|remove|list` do with the consumer's API (pools.h): they edit
// spec.pools of the provider's ForeignCluster (role Provider) in place, without re-peering;
// the consumer agent sends the new pools in its next heartbeat and the virtual nodes follow.
// cmd/pool_cmd.cpp only parses flags and prints. Each function blocks until done or its
// timeout; call from one thread.

#include <chrono>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "kube/client.h"
#include "peering/pools.h"

namespace strait::peering {

// Adds `pool` to the peering (ForeignCluster name `peering`). NotFound when there is no such
// peering with role Provider; AlreadyExists when the pool is there; Invalid when its virtual
// node name would be too long. Returns a line to print.
kube::Result<std::string> addPool(kube::Client& consumer, const std::string& peering,
                                  const PoolSpec& pool);

// Sets the pool's requested resources (the resources given replace the old ones; others
// are kept). NotFound naming the pools there are when there is no such pool.
kube::Result<std::string> resizePool(kube::Client& consumer, const std::string& peering,
                                     const std::string& pool, const ResourceMap& requested);

struct RemovePoolRequest {
  std::string peering;
  std::string pool;
  bool drain = false;  // cordon the pool's node and evict its Pods (Eviction API) first
  std::chrono::milliseconds timeout{300000};
};

// Removes the pool. With Pods bound to its virtual node: Conflict listing them unless
// `drain`, which cordons the node, evicts them and waits until they are gone. Returns lines.
kube::Result<std::vector<std::string>> removePool(kube::Client& consumer,
                                                  const RemovePoolRequest& req);

// Rows for `strait pool list` (`peering` empty: every peering): peering, pool, node,
// requested, granted, used, nodeSelector, state ("Granted" or the refusal reason, "Pending"
// before the provider answered) and message.
kube::Result<nlohmann::json> poolRows(kube::Client& consumer, const std::string& peering = {});
// The rows as an aligned text table.
std::string poolsTable(const nlohmann::json& rows);

}  // namespace strait::peering

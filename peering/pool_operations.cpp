// `strait pool` operations (see pool_operations.h).
#include "peering/pool_operations.h"

#include <algorithm>
#include <functional>

#include "peering/foreign_cluster.h"
#include "peering/names.h"
#include "peering/node_drain.h"

namespace strait::peering {

using nlohmann::json;
using kube::Code;
using kube::makeError;

namespace {

kube::Result<json> providerForeignCluster(kube::Client& consumer, const std::string& peering) {
  kube::Result<json> fc = consumer.get(kForeignClusters, "", peering);
  if (!fc.ok() && fc.code() == Code::NotFound) {
    return makeError(Code::NotFound,
                     "no peering " + peering + " on this cluster (see `strait status`)");
  }
  if (!fc.ok()) return fc.error();
  if (fc->value("/spec/role"_json_pointer, std::string()) != kRoleProvider) {
    return makeError(Code::Invalid, "peering " + peering +
                                        " lends this cluster's capacity (role Consumer): pools "
                                        "are set on the consumer's side");
  }
  return fc;
}

// Reads the ForeignCluster, lets `edit` change its pools, writes it back (retrying on a
// concurrent update). `edit` returns an error to abort.
kube::Status editPools(kube::Client& consumer, const std::string& peering,
                       const std::function<kube::Status(std::vector<PoolSpec>&)>& edit) {
  for (int attempt = 0; attempt < 5; ++attempt) {
    kube::Result<json> fc = providerForeignCluster(consumer, peering);
    if (!fc.ok()) return fc.error();
    kube::Result<std::vector<PoolSpec>> pools = poolsOfForeignCluster(*fc);
    if (!pools.ok()) {
      return makeError(Code::Invalid, "ForeignCluster " + peering + ": " + pools.error().message);
    }
    if (kube::Status s = edit(*pools); !s.ok()) return s;
    json list = json::array();
    for (const PoolSpec& p : *pools) list.push_back(poolToJson(p));
    (*fc)["spec"]["pools"] = list;
    kube::Result<json> written = consumer.update(kForeignClusters, "", *fc);
    if (written.ok()) return kube::Status::OK();
    if (written.code() != Code::Conflict) return written.error();
  }
  return makeError(Code::Conflict, "ForeignCluster " + peering +
                                       " kept changing while its pools were edited; try again");
}

std::string names(const std::vector<PoolSpec>& pools) {
  if (pools.empty()) return "none";
  std::string out;
  for (const PoolSpec& p : pools) out += (out.empty() ? "" : ", ") + p.name;
  return out;
}

std::vector<PoolSpec>::iterator findPool(std::vector<PoolSpec>& pools, const std::string& name) {
  return std::find_if(pools.begin(), pools.end(),
                      [&](const PoolSpec& p) { return p.name == name; });
}

kube::Status noSuchPool(const std::string& peering, const std::string& pool,
                        const std::vector<PoolSpec>& pools) {
  return makeError(Code::NotFound, "peering " + peering + " has no pool " + pool +
                                       " (its pools: " + names(pools) + ")");
}

std::string quantities(const json& r) {
  if (!r.is_object() || r.empty()) return "-";
  std::string out;
  for (const auto& [k, v] : r.items()) {
    out += (out.empty() ? "" : ",") + k + "=" + (v.is_string() ? v.get<std::string>() : v.dump());
  }
  return out;
}

}  // namespace

kube::Result<std::string> addPool(kube::Client& consumer, const std::string& peering,
                                  const PoolSpec& pool) {
  if (kube::Status s = validatePoolNodeName(peering, pool.name); !s.ok()) return s.error();
  kube::Status s = editPools(consumer, peering, [&](std::vector<PoolSpec>& pools) {
    if (findPool(pools, pool.name) != pools.end()) {
      return kube::Status(makeError(Code::AlreadyExists,
                                    "peering " + peering + " already has a pool " + pool.name +
                                        " (use `strait pool resize` to change it)"));
    }
    pools.push_back(pool);
    return kube::Status::OK();
  });
  if (!s.ok()) return s.error();
  return "pool " + pool.name + " added to " + peering + " (virtual node " +
         poolNodeName(peering, pool.name) + ")";
}

kube::Result<std::string> resizePool(kube::Client& consumer, const std::string& peering,
                                     const std::string& pool, const ResourceMap& requested) {
  if (requested.empty()) {
    return makeError(Code::Invalid, "resize of pool " + pool + ": no resources given");
  }
  ResourceMap now;
  kube::Status s = editPools(consumer, peering, [&](std::vector<PoolSpec>& pools) {
    auto it = findPool(pools, pool);
    if (it == pools.end()) return noSuchPool(peering, pool, pools);
    for (const auto& [k, v] : requested) it->requested[k] = v;
    now = it->requested;
    return kube::Status::OK();
  });
  if (!s.ok()) return s.error();
  return "pool " + pool + " of " + peering + " now requests " + formatResources(now);
}

kube::Result<std::vector<std::string>> removePool(kube::Client& consumer,
                                                  const RemovePoolRequest& req) {
  std::vector<std::string> lines;
  kube::Result<json> fc = providerForeignCluster(consumer, req.peering);
  if (!fc.ok()) return fc.error();
  kube::Result<std::vector<PoolSpec>> pools = poolsOfForeignCluster(*fc);
  if (!pools.ok()) return pools.error();
  if (findPool(*pools, req.pool) == pools->end()) {
    return noSuchPool(req.peering, req.pool, *pools).error();
  }
  const std::string node = poolNodeName(req.peering, req.pool);
  const auto deadline = std::chrono::steady_clock::now() + req.timeout;
  auto refuse = [&](const std::vector<BoundPod>& pods) {
    std::string msg = "pool " + req.pool + " not removed: " + std::to_string(pods.size()) +
                      " pod(s) run on its virtual node " + node + "; use --drain to evict them:";
    for (const BoundPod& p : pods) msg += " " + p.ns + "/" + p.name;
    return makeError(Code::Conflict, msg);
  };
  if (!req.drain) {
    kube::Result<std::vector<BoundPod>> pods = unfinishedPodsOn(consumer, node);
    if (!pods.ok()) return pods.error();
    if (!pods->empty()) return refuse(*pods);
  }
  kube::Result<json> vnode = consumer.get(kube::resources::kNodes, "", node);
  const bool wasCordoned = vnode.ok() && vnode->value("/spec/unschedulable"_json_pointer, false);
  if (vnode.ok() && !wasCordoned) {
    kube::Status s = setUnschedulable(consumer, node, true);
    if (!s.ok() && !kube::isNotFound(s.error())) {
      return makeError(s.code(), "cordoning node " + node + ": " + s.error().message);
    }
    lines.push_back("cordoned node " + node);
  }
  if (!req.drain) {
    kube::Result<std::vector<BoundPod>> pods = unfinishedPodsOn(consumer, node);
    if (!pods.ok() || !pods->empty()) {
      // A Pod was bound between the check and the cordon: put the node back as it was.
      if (vnode.ok() && !wasCordoned) (void)setUnschedulable(consumer, node, false);
      if (!pods.ok()) return pods.error();
      return refuse(*pods);
    }
  } else {
    kube::Result<size_t> drained = evictAndWait(consumer, {node}, deadline);
    if (!drained.ok()) {
      return makeError(drained.code(), drained.error().message + "; pool kept");
    }
    if (*drained > 0) {
      lines.push_back("drained " + std::to_string(*drained) + " pod(s) from " + node);
    }
  }
  kube::Status s = editPools(consumer, req.peering, [&](std::vector<PoolSpec>& list) {
    auto it = findPool(list, req.pool);
    if (it == list.end()) return noSuchPool(req.peering, req.pool, list);
    list.erase(it);
    return kube::Status::OK();
  });
  if (!s.ok()) return s.error();
  lines.push_back("pool " + req.pool + " removed from " + req.peering);
  return lines;
}

kube::Result<json> poolRows(kube::Client& consumer, const std::string& peering) {
  json rows = json::array();
  std::vector<json> fcs;
  if (!peering.empty()) {
    kube::Result<json> fc = providerForeignCluster(consumer, peering);
    if (!fc.ok()) return fc.error();
    fcs.push_back(std::move(*fc));
  } else {
    kube::Result<json> list = consumer.list(kForeignClusters, "");
    if (!list.ok()) return list.error();
    for (const json& fc : list->value("items", json::array())) {
      if (fc.value("/spec/role"_json_pointer, std::string()) == kRoleProvider) fcs.push_back(fc);
    }
  }
  for (const json& fc : fcs) {
    const std::string name = fc.value("/metadata/name"_json_pointer, std::string());
    kube::Result<std::vector<PoolSpec>> pools = poolsOfForeignCluster(fc);
    if (!pools.ok()) return pools.error();
    const json status = fc.value("/status/pools"_json_pointer, json::array());
    for (const PoolSpec& p : *pools) {
      json row = {{"peering", name},
                  {"pool", p.name},
                  {"node", poolNodeName(name, p.name)},
                  {"requested", kube::formatResourceList(p.requested)},
                  {"nodeSelector", p.nodeSelector},
                  {"granted", json::object()},
                  {"used", json::object()},
                  {"state", "Pending"},
                  {"message", "the provider has not answered for this pool yet"}};
      if (row["nodeSelector"].is_null()) row["nodeSelector"] = json::object();
      for (const json& st : status.is_array() ? status : json::array()) {
        if (!st.is_object() || st.value("name", "") != p.name) continue;
        row["granted"] = st.value("granted", json::object());
        row["used"] = st.value("used", json::object());
        const std::string reason = st.value("refusedReason", "");
        row["state"] = reason.empty() ? "Granted" : reason;
        row["message"] = st.value("refusedMessage", "");
      }
      rows.push_back(std::move(row));
    }
  }
  return rows;
}

std::string poolsTable(const json& rows) {
  std::vector<std::vector<std::string>> table = {
      {"PEERING", "POOL", "NODE", "STATE", "REQUESTED", "GRANTED", "USED", "NODE-SELECTOR"}};
  for (const json& r : rows) {
    json sel = r.value("nodeSelector", json::object());
    std::string selector;
    for (const auto& [k, v] : sel.items()) {
      selector += (selector.empty() ? "" : ",") + k + "=" + v.get<std::string>();
    }
    table.push_back({r.value("peering", ""), r.value("pool", ""), r.value("node", ""),
                     r.value("state", ""), quantities(r.value("requested", json())),
                     quantities(r.value("granted", json())), quantities(r.value("used", json())),
                     selector.empty() ? "-" : selector});
  }
  std::vector<size_t> width(table[0].size(), 0);
  for (const auto& row : table) {
    for (size_t i = 0; i < row.size(); ++i) width[i] = std::max(width[i], row[i].size());
  }
  std::string out;
  for (const auto& row : table) {
    std::string line;
    for (size_t i = 0; i < row.size(); ++i) {
      line += row[i];
      if (i + 1 < row.size()) line += std::string(width[i] - row[i].size() + 3, ' ');
    }
    out += line + "\n";
  }
  return out;
}

}  // namespace strait::peering

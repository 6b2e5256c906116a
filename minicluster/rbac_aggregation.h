#pragma once
// The ClusterRole aggregation controller (upstream pkg/controller/clusterroleaggregation):
// a ClusterRole with aggregationRule.clusterRoleSelectors gets as rules the union of the rules
// of every other ClusterRole one of its selectors matches (roles by name, each rule once).

#include <memory>
#include <vector>

#include <nlohmann/json.hpp>

#include "minicluster/controller_context.h"

namespace strait::minicluster {

// The rules `aggregating` should hold given every ClusterRole of the cluster (`all`, any
// order): the rules of the roles its selectors match, itself excluded, in name order, without
// duplicates. Pure.
nlohmann::json aggregatedRules(const nlohmann::json& aggregating,
                               const std::vector<nlohmann::json>& all);

std::unique_ptr<Controller> newClusterRoleAggregationController(ControllerContext& ctx);

}  // namespace strait::minicluster

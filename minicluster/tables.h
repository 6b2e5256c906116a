#pragma once
// Table conversion (meta.k8s.io/v1 Table) for `kubectl get`: the upstream column
// definitions and cell values for built-in kinds, CRD additionalPrinterColumns, and a
// Name/Age default for everything else.

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace strait::minicluster {

struct ResourceInfo;

// Builds a Table of `objects` (full objects of `info`'s kind). Each row has `cells` and
// `object`: PartialObjectMetadata (apiVersion meta.k8s.io/v1, kind PartialObjectMetadata,
// the object's metadata) when includeObject == "Metadata" (the default), the full object for
// "Object", nothing for "None". `listMeta` ({resourceVersion, continue}) becomes the
// table's metadata. `now` is the time ages are computed against (seconds since epoch).
nlohmann::json makeTable(const ResourceInfo& info, const std::vector<nlohmann::json>& objects,
                         const nlohmann::json& listMeta, const std::string& includeObject,
                         long long now);

// Kubernetes-style short duration for ages: "5s", "3m12s", "4h", "2d3h", "12d", "3y45d".
std::string humanDuration(long long seconds);

}  // namespace strait::minicluster

#pragma once
// YAML <-> JSON for Kubernetes manifests and kubeconfigs (yaml-cpp underneath). Plain
// scalars get YAML 1.2 core-schema types (null, true/false, integers, floats); quoted
// scalars stay strings.

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "kube/status.h"

namespace strait::kube {

// Parses one YAML (or JSON) document. An empty document is an error. Errors say the line and
// column where parsing failed.
Result<nlohmann::json> yamlToJson(std::string_view text);
// Parses a multi-document stream ("---" separated); empty documents are skipped.
Result<std::vector<nlohmann::json>> yamlDocumentsToJson(std::string_view text);

}  // namespace strait::kube

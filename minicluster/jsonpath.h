#pragma once
// The JSONPath subset of CRD additionalPrinterColumns (private to minicluster/): ".a.b",
// "['k.x']", "[0]", "[-1]", "[*]", ".*" and filters "[?(@.type==\"Ready\")]" with == != < > <= >=.
// Pure; thread-safe.

#include <nlohmann/json.hpp>
#include <optional>
#include <string_view>
#include <vector>

namespace strait::minicluster {

// Evaluates `expr` against `root` (braces "{...}" and a leading "$" tolerated); missing keys
// yield no result, as with AllowMissingKeys(true). The results point into `root`. Returns
// nullopt if the expression is outside the subset.
std::optional<std::vector<const nlohmann::json*>> evalJsonPath(std::string_view expr,
                                                                const nlohmann::json& root);

}  // namespace strait::minicluster

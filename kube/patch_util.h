#pragma once
// Helpers shared by the three patch formats (private to kube/): error values with the codes
// kube-apiserver answers with, the nesting-depth guard, and short renderings for messages.

#include <nlohmann/json.hpp>
#include <string>

#include "kube/status.h"

namespace strait::kube::patch_detail {

Error badRequest(std::string msg);
Error invalid(std::string msg);

// True when `doc` nests objects/arrays more than `limit` levels deep. Iterative, so that
// checking a hostile document cannot itself overflow the stack.
bool deeperThan(const nlohmann::json& doc, int limit);

// BadRequest naming the first of the two documents that nests deeper than
// kMaxPatchNestingDepth, OK otherwise.
Status checkDepths(const nlohmann::json& first, const char* firstName,
                   const nlohmann::json& second, const char* secondName);

// A short rendering of a value for error messages.
std::string brief(const nlohmann::json& v);

}  // namespace strait::kube::patch_detail

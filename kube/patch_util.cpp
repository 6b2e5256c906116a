// Helpers shared by the patch formats, see patch_util.h.
#include "kube/patch_util.h"

#include <utility>
#include <vector>

#include "kube/patch.h"

namespace strait::kube::patch_detail {

using nlohmann::json;

Error badRequest(std::string msg) { return makeError(Code::BadRequest, std::move(msg)); }
Error invalid(std::string msg) { return makeError(Code::Invalid, std::move(msg)); }

bool deeperThan(const json& doc, int limit) {
  std::vector<std::pair<const json*, int>> stack{{&doc, 1}};
  while (!stack.empty()) {
    auto [value, depth] = stack.back();
    stack.pop_back();
    if (!value->is_structured()) {
      continue;
    }
    if (depth > limit) {
      return true;
    }
    for (const auto& child : *value) {
      stack.emplace_back(&child, depth + 1);
    }
  }
  return false;
}

Status checkDepths(const json& first, const char* firstName, const json& second,
                   const char* secondName) {
  for (auto [doc, name] : {std::pair{&first, firstName}, std::pair{&second, secondName}}) {
    if (deeperThan(*doc, kMaxPatchNestingDepth)) {
      return badRequest(std::string(name) + " nests deeper than " +
                        std::to_string(kMaxPatchNestingDepth) + " levels");
    }
  }
  return Status::OK();
}

// A short rendering of a value for error messages.
std::string brief(const json& v) {
  std::string s = v.dump(-1, ' ', false, json::error_handler_t::replace);
  if (s.size() > 80) {
    s = s.substr(0, 77) + "...";
  }
  return s;
}

}  // namespace strait::kube::patch_detail

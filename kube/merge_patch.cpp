// RFC 7386 JSON merge patch (application/merge-patch+json), see patch.h.
#include <exception>
#include <string>

#include "kube/patch.h"
#include "kube/patch_util.h"

namespace strait::kube {

using nlohmann::json;
using namespace patch_detail;

namespace {

void mergeInto(json& target, const json& patch) {
  if (!patch.is_object()) {
    target = patch;
    return;
  }
  if (!target.is_object()) {
    target = json::object();
  }
  for (const auto& [name, value] : patch.items()) {
    if (value.is_null()) {
      target.erase(name);
    } else {
      mergeInto(target[name], value);
    }
  }
}

}  // namespace

Result<json> applyMergePatch(const json& target, const json& patch) {
  if (auto s = checkDepths(target, "merge patch target", patch, "merge patch"); !s) {
    return s.error();
  }
  try {
    json result = target;
    mergeInto(result, patch);
    return result;
  } catch (const std::exception& e) {
    return makeError(Code::Internal, std::string("merge patch failed: ") + e.what());
  }
}

}  // namespace strait::kube

// libFuzzer target for kube/patch.h. The input is two JSON documents separated by the first
// NUL byte (or, without one, split in half): the first is the target, the second the patch.
// Every patch function must return a value or an error for any input, never crash or hang.

#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string_view>

#include "kube/patch.h"

namespace {

nlohmann::json parseOrNull(std::string_view text) {
  // allow_exceptions=false: malformed input becomes a "discarded" value, mapped to null.
  nlohmann::json v = nlohmann::json::parse(text.begin(), text.end(), nullptr, false);
  return v.is_discarded() ? nlohmann::json() : v;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view input(reinterpret_cast<const char*>(data), size);
  size_t split = input.find('\0');
  std::string_view first;
  std::string_view second;
  if (split != std::string_view::npos) {
    first = input.substr(0, split);
    second = input.substr(split + 1);
  } else {
    first = input.substr(0, size / 2);
    second = input.substr(size / 2);
  }
  const nlohmann::json target = parseOrNull(first);
  const nlohmann::json patch = parseOrNull(second);

  using namespace strait::kube;
  (void)applyMergePatch(target, patch);
  (void)applyJsonPatch(target, patch);
  static const PatchSchema* pod = schemaForKind("", "Pod");
  (void)applyStrategicMergePatch(target, patch, *pod);
  // Wrapping the target as a pod spec steers the fuzzer into the merge-key paths too.
  if (patch.is_object()) {
    nlohmann::json podPatch = {{"spec", patch}};
    nlohmann::json podTarget = {{"spec", target}};
    (void)applyStrategicMergePatch(podTarget, podPatch, *pod);
  }
  return 0;
}

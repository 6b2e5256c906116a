// libFuzzer target for the label and field selector parsers. Checks that parsing never crashes
// and that a parsed selector's printed form parses back to the same printed form.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>
#include <string_view>

#include "kube/selector.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace strait::kube;
  std::string_view text(reinterpret_cast<const char*>(data), size);
  const std::map<std::string, std::string> labels = {{"app", "web"}, {"n", "3"}, {"e", ""}};

  auto label = LabelSelector::parse(text);
  if (label.ok()) {
    (void)label->matches(labels);
    std::string printed = label->toString();
    auto again = LabelSelector::parse(printed);
    if (!again.ok() || again->toString() != printed ||
        again->matches(labels) != label->matches(labels)) {
      std::fprintf(stderr, "label selector round trip failed: %s\n", printed.c_str());
      std::abort();
    }
  }

  auto field = FieldSelector::parse(text);
  if (field.ok()) {
    (void)field->matches(labels);
    std::string printed = field->toString();
    auto again = FieldSelector::parse(printed);
    if (!again.ok() || again->matches(labels) != field->matches(labels)) {
      std::fprintf(stderr, "field selector round trip failed: %s\n", printed.c_str());
      std::abort();
    }
  }
  return 0;
}

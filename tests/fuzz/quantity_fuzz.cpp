// libFuzzer target for Quantity::parse. Checks that parsing never crashes, and that a parsed
// quantity survives parse -> toString -> parse with the same value and the same string.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include "kube/quantity.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using strait::kube::Quantity;
  std::string_view text(reinterpret_cast<const char*>(data), size);
  auto first = Quantity::parse(text);
  if (!first.ok()) {
    return 0;
  }
  std::string canonical = first->toString();
  auto second = Quantity::parse(canonical);
  if (!second.ok()) {
    std::fprintf(stderr, "canonical form %s of %.*s does not parse: %s\n", canonical.c_str(),
                 static_cast<int>(size), text.data(), second.error().message.c_str());
    std::abort();
  }
  // The value survives the round trip. The string may change once: as upstream, a binary
  // quantity with no exact binary suffix prints as a plain integer ("62.5Ki" -> "64000"),
  // which then reads back as decimal ("64k"); after that it is stable.
  auto third = Quantity::parse(second->toString());
  if (!(second.value() == first.value()) || !third.ok() ||
      third->toString() != second->toString()) {
    std::fprintf(stderr, "round trip changed %.*s: %s -> %s\n", static_cast<int>(size), text.data(),
                 canonical.c_str(), second->toString().c_str());
    std::abort();
  }
  // Arithmetic must stay exact where it succeeds.
  auto doubled = first->add(first.value());
  if (doubled.ok()) {
    auto back = doubled->sub(first.value());
    if (!back.ok() || !(back.value() == first.value())) {
      std::fprintf(stderr, "x + x - x != x for %s\n", canonical.c_str());
      std::abort();
    }
  }
  (void)first->value();
  (void)first->milliValue();
  return 0;
}

// libFuzzer target for the watch stream decoder. The first input byte picks chunk sizes; the
// rest is the stream. Checks that decoding never crashes, and that the events decoded do not
// depend on how the stream was split into chunks (whole stream vs. the fuzzer's splits),
// including whether and where an error happens.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "kube/watch.h"

namespace {

struct Outcome {
  std::vector<std::string> events;  // type + object dump
  bool failed = false;
  std::string error;
  bool finishOk = false;
};

Outcome decode(std::string_view stream, size_t chunkSeed) {
  strait::kube::WatchDecoder d(4096);
  Outcome o;
  std::vector<strait::kube::WatchEvent> evs;
  size_t pos = 0;
  size_t step = 1 + chunkSeed % 97;
  while (pos < stream.size() && !o.failed) {
    size_t n = std::min(step, stream.size() - pos);
    auto s = d.feed(stream.substr(pos, n), evs);
    if (!s.ok()) {
      o.failed = true;
      o.error = s.error().message;
    }
    pos += n;
    step = 1 + (step * 31 + 7) % 97;
  }
  for (auto& e : evs) {
    o.events.push_back(std::string(strait::kube::watchEventTypeName(e.type)) + e.object.dump());
    if (e.type == strait::kube::WatchEventType::Error) (void)e.error();
    (void)e.resourceVersion();
  }
  if (!o.failed) o.finishOk = d.finish().ok();
  return o;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  std::string_view stream(reinterpret_cast<const char*>(data) + 1, size - 1);
  Outcome whole = decode(stream, 1u << 30);  // one chunk
  Outcome split = decode(stream, data[0]);
  if (whole.events != split.events || whole.failed != split.failed ||
      whole.error != split.error || whole.finishOk != split.finishOk) {
    std::fprintf(stderr, "chunking changed the result: whole %zu events failed=%d (%s), split %zu "
                         "events failed=%d (%s)\n",
                 whole.events.size(), whole.failed, whole.error.c_str(), split.events.size(),
                 split.failed, split.error.c_str());
    std::abort();
  }
  return 0;
}

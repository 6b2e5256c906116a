// libFuzzer target for the SPDY/3.1 frame decoder (kube/spdy.h). The first input byte picks
// chunk sizes; the rest is the byte stream of one session direction. Checks that decoding
// never crashes, that the frames decoded (and whether and where an error happens) do not
// depend on how the stream was split, and that every decoded frame re-encodes to bytes a
// fresh decoder reads back as the same frame.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "kube/spdy.h"

namespace {

namespace spdy = strait::kube::spdy;

struct Outcome {
  std::vector<spdy::Frame> frames;
  std::vector<std::string> described;
  bool failed = false;
  std::string error;
};

Outcome decode(std::string_view stream, size_t chunkSeed) {
  spdy::FrameDecoder d;
  Outcome o;
  size_t pos = 0;
  size_t step = chunkSeed == 0 ? stream.size() + 1 : 1 + chunkSeed % 61;
  while (!o.failed) {
    if (pos < stream.size()) {
      size_t n = std::min(step, stream.size() - pos);
      d.feed(stream.substr(pos, n));
      pos += n;
    }
    while (true) {
      auto f = d.next();
      if (!f.ok()) {
        o.failed = true;
        o.error = f.error().message;
        break;
      }
      if (!f->has_value()) break;
      o.described.push_back(spdy::describe(**f));
      o.frames.push_back(std::move(**f));
    }
    if (pos >= stream.size()) break;
  }
  return o;
}

[[noreturn]] void fail(const char* what, const std::string& detail) {
  std::fprintf(stderr, "spdy_frame_fuzz: %s: %s\n", what, detail.c_str());
  std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  std::string_view stream(reinterpret_cast<const char*>(data) + 1, size - 1);
  Outcome whole = decode(stream, 0);
  Outcome split = decode(stream, data[0]);
  if (whole.described != split.described || whole.failed != split.failed ||
      whole.error != split.error) {
    fail("outcome depends on chunking", whole.error + " vs " + split.error);
  }
  // Re-encode what was decoded (one encoder: header blocks share its zlib stream) and read
  // it back.
  spdy::FrameEncoder enc;
  std::string wire;
  for (const spdy::Frame& f : whole.frames) {
    auto bytes = enc.encode(f);
    if (!bytes.ok()) fail("a decoded frame does not encode", bytes.error().message);
    wire += *bytes;
  }
  Outcome again = decode(wire, 0);
  if (again.failed) fail("re-encoded frames do not decode", again.error);
  if (again.described != whole.described) fail("re-encoded frames differ", "");
  for (size_t i = 0; i < again.frames.size(); ++i) {
    const auto* a = std::get_if<spdy::SynStreamFrame>(&again.frames[i]);
    const auto* b = std::get_if<spdy::SynStreamFrame>(&whole.frames[i]);
    if (a && b && a->headers != b->headers) fail("header block changed", spdy::describe(*a));
  }
  return 0;
}

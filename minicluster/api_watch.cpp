// Watches of the API handler: initial events, bookmarks, timeouts, batched event lines.
#include "minicluster/api_handler.h"

#include <spdlog/spdlog.h>

#include <chrono>
#include <thread>

#include "kube/object.h"
#include "minicluster/api_request.h"

namespace strait::minicluster {

using kube::HttpRequest;
using kube::Responder;

using kube::Code;
using kube::makeError;
using namespace api;

namespace {
using Clock = std::chrono::steady_clock;
}  // namespace

void ApiHandler::handleWatch(const HttpRequest& req, Responder& out, const ResourceInfo& info,
                             const std::string& ns, const ListOptions& opts, bool table) {
  if (opts.fieldSelector) {
    for (const auto& r : opts.fieldSelector->requirements()) {
      if (!registry_.isSelectableField(info, r.field)) {
        return replyError(out, makeError(Code::BadRequest, "field label not supported: " + r.field));
      }
    }
  }
  const bool bookmarks = truthy(req.queryParam("allowWatchBookmarks"));
  const bool sendInitial = truthy(req.queryParam("sendInitialEvents"));
  if (req.hasQuery("sendInitialEvents") && opts.resourceVersionMatch != "NotOlderThan") {
    return replyError(out, makeError(Code::Invalid,
                                     "resourceVersionMatch: Forbidden: sendInitialEvents "
                                     "requires setting resourceVersionMatch to NotOlderThan"));
  }
  int64_t timeout = 1800;
  if (req.hasQuery("timeoutSeconds")) {
    try {
      timeout = std::stoll(req.queryParam("timeoutSeconds"));
    } catch (...) {
      return replyError(out, makeError(Code::BadRequest, "timeoutSeconds must be an integer"));
    }
  }
  uint64_t fromRv = 0;
  const std::string& rvText = opts.resourceVersion;
  if (!rvText.empty()) {
    try {
      fromRv = std::stoull(rvText);
    } catch (...) {
      return replyError(out, makeError(Code::BadRequest,
                                       "invalid resource version \"" + rvText + "\""));
    }
  }
  const std::string prefix = Rest::prefix(info, ns);
  const bool initial = rvText.empty() || rvText == "0" || sendInitial;

  std::vector<ObjectPtr> initialItems;
  uint64_t startRv = fromRv;
  if (initial) {
    auto listed = store_.list(prefix, [&](const Object& o) { return rest_.matches(o, opts); });
    initialItems = std::move(listed.items);
    startRv = listed.rv;
  }
  auto watch = store_.watch(prefix, startRv);

  std::string ct = table ? "application/json;as=Table;v=v1;g=meta.k8s.io" : kJson;
  if (!out.startStream(200, {{"Content-Type", ct}, {"Cache-Control", "no-cache, private"}})) {
    return;
  }
  if (!watch) {
    // Too old: one ERROR event carrying a 410 Status, then the stream ends.
    out.writeChunk(eventLine("ERROR", statusBody(watch.error())));
    return;
  }
  // Events are appended straight into the outgoing batch: the stored JSON is copied once
  // per watcher, never re-serialized.
  std::string batch;
  auto append = [&](const char* type, const ObjectPtr& o) {
    batch += "{\"type\":\"";
    batch += type;
    batch += "\",\"object\":";
    if (table) {
      batch += tableBody(registry_, info, {o}, json::object(), "Metadata");
    } else {
      batch += o->json;
    }
    batch += "}\n";
  };
  constexpr size_t kFlushBytes = 256 * 1024;
  for (const auto& o : initialItems) {
    append("ADDED", o);
    if (batch.size() > kFlushBytes) {
      if (!out.writeChunk(batch)) return;
      batch.clear();
    }
  }
  uint64_t lastRv = startRv;
  auto bookmark = [&](uint64_t rv, bool initialEnd) {
    json b = {{"kind", info.kind},
              {"apiVersion", info.apiVersion()},
              {"metadata", {{"resourceVersion", std::to_string(rv)}}}};
    if (initialEnd) b["metadata"]["annotations"] = {{"k8s.io/initial-events-end", "true"}};
    return eventLine("BOOKMARK", b.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
  };
  if (sendInitial) batch += bookmark(startRv, true);
  if (!batch.empty() && !out.writeChunk(batch)) return;

  const auto deadline = Clock::now() + std::chrono::seconds(timeout);
  auto nextBookmark = Clock::now() + std::chrono::seconds(5);
  bool firstWait = true;
  while (!stopping_) {
    auto now = Clock::now();
    if (timeout > 0 && now >= deadline) break;
    // The first wait does not block, so a client that is already gone is noticed at once.
    auto wait = firstWait ? Clock::duration::zero()
                          : std::min<Clock::duration>(
                                std::chrono::milliseconds(500),
                                timeout > 0 ? deadline - now : std::chrono::hours(1));
    firstWait = false;
    auto ev = (*watch)->next(std::chrono::duration_cast<std::chrono::milliseconds>(wait));
    if (!ev) {
      // Idle: the only time to poll the connection; a failed write says the same when busy.
      if ((*watch)->ended() || out.clientGone()) break;
      if (bookmarks && Clock::now() >= nextBookmark) {
        if (!out.writeChunk(bookmark(lastRv, false))) break;
        nextBookmark = Clock::now() + std::chrono::seconds(5);
      }
      continue;
    }
    // Let a burst gather so that one write carries many events.
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
    batch.clear();
    for (std::optional<EventPtr> e = ev; e; e = (*watch)->next(std::chrono::milliseconds(0))) {
      const Event& event = **e;
      lastRv = event.rv;
      const bool before = event.prev && rest_.matches(*event.prev, opts);
      if (event.type == EventType::Deleted) {
        if (before) append("DELETED", event.object);
      } else {
        const bool now = rest_.matches(*event.object, opts);
        if (now && before) {
          append("MODIFIED", event.object);
        } else if (now) {
          append("ADDED", event.object);
        } else if (before) {
          append("DELETED", event.object);
        }
      }
      if (batch.size() > kFlushBytes) break;
    }
    if (!batch.empty() && !out.writeChunk(batch)) break;
  }
}
}  // namespace strait::minicluster

#include "kube/watch.h"

#include "kube/api_error.h"
#include "kube/json_parse.h"

namespace strait::kube {

using nlohmann::json;

const char* watchEventTypeName(WatchEventType t) {
  switch (t) {
    case WatchEventType::Added: return "ADDED";
    case WatchEventType::Modified: return "MODIFIED";
    case WatchEventType::Deleted: return "DELETED";
    case WatchEventType::Bookmark: return "BOOKMARK";
    case WatchEventType::Error: return "ERROR";
  }
  return "ERROR";
}

std::string WatchEvent::resourceVersion() const {
  if (!object.is_object()) return {};
  auto m = object.find("metadata");
  if (m == object.end() || !m->is_object()) return {};
  auto rv = m->find("resourceVersion");
  if (rv == m->end() || !rv->is_string()) return {};
  return rv->get<std::string>();
}

Error WatchEvent::error() const {
  if (type != WatchEventType::Error) {
    return makeError(Code::Internal, "watch event is not an ERROR event");
  }
  int code = 500;
  if (object.is_object() && object.contains("code") && object["code"].is_number_integer()) {
    code = object["code"].get<int>();
  }
  return errorFromStatus(code, object);
}

Result<WatchEvent> parseWatchEvent(std::string_view line) {
  auto doc = parseJson(line);
  if (!doc) return makeError(Code::BadRequest, "watch event: " + doc.error().message);
  if (!doc->is_object()) return makeError(Code::BadRequest, "watch event: not a JSON object");
  auto t = doc->find("type");
  if (t == doc->end() || !t->is_string()) {
    return makeError(Code::BadRequest, "watch event: \"type\" missing or not a string");
  }
  WatchEvent ev;
  const std::string& ts = t->get_ref<const std::string&>();
  if (ts == "ADDED") {
    ev.type = WatchEventType::Added;
  } else if (ts == "MODIFIED") {
    ev.type = WatchEventType::Modified;
  } else if (ts == "DELETED") {
    ev.type = WatchEventType::Deleted;
  } else if (ts == "BOOKMARK") {
    ev.type = WatchEventType::Bookmark;
  } else if (ts == "ERROR") {
    ev.type = WatchEventType::Error;
  } else {
    return makeError(Code::BadRequest, "watch event: unknown type \"" + ts.substr(0, 64) + "\"");
  }
  auto o = doc->find("object");
  if (o == doc->end() || !o->is_object()) {
    return makeError(Code::BadRequest, "watch event: \"object\" missing or not an object");
  }
  ev.object = std::move(*o);
  return ev;
}

Status WatchDecoder::feed(std::string_view chunk, std::vector<WatchEvent>& out) {
  if (!failed_.ok()) return failed_;
  size_t pos = 0;
  while (pos < chunk.size()) {
    size_t nl = chunk.find('\n', pos);
    if (nl == std::string_view::npos) {
      if (partial_.size() + (chunk.size() - pos) > maxLine_) {
        failed_ = makeError(Code::BadRequest,
                            "watch stream: event at byte " + std::to_string(consumed_) +
                                " is longer than " + std::to_string(maxLine_) + " bytes");
        return failed_;
      }
      partial_.append(chunk.substr(pos));
      return Status::OK();
    }
    std::string_view line;
    std::string joined;
    if (partial_.empty()) {
      line = chunk.substr(pos, nl - pos);
    } else {
      joined = std::move(partial_);
      partial_.clear();
      joined.append(chunk.substr(pos, nl - pos));
      line = joined;
    }
    if (line.size() > maxLine_) {
      failed_ = makeError(Code::BadRequest, "watch stream: event at byte " +
                                                std::to_string(consumed_) + " is longer than " +
                                                std::to_string(maxLine_) + " bytes");
      return failed_;
    }
    const size_t fullLen = line.size();
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    bool blank = line.find_first_not_of(" \t") == std::string_view::npos;
    if (!blank) {
      auto ev = parseWatchEvent(line);
      if (!ev) {
        failed_ = makeError(Code::BadRequest, "watch stream: event at byte " +
                                                  std::to_string(consumed_) + ": " +
                                                  ev.error().message);
        return failed_;
      }
      out.push_back(std::move(*ev));
    }
    consumed_ += fullLen + 1;
    pos = nl + 1;
  }
  return Status::OK();
}

Status WatchDecoder::finish() const {
  if (!failed_.ok()) return failed_;
  if (partial_.find_first_not_of(" \t\r") != std::string::npos) {
    return makeError(Code::BadRequest, "watch stream: ended inside the event at byte " +
                                           std::to_string(consumed_));
  }
  return Status::OK();
}

}  // namespace strait::kube

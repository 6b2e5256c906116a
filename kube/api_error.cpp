#include "kube/api_error.h"

#include <charconv>
#include <optional>

#include "kube/json_access.h"
#include "kube/json_parse.h"

namespace strait::kube {

using nlohmann::json;

Error errorFromStatus(int httpStatus, const json& status) {
  Error e;
  std::string reason;
  if (status.is_object()) {
    reason = stringOf(status, "reason");
    e.message = stringOf(status, "message");
    auto d = status.find("details");
    if (d != status.end() && d->is_object()) {
      e.name = stringOf(*d, "name");
      e.kind = stringOf(*d, "kind");
      auto causes = d->find("causes");
      if (causes != d->end() && causes->is_array()) {
        for (const auto& c : *causes) {
          if (!c.is_object()) continue;
          e.causes.push_back(
              {stringOf(c, "reason"), stringOf(c, "field"), stringOf(c, "message")});
        }
      }
    }
  }
  e.code = codeFromReason(reason, httpStatus);
  if (e.code == Code::Ok) e.code = Code::Internal;  // a Failure Status with a 2xx code
  // Upstream answers 409 for both; the reason tells them apart, the code alone means Conflict.
  if (reason.empty() && httpStatus == 409) e.code = Code::Conflict;
  if (httpStatus == 504 || reason == "Timeout") e.code = Code::ServerTimeout;
  if (e.message.empty()) {
    e.message = "the server responded with HTTP " + std::to_string(httpStatus) +
                (reason.empty() ? "" : " (" + reason + ")");
  }
  if (!e.causes.empty()) e.field = e.causes.front().field;
  return e;
}

Error errorFromResponse(int httpStatus, std::string_view body) {
  auto doc = parseJson(body, 64);
  if (doc && doc->is_object() && stringOf(*doc, "kind") == "Status") {
    return errorFromStatus(httpStatus, *doc);
  }
  Error e = errorFromStatus(httpStatus, json());
  std::string snippet(body.substr(0, 200));
  for (char& c : snippet) {
    if (static_cast<unsigned char>(c) < 0x20) c = ' ';
  }
  if (!snippet.empty()) e.message += ": " + snippet;
  return e;
}

std::optional<int> parseRetryAfter(std::string_view value) {
  while (!value.empty() && value.front() == ' ') value.remove_prefix(1);
  while (!value.empty() && value.back() == ' ') value.remove_suffix(1);
  if (value.empty()) return std::nullopt;
  int v = 0;
  auto [p, ec] = std::from_chars(value.data(), value.data() + value.size(), v);
  if (ec != std::errc() || p != value.data() + value.size() || v < 0) return std::nullopt;
  return std::min(v, 3600);
}

}  // namespace strait::kube

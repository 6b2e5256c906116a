#include "minicluster/deployment_util.h"
#include "kube/json_access.h"

#include <cstdlib>


namespace strait::minicluster {

using kube::child;
using kube::childArray;
using kube::intOf;
using kube::stringOf;

using json = nlohmann::json;

std::string safeEncodeString(const std::string& s) {
  static const char alphanums[] = "bcdfghjklmnpqrstvwxz2456789";
  std::string out(s.size(), 'b');
  for (size_t i = 0; i < s.size(); ++i) {
    out[i] = alphanums[static_cast<unsigned char>(s[i]) % (sizeof(alphanums) - 1)];
  }
  return out;
}

uint32_t fnv32a(const std::string& bytes, uint32_t h) {
  for (unsigned char c : bytes) {
    h ^= c;
    h *= 16777619u;
  }
  return h;
}

std::string computePodTemplateHash(const json& podTemplate, std::optional<int32_t> collisionCount) {
  uint32_t h = fnv32a(podTemplate.dump(-1, ' ', false, json::error_handler_t::replace));
  if (collisionCount) {
    std::string le(8, '\0');
    uint32_t v = static_cast<uint32_t>(*collisionCount);
    for (int i = 0; i < 4; ++i) le[i] = static_cast<char>((v >> (8 * i)) & 0xff);
    h = fnv32a(le, h);
  }
  return safeEncodeString(std::to_string(h));
}

kube::Result<int64_t> scaledValue(const json& v, int64_t total, bool roundUp) {
  if (v.is_number_integer()) return v.get<int64_t>();
  if (v.is_string()) {
    std::string s = v.get<std::string>();
    if (!s.empty() && s.back() == '%') {
      char* end = nullptr;
      std::string digits = s.substr(0, s.size() - 1);
      long long pct = std::strtoll(digits.c_str(), &end, 10);
      if (!digits.empty() && end && *end == '\0') {
        int64_t prod = pct * total;
        return roundUp ? (prod + 99) / 100 : prod / 100;
      }
    }
  }
  return kube::makeError(kube::Code::Invalid,
                         "invalid value for IntOrString: " + v.dump() + " is not a percentage");
}

kube::Result<Fenceposts> resolveFenceposts(const json& d) {
  const json& spec = child(d, "spec");
  const json& strategy = child(spec, "strategy");
  if (stringOf(strategy, "type", "RollingUpdate") != "RollingUpdate") return Fenceposts{};
  const json& ru = child(strategy, "rollingUpdate");
  int64_t replicas = intOf(spec, "replicas", 1);
  json surgeV = ru.contains("maxSurge") ? ru["maxSurge"] : json("25%");
  json unavV = ru.contains("maxUnavailable") ? ru["maxUnavailable"] : json("25%");
  auto surge = scaledValue(surgeV, replicas, true);
  if (!surge) return surge.error();
  auto unav = scaledValue(unavV, replicas, false);
  if (!unav) return unav.error();
  Fenceposts f{*surge, *unav};
  if (f.maxSurge == 0 && f.maxUnavailable == 0) f.maxUnavailable = 1;
  return f;
}

int64_t maxUnavailableOf(const json& d) {
  int64_t replicas = intOf(child(d, "spec"), "replicas", 1);
  auto f = resolveFenceposts(d);
  if (!f || replicas == 0) return 0;
  return std::min(f->maxUnavailable, replicas);
}

int64_t maxSurgeOf(const json& d) {
  auto f = resolveFenceposts(d);
  return f ? f->maxSurge : 0;
}

bool equalIgnoreHash(const json& a, const json& b) {
  json x = a, y = b;
  for (json* t : {&x, &y}) {
    if (t->is_object() && t->contains("metadata") && (*t)["metadata"].is_object()) {
      json& m = (*t)["metadata"];
      if (m.contains("labels") && m["labels"].is_object()) {
        m["labels"].erase(kPodTemplateHashLabel);
        if (m["labels"].empty()) m.erase("labels");
      }
    }
  }
  return x == y;
}

int64_t revisionOf(const json& obj) {
  std::string v = stringOf(child(child(obj, "metadata"), "annotations"), kRevisionAnnotation);
  if (v.empty()) return 0;
  char* end = nullptr;
  long long n = std::strtoll(v.c_str(), &end, 10);
  return end && *end == '\0' ? n : 0;
}

const json* findCondition(const json& status, const std::string& type) {
  for (const auto& c : childArray(status, "conditions")) {
    if (stringOf(c, "type") == type) return &c;
  }
  return nullptr;
}

void setDeploymentCondition(json& status, const std::string& type, const std::string& condStatus,
                            const std::string& reason, const std::string& message,
                            const std::string& now) {
  if (!status.is_object()) status = json::object();
  const json* cur = findCondition(status, type);
  if (cur && stringOf(*cur, "status") == condStatus && stringOf(*cur, "reason") == reason) return;
  json cond = {{"type", type},          {"status", condStatus},         {"reason", reason},
               {"message", message},    {"lastUpdateTime", now},        {"lastTransitionTime", now}};
  if (cur && stringOf(*cur, "status") == condStatus && cur->contains("lastTransitionTime")) {
    cond["lastTransitionTime"] = (*cur)["lastTransitionTime"];
  }
  json kept = json::array();
  for (const auto& c : childArray(status, "conditions")) {
    if (stringOf(c, "type") != type) kept.push_back(c);
  }
  kept.push_back(cond);
  status["conditions"] = kept;
}

}  // namespace strait::minicluster

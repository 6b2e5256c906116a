// Authorization of the virtual kubelet API (see kubelet_authorizer.h).
#include "vnode/kubelet_authorizer.h"

#include <spdlog/spdlog.h>

namespace strait::vnode {

using nlohmann::json;

namespace {

const kube::ResourceRef kSubjectAccessReviews{"authorization.k8s.io", "v1", "subjectaccessreviews",
                                              false};

// `path` is `prefix` or below it (the kubelet's isSubpath).
bool isSubpath(const std::string& path, const std::string& prefix) {
  return path == prefix || path.rfind(prefix + "/", 0) == 0;
}

std::string verbOf(const std::string& method) {
  if (method == "GET" || method == "HEAD") return "get";
  if (method == "POST") return "create";
  if (method == "PUT") return "update";
  if (method == "PATCH") return "patch";
  if (method == "DELETE") return "delete";
  return "";
}

std::string attributesText(const KubeletRequestAttributes& a) {
  return "(user=" + a.user + ", verb=" + a.verb + ", resource=" + a.resource +
         ", subresource=" + a.subresource + ")";
}

// The cache key: everything the review asks about but the node, which is fixed per server.
std::string cacheKey(const KubeletRequestAttributes& a) {
  std::string k = a.user;
  k += '\0';
  for (const std::string& g : a.groups) {
    k += g;
    k += '\x01';
  }
  k += '\0';
  k += a.verb;
  k += '\0';
  k += a.subresource;
  k += '\0';
  k += a.name;
  return k;
}

}  // namespace

KubeletRequestAttributes kubeletRequestAttributes(const std::string& method,
                                                  const std::string& path, std::string user,
                                                  std::vector<std::string> groups,
                                                  std::string nodeName) {
  KubeletRequestAttributes a;
  a.user = std::move(user);
  a.groups = std::move(groups);
  a.verb = verbOf(method);
  a.name = std::move(nodeName);
  if (isSubpath(path, "/stats")) {
    a.subresource = "stats";
  } else if (isSubpath(path, "/metrics")) {
    a.subresource = "metrics";
  } else if (isSubpath(path, "/logs")) {
    a.subresource = "log";  // as pods/log
  } else if (isSubpath(path, "/spec")) {
    a.subresource = "spec";
  } else {
    a.subresource = "proxy";
  }
  return a;
}

json subjectAccessReview(const KubeletRequestAttributes& a) {
  json spec = {{"user", a.user},
               {"resourceAttributes",
                {{"verb", a.verb},
                 {"group", ""},
                 {"version", "v1"},
                 {"resource", a.resource},
                 {"subresource", a.subresource},
                 {"name", a.name}}}};
  if (!a.groups.empty()) spec["groups"] = a.groups;
  return {{"apiVersion", "authorization.k8s.io/v1"},
          {"kind", "SubjectAccessReview"},
          {"spec", std::move(spec)}};
}

std::string forbiddenMessage(const KubeletRequestAttributes& a) {
  return "Forbidden " + attributesText(a);
}

std::string authorizationErrorMessage(const KubeletRequestAttributes& a) {
  return "Authorization error " + attributesText(a);
}

AccessReviewer subjectAccessReviewer(kube::Client& client) {
  return [&client](const json& review) -> kube::Result<bool> {
    kube::Result<json> answer = client.create(kSubjectAccessReviews, "", review);
    if (!answer.ok()) return answer.error();
    const json* status =
        answer->is_object() && answer->contains("status") ? &(*answer)["status"] : nullptr;
    if (status == nullptr || !status->is_object() || !status->contains("allowed") ||
        !(*status)["allowed"].is_boolean()) {
      return kube::makeError(kube::Code::Internal,
                             "the SubjectAccessReview answer has no boolean status.allowed");
    }
    if (status->contains("evaluationError") && (*status)["evaluationError"].is_string() &&
        !(*status)["evaluationError"].get<std::string>().empty()) {
      spdlog::warn("event=kubelet_authorization_evaluation_error error=\"{}\"",
                   (*status)["evaluationError"].get<std::string>());
    }
    return (*status)["allowed"].get<bool>();
  };
}

KubeletAuthorizer::KubeletAuthorizer(AccessReviewer reviewer, KubeletAuthorizerOptions opts)
    : reviewer_(std::move(reviewer)), opts_(std::move(opts)) {}

std::chrono::steady_clock::time_point KubeletAuthorizer::now() const {
  return opts_.now ? opts_.now() : std::chrono::steady_clock::now();
}

uint64_t KubeletAuthorizer::reviews() const {
  base::MutexLock l(mu_);
  return reviews_;
}

kube::Result<bool> KubeletAuthorizer::authorize(const KubeletRequestAttributes& a) {
  if (a.user.empty() || a.verb.empty()) return false;
  if (!reviewer_) return kube::makeError(kube::Code::Internal, "no access reviewer");
  const std::string key = cacheKey(a);
  {
    base::MutexLock l(mu_);
    auto it = cache_.find(key);
    if (it != cache_.end()) {
      if (now() < it->second.expires) {
        order_.splice(order_.end(), order_, it->second.age);  // most recently used
        return it->second.allowed;
      }
      order_.erase(it->second.age);
      cache_.erase(it);
    }
    ++reviews_;
  }
  // The review runs unlocked: concurrent misses for one key may each send one.
  kube::Result<bool> allowed = reviewer_(subjectAccessReview(a));
  if (!allowed.ok()) {
    spdlog::warn(
        "event=kubelet_authorization_failed node={} user={} verb={} subresource={} "
        "error=\"{}\"",
        a.name, a.user, a.verb, a.subresource, allowed.error().message);
    return allowed;
  }
  base::MutexLock l(mu_);
  auto it = cache_.find(key);
  if (it != cache_.end()) {
    order_.erase(it->second.age);
    cache_.erase(it);
  }
  while (!order_.empty() && cache_.size() >= std::max<size_t>(opts_.maxEntries, 1)) {
    cache_.erase(order_.front());
    order_.pop_front();
  }
  order_.push_back(key);
  cache_[key] = Entry{*allowed, now() + (*allowed ? opts_.allowedTtl : opts_.deniedTtl),
                      std::prev(order_.end())};
  return *allowed;
}

}  // namespace strait::vnode

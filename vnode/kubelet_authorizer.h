#pragma once
// Authorization of the virtual kubelet API, as a kubelet in webhook mode does it
// (pkg/kubelet/server/auth.go and the apiserver webhook authorizer): after the client
// certificate authenticated the caller (CN = user, O = groups), every request is checked with
// a SubjectAccessReview (authorization.k8s.io/v1) against the consumer's API server for
//   resource "nodes", name = the virtual node, apiVersion v1, no namespace,
//   subresource by path: /stats[/...] -> stats, /metrics[/...] -> metrics,
//     /logs[/...] -> log, /spec[/...] -> spec, anything else (exec, attach, portForward,
//     containerLogs, run, pods, healthz) -> proxy,
//   verb by method: GET and HEAD -> get, POST -> create, PUT -> update, PATCH -> patch,
//     DELETE -> delete.
// Decisions are cached per (user, groups, verb, subresource): allowed ones 5 minutes, denied
// ones 30 seconds (the kubelet's --authorization-webhook-cache-*-ttl defaults), at most
// 8,192 entries (the oldest go first). A review that fails (the API server unreachable, an
// error status, a malformed answer) is an error, never cached and never an allow: the server
// answers 500.
//
// Thread-safe: authorize() from the HTTP server's connection threads.

#include <chrono>
#include <cstddef>
#include <functional>
#include <list>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "base/thread_annotations.h"
#include "kube/client.h"
#include "kube/status.h"

namespace strait::vnode {

// What one request asks of the node, in the API server's terms.
struct KubeletRequestAttributes {
  std::string user;
  std::vector<std::string> groups;
  std::string verb;  // "" for a method the kubelet does not map (OPTIONS, ...)
  std::string resource = "nodes";
  std::string subresource;  // stats, metrics, log, spec or proxy
  std::string name;         // the node
};

// The attributes of `method` on `path` by `user`/`groups` for node `nodeName` (the rules in
// the file comment). Pure.
KubeletRequestAttributes kubeletRequestAttributes(const std::string& method,
                                                  const std::string& path, std::string user,
                                                  std::vector<std::string> groups,
                                                  std::string nodeName);

// The SubjectAccessReview asking about `a` (apiVersion authorization.k8s.io/v1). Pure.
nlohmann::json subjectAccessReview(const KubeletRequestAttributes& a);

// The kubelet's answers, word for word: 403 "Forbidden (user=..., verb=..., resource=...,
// subresource=...)" and 500 "Authorization error (user=..., ...)".
std::string forbiddenMessage(const KubeletRequestAttributes& a);
std::string authorizationErrorMessage(const KubeletRequestAttributes& a);

// Sends one SubjectAccessReview and returns the answer's status.allowed. Errors: the call
// failed (its error), or the answer has no boolean status.allowed (Internal). May block.
using AccessReviewer = std::function<kube::Result<bool>(const nlohmann::json& review)>;

// POSTs reviews to /apis/authorization.k8s.io/v1/subjectaccessreviews with `client` (the
// agent's own identity, which needs create on subjectaccessreviews). `client` is borrowed
// and must outlive the reviewer.
AccessReviewer subjectAccessReviewer(kube::Client& client);

struct KubeletAuthorizerOptions {
  std::chrono::milliseconds allowedTtl = std::chrono::minutes(5);
  std::chrono::milliseconds deniedTtl = std::chrono::seconds(30);
  size_t maxEntries = 8192;
  // The clock (tests inject one). Default: steady_clock::now.
  std::function<std::chrono::steady_clock::time_point()> now;
};

class KubeletAuthorizer {
 public:
  // `reviewer` is required (a null one denies every request with an error).
  explicit KubeletAuthorizer(AccessReviewer reviewer, KubeletAuthorizerOptions opts = {});

  // True (allowed) or false (denied), from the cache or one review; the review's error when
  // it failed (never cached). A request without a user or without a verb is denied without
  // a review. May block for the review.
  kube::Result<bool> authorize(const KubeletRequestAttributes& a);

  // Reviews sent so far (for tests and logs).
  uint64_t reviews() const;

 private:
  std::chrono::steady_clock::time_point now() const;

  const AccessReviewer reviewer_;
  const KubeletAuthorizerOptions opts_;

  mutable base::Mutex mu_;
  struct Entry {
    bool allowed = false;
    std::chrono::steady_clock::time_point expires;
    std::list<std::string>::iterator age;  // its place in order_
  };
  std::map<std::string, Entry> cache_ GUARDED_BY(mu_);
  std::list<std::string> order_ GUARDED_BY(mu_);  // keys, least recently used first
  uint64_t reviews_ GUARDED_BY(mu_) = 0;
};

}  // namespace strait::vnode

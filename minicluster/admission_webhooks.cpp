// Admission webhooks (upstream k8s.io/apiserver/pkg/admission/plugin/webhook): mutating
// webhooks first, in order of configuration name then list order, each seeing the previous
// ones' patches; then validating webhooks. A webhook is called when a rule matches the
// operation, group, version and resource (subresources as "pods/status", wildcards "*",
// "*/*", "pods/*", "*/status"), scope, namespaceSelector and objectSelector. Its call is an
// admission.k8s.io/v1 AdmissionReview POSTed over HTTPS (caBundle-verified) to
// clientConfig.url or to a ready endpoint of clientConfig.service, within timeoutSeconds.
// failurePolicy Fail refuses the request when the call fails, Ignore carries on.
//
// Approximations: matchPolicy Equivalent has nothing to translate (each resource is served
// in one version); reinvocationPolicy IfNeeded is not honoured (each mutating webhook runs
// once); validating webhooks run one after another, not in parallel.
#include <spdlog/spdlog.h>

#include <algorithm>
#include <map>
#include <mutex>

#include "base/thread_annotations.h"
#include "kube/base64.h"
#include "kube/json_access.h"
#include "kube/json_parse.h"
#include "kube/object.h"
#include "kube/patch.h"
#include "kube/selector.h"
#include "minicluster/admission.h"
#include "minicluster/rest.h"
#include "minicluster/store.h"
#include "minicluster/webhook_client.h"

namespace strait::minicluster {
namespace {

using kube::child;
using kube::childArray;
using kube::intOf;
using kube::stringOf;

using json = nlohmann::json;
using kube::Code;
using kube::makeError;

struct Rule {
  std::vector<std::string> operations, groups, versions, resources;
  std::string scope = "*";
};

struct Webhook {
  std::string name;
  std::vector<Rule> rules;
  std::optional<kube::LabelSelector> namespaceSelector;  // nullopt: everything
  std::optional<kube::LabelSelector> objectSelector;
  bool failOpen = false;  // failurePolicy Ignore
  std::chrono::seconds timeout{10};
  std::string sideEffects;
  json clientConfig;
};

bool contains(const std::vector<std::string>& v, const std::string& x) {
  return std::find(v.begin(), v.end(), x) != v.end() ||
         std::find(v.begin(), v.end(), "*") != v.end();
}

std::vector<std::string> strings(const json& arr) {
  std::vector<std::string> out;
  if (!arr.is_array()) return out;
  for (const auto& s : arr) {
    if (s.is_string()) out.push_back(s.get<std::string>());
  }
  return out;
}

// Upstream rules.Matcher resource matching.
bool resourceMatches(const std::vector<std::string>& patterns, const std::string& resource,
                     const std::string& sub) {
  const std::string full = sub.empty() ? resource : resource + "/" + sub;
  for (const auto& p : patterns) {
    if (p == "*/*" || p == full) return true;
    if (p == "*" && sub.empty()) return true;
    auto slash = p.find('/');
    if (slash == std::string::npos || sub.empty()) continue;
    std::string pr = p.substr(0, slash), ps = p.substr(slash + 1);
    if ((pr == "*" || pr == resource) && (ps == "*" || ps == sub)) return true;
  }
  return false;
}

bool ruleMatches(const Rule& r, const AdmissionAttributes& a) {
  if (!contains(r.operations, a.operation)) return false;
  if (!contains(r.groups, a.info->group) || !contains(r.versions, a.info->version)) return false;
  if (!resourceMatches(r.resources, a.info->resource, a.subresource)) return false;
  if (r.scope == "Cluster" && a.info->namespaced) return false;
  if (r.scope == "Namespaced" && !a.info->namespaced) return false;
  return true;
}

kube::Result<std::vector<Webhook>> parseConfiguration(const json& cfg) {
  std::vector<Webhook> out;
  for (const auto& w : childArray(cfg, "webhooks")) {
    Webhook h;
    h.name = stringOf(w, "name");
    for (const auto& r : childArray(w, "rules")) {
      Rule rule;
      rule.operations = strings(r.value("operations", json()));
      rule.groups = strings(r.value("apiGroups", json()));
      rule.versions = strings(r.value("apiVersions", json()));
      rule.resources = strings(r.value("resources", json()));
      rule.scope = stringOf(r, "scope", "*");
      h.rules.push_back(std::move(rule));
    }
    for (auto [field, target] : {std::pair{"namespaceSelector", &h.namespaceSelector},
                                 std::pair{"objectSelector", &h.objectSelector}}) {
      if (!w.contains(field) || w[field].is_null()) continue;
      auto sel = kube::LabelSelector::fromJson(w[field]);
      if (!sel) {
        return makeError(Code::Invalid, "webhook \"" + h.name + "\": " + field + ": " +
                                            sel.error().message);
      }
      *target = *sel;
    }
    h.failOpen = stringOf(w, "failurePolicy", "Fail") == "Ignore";
    int64_t t = intOf(w, "timeoutSeconds", 10);
    h.timeout = std::chrono::seconds(std::clamp<int64_t>(t, 1, 30));
    h.sideEffects = stringOf(w, "sideEffects", "Unknown");
    h.clientConfig = child(w, "clientConfig");
    out.push_back(std::move(h));
  }
  return out;
}

class WebhookAdmission : public Admission {
 public:
  WebhookAdmission(Store& store, Registry& registry) : store_(store), registry_(registry) {}

  kube::Status mutate(const AdmissionAttributes& a, json* obj) override {
    for (const auto& h : load("mutatingwebhookconfigurations")) {
      if (!shouldCall(h, a, obj)) continue;
      auto resp = call(h, a, obj);
      if (!resp) {
        if (h.failOpen) continue;
        return resp.error();
      }
      if (auto s = denied(h, *resp); !s) return s;
      const std::string patch = stringOf(*resp, "patch");
      if (patch.empty() || !obj) continue;
      auto applied = applyPatch(h, *resp, *obj);
      if (!applied) {
        if (h.failOpen) continue;
        return applied.error();
      }
      *obj = std::move(*applied);
      spdlog::info("event=admission_patched webhook={} resource={} name={}", h.name,
                   a.info->resource, a.name);
    }
    return kube::Status::OK();
  }

  kube::Status validate(const AdmissionAttributes& a, const json* obj) override {
    for (const auto& h : load("validatingwebhookconfigurations")) {
      if (!shouldCall(h, a, obj)) continue;
      auto resp = call(h, a, obj);
      if (!resp) {
        if (h.failOpen) continue;
        return resp.error();
      }
      if (auto s = denied(h, *resp); !s) return s;
    }
    return kube::Status::OK();
  }

 private:
  // The webhooks of every configuration of `resource`, by configuration name.
  std::vector<Webhook> load(const std::string& resource) {
    auto info = registry_.find("admissionregistration.k8s.io", "v1", resource);
    if (!info) return {};
    auto listed = store_.list(Rest::prefix(*info, ""));
    std::vector<Webhook> out;
    base::MutexLock l(mu_);
    for (const auto& o : listed.items) {
      auto& cached = cache_[o->key];
      if (cached.rv != o->rv) {
        cached.rv = o->rv;
        cached.hooks.clear();
        auto cfg = kube::parseJson(o->json);
        auto parsed = cfg ? parseConfiguration(*cfg)
                          : kube::Result<std::vector<Webhook>>(cfg.error());
        if (parsed) {
          cached.hooks = std::move(*parsed);
        } else {
          spdlog::warn("event=webhook_configuration_invalid key={} error=\"{}\"", o->key,
                       parsed.error().message);
        }
      }
      out.insert(out.end(), cached.hooks.begin(), cached.hooks.end());
    }
    return out;
  }

  bool shouldCall(const Webhook& h, const AdmissionAttributes& a, const json* obj) {
    if (std::none_of(h.rules.begin(), h.rules.end(),
                     [&](const Rule& r) { return ruleMatches(r, a); })) {
      return false;
    }
    if (h.namespaceSelector && !h.namespaceSelector->empty()) {
      kube::LabelSet nsLabels;
      if (a.info->group.empty() && a.info->resource == "namespaces") {
        nsLabels = kube::getLabels(obj ? *obj : a.oldObject ? *a.oldObject : json());
      } else if (a.info->namespaced) {
        auto ns = store_.get("/core/namespaces//" + a.ns);
        if (ns) nsLabels = (*ns)->labels;
      } else {
        nsLabels.clear();  // cluster-scoped: the namespace selector does not apply
      }
      if ((a.info->namespaced || a.info->resource == "namespaces") &&
          !h.namespaceSelector->matches(nsLabels)) {
        return false;
      }
    }
    if (h.objectSelector && !h.objectSelector->empty()) {
      bool match = (obj && h.objectSelector->matches(kube::getLabels(*obj))) ||
                   (a.oldObject && h.objectSelector->matches(kube::getLabels(*a.oldObject)));
      if (!match) return false;
    }
    return true;
  }

  // Where to send the review: clientConfig.url, or a ready endpoint of clientConfig.service.
  kube::Result<WebhookTarget> target(const Webhook& h) {
    WebhookTarget t;
    const json& cc = h.clientConfig;
    std::string ca = stringOf(cc, "caBundle");
    if (!ca.empty()) {
      auto pem = kube::base64Decode(ca);
      if (!pem) return makeError(Code::Internal, "clientConfig.caBundle is not base64");
      t.caPem = *pem;
    }
    const std::string timeoutQuery = "timeout=" + std::to_string(h.timeout.count()) + "s";
    std::string url = stringOf(cc, "url");
    if (!url.empty()) {
      if (url.rfind("https://", 0) != 0) {
        return makeError(Code::Internal, "clientConfig.url must use https: " + url);
      }
      std::string rest = url.substr(8);
      auto slash = rest.find('/');
      std::string hostPort = rest.substr(0, slash);
      t.path = slash == std::string::npos ? "/" : rest.substr(slash);
      std::string host = hostPort;
      if (!hostPort.empty() && hostPort[0] == '[') {  // [v6]:port
        auto close = hostPort.find(']');
        host = hostPort.substr(1, close - 1);
        if (close + 1 < hostPort.size() && hostPort[close + 1] == ':') {
          t.port = static_cast<uint16_t>(std::atoi(hostPort.c_str() + close + 2));
        }
      } else if (auto colon = hostPort.rfind(':'); colon != std::string::npos) {
        host = hostPort.substr(0, colon);
        t.port = static_cast<uint16_t>(std::atoi(hostPort.c_str() + colon + 1));
      }
      t.host = host;
      t.path += (t.path.find('?') == std::string::npos ? "?" : "&") + timeoutQuery;
      return t;
    }
    const json& svc = child(cc, "service");
    const std::string ns = stringOf(svc, "namespace"), name = stringOf(svc, "name");
    if (name.empty()) return makeError(Code::Internal, "clientConfig has neither url nor service");
    const int64_t port = intOf(svc, "port", 443);
    t.serverName = name + "." + ns + ".svc";
    t.path = stringOf(svc, "path", "/");
    t.path += (t.path.find('?') == std::string::npos ? "?" : "&") + timeoutQuery;
    auto service = store_.get("/core/services/" + ns + "/" + name);
    if (!service) return makeError(Code::Internal, "service \"" + name + "\" not found");
    std::string portName;
    bool found = false;
    auto svcObj = kube::parseJson((*service)->json);
    const json svcJson = svcObj ? *svcObj : json::object();
    for (const auto& p : childArray(child(svcJson, "spec"), "ports")) {
      if (intOf(p, "port") == port) {
        portName = stringOf(p, "name");
        found = true;
      }
    }
    if (!found) {
      return makeError(Code::Internal, "service \"" + name + "\" has no port " + std::to_string(port));
    }
    auto ep = store_.get("/core/endpoints/" + ns + "/" + name);
    if (ep) {
      auto parsedEp = kube::parseJson((*ep)->json);
      const json eps = parsedEp ? *parsedEp : json::object();
      for (const auto& subset : childArray(eps, "subsets")) {
        const json& addrs = childArray(subset, "addresses");
        if (addrs.empty()) continue;
        for (const auto& p : childArray(subset, "ports")) {
          if (stringOf(p, "name") != portName) continue;
          t.host = stringOf(addrs[0], "ip");
          t.port = static_cast<uint16_t>(intOf(p, "port"));
          return t;
        }
      }
    }
    return makeError(Code::Internal, "no endpoints available for service \"" + name + "\"");
  }

  // Calls the webhook; the AdmissionReview response, or an error refusing the request.
  kube::Result<json> call(const Webhook& h, const AdmissionAttributes& a, const json* obj) {
    auto fail = [&](const std::string& why) {
      spdlog::warn("event=webhook_call_failed webhook={} fail_open={} error=\"{}\"", h.name,
                   h.failOpen, why);
      return makeError(Code::Internal, "Internal error occurred: failed calling webhook \"" +
                                           h.name + "\": " + why);
    };
    if (a.dryRun && h.sideEffects != "None" && h.sideEffects != "NoneOnDryRun") {
      return makeError(Code::BadRequest, "admission webhook \"" + h.name +
                                             "\" does not support dry run");
    }
    auto t = target(h);
    if (!t) return fail("failed to call webhook: " + t.error().message);
    const std::string uid = kube::newUid();
    json gvk = {{"group", a.info->group}, {"version", a.info->version}, {"kind", a.info->kind}};
    json gvr = {{"group", a.info->group}, {"version", a.info->version},
                {"resource", a.info->resource}};
    const char* optionsKind = a.operation == "CREATE"   ? "CreateOptions"
                              : a.operation == "UPDATE" ? "UpdateOptions"
                                                        : "DeleteOptions";
    json userInfo = {{"username", a.user.username.empty() ? "system:kube-controller-manager"
                                                          : a.user.username}};
    if (!a.user.groups.empty()) userInfo["groups"] = a.user.groups;
    json request = {{"uid", uid},
                    {"kind", gvk},
                    {"resource", gvr},
                    {"requestKind", gvk},
                    {"requestResource", gvr},
                    {"name", a.name},
                    {"operation", a.operation},
                    {"userInfo", userInfo},
                    {"object", obj ? *obj : json()},
                    {"oldObject", a.oldObject ? *a.oldObject : json()},
                    {"dryRun", a.dryRun},
                    {"options", {{"apiVersion", "meta.k8s.io/v1"}, {"kind", optionsKind}}}};
    if (!a.subresource.empty()) {
      request["subResource"] = a.subresource;
      request["requestSubResource"] = a.subresource;
    }
    if (a.info->namespaced) request["namespace"] = a.ns;
    json review = {{"apiVersion", "admission.k8s.io/v1"},
                   {"kind", "AdmissionReview"},
                   {"request", request}};
    auto reply = postWebhook(*t, review.dump(-1, ' ', false, json::error_handler_t::replace),
                             h.timeout);
    if (!reply) return fail("failed to call webhook: " + reply.error().message);
    if (reply->status < 200 || reply->status >= 300) {
      return fail("received invalid webhook response: HTTP status " +
                  std::to_string(reply->status));
    }
    auto parsed = kube::parseJson(reply->body);
    if (!parsed || !parsed->is_object()) {
      return fail("received invalid webhook response: the body is not a JSON object");
    }
    const json& resp = child(*parsed, "response");
    if (resp.empty()) return fail("received invalid webhook response: response is missing");
    if (stringOf(resp, "uid") != uid) {
      return fail("expected response.uid=\"" + uid + "\", got \"" + stringOf(resp, "uid") + "\"");
    }
    if (!resp.contains("allowed") || !resp["allowed"].is_boolean()) {
      return fail("received invalid webhook response: response.allowed is missing");
    }
    return resp;
  }

  // An error when the webhook said no (upstream webhookerrors.ToStatusErr).
  static kube::Status denied(const Webhook& h, const json& resp) {
    if (resp["allowed"].get<bool>()) return kube::Status::OK();
    const json& st = child(resp, "status");
    int64_t code = intOf(st, "code", 400);
    if (code < 400) code = 400;
    std::string msg = "admission webhook \"" + h.name + "\" denied the request";
    const std::string message = stringOf(st, "message"), reason = stringOf(st, "reason");
    if (!message.empty()) {
      msg += ": " + message;
    } else if (!reason.empty()) {
      msg += ": " + reason;
    } else {
      msg += " without explanation";
    }
    // The Status reason is the one of the code (upstream passes the webhook's own through).
    kube::Error e = makeError(kube::codeFromReason(reason, static_cast<int>(code)), msg);
    spdlog::info("event=admission_denied webhook={} message=\"{}\"", h.name, msg);
    return e;
  }

  static kube::Result<json> applyPatch(const Webhook& h, const json& resp, const json& obj) {
    auto fail = [&](const std::string& why) {
      return makeError(Code::Internal, "Internal error occurred: failed calling webhook \"" +
                                           h.name + "\": " + why);
    };
    if (stringOf(resp, "patchType") != "JSONPatch") {
      return fail("unsupported patch type \"" + stringOf(resp, "patchType") + "\"");
    }
    auto raw = kube::base64Decode(stringOf(resp, "patch"));
    if (!raw) return fail("the patch is not base64");
    auto ops = kube::parseJson(*raw);
    if (!ops) return fail("the patch is not JSON: " + ops.error().message);
    auto patched = kube::applyJsonPatch(obj, *ops);
    if (!patched) return fail("the patch does not apply: " + patched.error().message);
    return patched;
  }

  struct Cached {
    uint64_t rv = 0;
    std::vector<Webhook> hooks;
  };

  Store& store_;
  Registry& registry_;
  base::Mutex mu_;
  std::map<std::string, Cached> cache_ GUARDED_BY(mu_);  // store key -> parsed configuration
};

}  // namespace

std::unique_ptr<Admission> newWebhookAdmission(Store& store, Registry& registry) {
  return std::make_unique<WebhookAdmission>(store, registry);
}

}  // namespace strait::minicluster

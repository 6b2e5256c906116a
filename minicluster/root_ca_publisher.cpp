// Root-CA publisher (upstream pkg/controller/certificates/rootcacertpublisher): a ConfigMap
// "kube-root-ca.crt" holding the cluster CA as data["ca.crt"] in every active namespace;
// edits are reverted and a deleted one comes back.
#include "minicluster/controller_context.h"
#include "minicluster/namespace_object_controller.h"

namespace strait::minicluster {
namespace {

using json = nlohmann::json;
constexpr const char* kConfigMapName = "kube-root-ca.crt";
constexpr const char* kDescription =
    "Contains a CA bundle that can be used to verify the kube-apiserver when using internal "
    "endpoints such as the internal service IP or kubernetes.default.svc. No other usage is "
    "guaranteed across distributions of Kubernetes clusters.";

}  // namespace

std::unique_ptr<Controller> newRootCaPublisher(ControllerContext& ctx) {
  const json want = {{"ca.crt", ctx.ca.certPem}};
  NamespaceObjectSpec spec;
  spec.queueName = "root-ca-cert-publisher";
  spec.resource = "configmaps";
  spec.name = kConfigMapName;
  spec.event = "root_ca_published";
  spec.build = [want](const std::string& ns) {
    return json{{"apiVersion", "v1"},
                {"kind", "ConfigMap"},
                {"metadata",
                 {{"name", kConfigMapName},
                  {"namespace", ns},
                  {"annotations", {{"kubernetes.io/description", kDescription}}}}},
                {"data", want}};
  };
  spec.upToDate = [want](const json& cur) { return cur.contains("data") && cur["data"] == want; };
  spec.repair = [want](json& obj) {
    obj["data"] = want;
    obj.erase("binaryData");
  };
  return newNamespaceObjectController(ctx, std::move(spec));
}

}  // namespace strait::minicluster

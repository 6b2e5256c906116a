// ServiceAccount controller (upstream pkg/controller/serviceaccount): every active
// namespace has a ServiceAccount named "default"; deleting it brings it back.
#include "minicluster/controller_context.h"
#include "minicluster/namespace_object_controller.h"

namespace strait::minicluster {

std::unique_ptr<Controller> newServiceAccountController(ControllerContext& ctx) {
  NamespaceObjectSpec spec;
  spec.queueName = "serviceaccount";
  spec.resource = "serviceaccounts";
  spec.name = "default";
  spec.event = "serviceaccount_created";
  spec.build = [](const std::string& ns) {
    return nlohmann::json{{"apiVersion", "v1"},
                           {"kind", "ServiceAccount"},
                           {"metadata", {{"name", "default"}, {"namespace", ns}}}};
  };
  return newNamespaceObjectController(ctx, std::move(spec));
}

}  // namespace strait::minicluster

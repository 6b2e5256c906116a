#include "reflection/labels.h"

#include "kube/object.h"

namespace strait::reflection {

bool isOwnedBy(const nlohmann::json& remote, std::string_view consumerId) {
  auto labels = kube::getLabels(remote);
  auto it = labels.find(std::string(kLabelOriginClusterId));
  return it != labels.end() && it->second == consumerId && !consumerId.empty() &&
         labels.count(std::string(kLabelOriginUid)) > 0;
}

std::string originUid(const nlohmann::json& remote) {
  auto labels = kube::getLabels(remote);
  auto it = labels.find(std::string(kLabelOriginUid));
  return it == labels.end() ? std::string() : it->second;
}

}  // namespace strait::reflection

#include "reflection/namespace_mapping.h"

#include "kube/validation.h"

namespace strait::reflection {

kube::Result<NamingStrategy> parseNamingStrategy(std::string_view text) {
  if (text == "default") return NamingStrategy::Default;
  if (text == "same") return NamingStrategy::SameName;
  return kube::makeError(kube::Code::Invalid,
                         "naming strategy \"" + std::string(text) +
                             "\" is not one of: default, same",
                         "naming");
}

const char* namingStrategyName(NamingStrategy s) {
  return s == NamingStrategy::Default ? "default" : "same";
}

namespace {
std::string joinProblems(const std::vector<std::string>& problems) {
  std::string out;
  for (const std::string& p : problems) {
    if (!out.empty()) out += "; ";
    out += p;
  }
  return out;
}
}  // namespace

kube::Result<std::string> NamespaceMapping::remoteNamespace(std::string_view localNs) const {
  if (auto problems = kube::validateDns1123Label(localNs); !problems.empty()) {
    return kube::makeError(kube::Code::Invalid,
                           "namespace \"" + std::string(localNs) +
                               "\" cannot be offloaded: " + joinProblems(problems),
                           "metadata.namespace");
  }
  if (strategyFor(localNs) == NamingStrategy::SameName) return std::string(localNs);
  std::string remote = std::string(localNs) + "-" + consumerId_;
  if (auto problems = kube::validateDns1123Label(remote); !problems.empty()) {
    return kube::makeError(
        kube::Code::Invalid,
        "namespace \"" + std::string(localNs) + "\" maps to remote namespace \"" + remote +
            "\", which is not a valid namespace name (" + joinProblems(problems) +
            "); use a shorter namespace or the same-name naming strategy",
        "metadata.namespace");
  }
  return remote;
}

std::optional<std::string> NamespaceMapping::localNamespace(std::string_view remoteNs) const {
  if (lookup_) {
    NamespaceMapping fixed(consumerId_, NamingStrategy::Default);
    if (std::optional<std::string> local = fixed.localNamespace(remoteNs);
        local && lookup_(*local) == NamingStrategy::Default) {
      return local;
    }
    if (!kube::validateDns1123Label(remoteNs).empty()) return std::nullopt;
    if (lookup_(remoteNs) == NamingStrategy::SameName) return std::string(remoteNs);
    return std::nullopt;
  }
  if (strategy_ == NamingStrategy::SameName) {
    if (!kube::validateDns1123Label(remoteNs).empty()) return std::nullopt;
    return std::string(remoteNs);
  }
  const std::string suffix = "-" + consumerId_;
  if (remoteNs.size() <= suffix.size() ||
      remoteNs.substr(remoteNs.size() - suffix.size()) != suffix) {
    return std::nullopt;
  }
  std::string local(remoteNs.substr(0, remoteNs.size() - suffix.size()));
  if (!kube::validateDns1123Label(local).empty()) return std::nullopt;
  return local;
}

}  // namespace strait::reflection

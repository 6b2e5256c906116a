#pragma once
// A kube client for a benchmark's clusters, from the admin kubeconfig a `strait minicluster`
// writes. Thread-safe (no state).

#include <memory>
#include <string>

#include "kube/client.h"
#include "kube/kubeconfig.h"

namespace strait::bench {

// A client for the current context of the kubeconfig at `path`; nullptr when it cannot be
// read or the client cannot be made.
inline std::unique_ptr<kube::Client> kubeClient(const std::string& path) {
  kube::KubeconfigOptions o;
  o.paths = {path};
  auto cfg = kube::loadKubeconfig(o);
  if (!cfg.ok()) return nullptr;
  auto c = kube::newClient(*cfg);
  return c.ok() ? std::move(*c) : nullptr;
}

}  // namespace strait::bench

#pragma once
// The consumer's offloaded namespaces as the virtual kubelet of one provider sees them (read
// from the Namespace objects, vnode/offloading.h): a Namespace informer that gives
//  - naming(localNs): the strategy of each namespace offloaded to this provider (its
//    strait.io/namespace-naming), kept after the namespace stops being offloaded so that
//    Pods still being deleted map to where their remote copies are; `fallback` for a
//    namespace never seen offloaded. Feeds reflection::NamespaceMapping's per-namespace lookup;
//  - onReleased(localNs, naming): a namespace offloaded to this provider no longer is (the
//    label removed by `strait unoffload`, another provider chosen, or the namespace deleted),
//    so that its remote namespace can be deleted.
//  - strategy(localNs): the pod offloading strategy of a namespace offloaded to this
//    provider (LocalAndRemote for one that is not), for reflectors that reflect a
//    namespace's objects but must not offload Pods of a Local one.
// A namespace offloaded to "any provider" (no strait.io/offload-providers) or by a selector
// on the virtual nodes' labels counts for all (the selector decides where Pods are
// scheduled; the remote namespace is kept for every provider).
//
// Thread-safe: naming() and hasSynced() from any thread; onReleased runs on the informer's
// thread and must not block for long. start/stop from one thread.

#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <string_view>

#include "base/thread_annotations.h"
#include "kube/client.h"
#include "reflection/namespace_mapping.h"
#include "reflection/offloading_strategy.h"

namespace strait::kube {
class Informer;
}

namespace strait::vnode {

class NamespaceOffloads {
 public:
  using ReleasedFn =
      std::function<void(const std::string& localNs, reflection::NamingStrategy naming)>;

  // `local` is borrowed and must outlive this. `providerName` is the ForeignCluster name of
  // the provider (what `--remote-name` names). No I/O.
  NamespaceOffloads(kube::Client& local, std::string providerName,
                    reflection::NamingStrategy fallback);
  ~NamespaceOffloads();  // stop()

  // Starts the informer. Call once.
  void start(ReleasedFn onReleased);
  // Stops the informer. Idempotent.
  void stop();
  // True once the first list of Namespaces is in.
  bool hasSynced() const;
  reflection::NamingStrategy naming(std::string_view localNs) const;
  // Whether local namespace `localNs` is offloaded to this provider now.
  bool offloaded(const std::string& localNs) const;
  // Called (on the informer's thread, must not block) when a namespace becomes offloaded to
  // this provider. Set before start().
  void setOnOffloaded(std::function<void(const std::string& localNs)> fn) {
    onOffloaded_ = std::move(fn);
  }
  reflection::PodOffloadingStrategy strategy(std::string_view localNs) const;

 private:
  void observe(const nlohmann::json& ns, bool deleted);

  kube::Client& local_;
  const std::string providerName_;
  const reflection::NamingStrategy fallback_;
  std::unique_ptr<kube::Informer> informer_;
  ReleasedFn onReleased_;
  std::function<void(const std::string& localNs)> onOffloaded_;
  mutable base::Mutex mu_;
  std::map<std::string, reflection::NamingStrategy, std::less<>> naming_ GUARDED_BY(mu_);
  std::set<std::string> offloaded_ GUARDED_BY(mu_);  // offloaded to this provider now
  std::map<std::string, reflection::PodOffloadingStrategy, std::less<>> strategy_
      GUARDED_BY(mu_);
};

}  // namespace strait::vnode

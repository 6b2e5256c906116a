#pragma once
// Namespace offloading (Liqo's NamespaceOffloading, recorded on the Namespace itself so that
// the toleration webhook selects offloaded namespaces with one label selector and the
// virtual kubelets read the choices without another resource):
//
//   label       strait.io/offloaded=true          the namespace may use virtual nodes
//   annotation  strait.io/offload-providers=NAME  only this provider's virtual node (a
//                                                 ForeignCluster name); absent = any provider
//   annotation  strait.io/namespace-naming=default|same   remote namespace naming
//   annotation  strait.io/pod-offloading-strategy=LocalAndRemote|Remote|Local
//   annotation  strait.io/offload-selector=SELECTOR       only virtual nodes whose labels
//                                                 match (instead of one provider name)
// (the strategy and selector: reflection/offloading_strategy.h; the node affinity they give
// offloaded Pods: offloading_affinity.h)
//
// `strait offload namespace NS` sets them; `strait unoffload namespace NS` removes them after
// checking no Pod of the namespace runs on a virtual node (or, with force, deleting those
// Pods so their controllers recreate them locally). Functions block on the API server; call
// from one thread. Parsing helpers are pure and thread-safe.

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "kube/client.h"
#include "peering/names.h"
#include "reflection/namespace_mapping.h"
#include "reflection/offloading_strategy.h"

namespace strait::vnode {

using peering::kAnnotationNamespaceNaming;
using peering::kAnnotationOffloadProviders;
using peering::kLabelOffloaded;

// What a Namespace says about its offloading.
struct Offloading {
  bool offloaded = false;
  std::string provider;  // "" = any provider
  reflection::NamingStrategy naming = reflection::NamingStrategy::Default;
  reflection::PodOffloadingStrategy strategy = reflection::PodOffloadingStrategy::LocalAndRemote;
  std::string selector;  // label selector on the virtual nodes' labels; "" = none
};

// Reads a Namespace object (malformed or unknown values: not offloaded / default naming /
// LocalAndRemote; a selector is returned as written, offloading_affinity.h copes with a bad
// one).
Offloading offloadingOf(const nlohmann::json& ns);

struct OffloadRequest {
  std::string ns;
  std::string provider;  // --remote-name; "" = any
  reflection::NamingStrategy naming = reflection::NamingStrategy::Default;
  reflection::PodOffloadingStrategy strategy = reflection::PodOffloadingStrategy::LocalAndRemote;
  std::string selector;  // --selector on the virtual nodes' labels; "" = none
};

// Marks namespace `req.ns` offloaded (it must exist: NotFound otherwise; a provider name
// that no ForeignCluster with role Provider has: NotFound naming it). Invalid: both a
// provider and a selector, a selector that does not parse, or Local with a provider or
// selector (Local offloads no Pod). Changing the naming of a namespace that already has Pods
// on a virtual node is refused (Conflict), since their remote copies live under the old
// name. Changing the strategy, provider or selector moves no running Pod: the lines say so
// and count the Pods that keep their place. Returns lines to print.
kube::Result<std::vector<std::string>> offloadNamespace(kube::Client& consumer,
                                                        const OffloadRequest& req);

struct UnoffloadRequest {
  std::string ns;
  bool force = false;  // delete the namespace's Pods on virtual nodes instead of refusing
};

// Undoes offloadNamespace. Without force: Conflict listing the Pods of the namespace bound
// to a virtual node (as `strait unpeer` does without --drain). With force: deletes them
// (their remote copies go with them), then removes the marks. Idempotent. Returns lines to
// print.
kube::Result<std::vector<std::string>> unoffloadNamespace(kube::Client& consumer,
                                                          const UnoffloadRequest& req);

// "ns/name" of the Pods in `ns` bound to a virtual node (a Node labelled
// type=virtual-kubelet), sorted.
kube::Result<std::vector<std::string>> podsOnVirtualNodes(kube::Client& consumer,
                                                          const std::string& ns);

}  // namespace strait::vnode

// `strait expose service NS/NAME --kubeconfig PROVIDER --to CONSUMER [--remove]`: records in
// a provider Service's strait.io/export-to annotation that a peered consumer imports it, or
// takes that consumer off the list. The provider agent reads the annotation and sends the
// Service and its EndpointSlices to that consumer (reflection/service_exporter.h), whose
// agent creates them (reflection/service_import.h).
#include <algorithm>
#include <iostream>

#include "cmd/cli_util.h"
#include "cmd/commands.h"
#include "kube/json_access.h"
#include "kube/object.h"
#include "peering/foreign_cluster.h"
#include "peering/names.h"
#include "reflection/service_export.h"

namespace strait::cmd {
namespace {

using nlohmann::json;

struct ExposeFlags {
  std::string service;
  std::string kubeconfig;
  std::string to;
  bool remove = false;
};

struct Consumer {
  std::string name;
  std::string clusterId;
};

// The consumer `wanted` (a ForeignCluster name or cluster ID) among the ForeignClusters, or
// a message saying why there is none.
kube::Result<Consumer> findConsumer(kube::Client& client, const std::string& wanted) {
  auto fcs = client.list(peering::kForeignClusters, "");
  if (!fcs.ok()) {
    return kube::makeError(fcs.error().code,
                           "cannot list ForeignClusters: " + fcs.error().message);
  }
  std::vector<std::string> consumers;
  for (const json& fc : fcs->value("items", json::array())) {
    const json spec = fc.value("spec", json::object());
    const std::string name = kube::getName(fc);
    const std::string id = kube::stringOf(spec, "clusterID");
    const std::string role = kube::stringOf(spec, "role");
    if (role == peering::kRoleConsumer) consumers.push_back(name);
    if (name != wanted && id != wanted) continue;
    if (role != peering::kRoleConsumer) {
      return kube::makeError(kube::Code::Invalid,
                             "\"" + wanted + "\" is a peered " + role +
                                 " of this cluster, not a consumer: a Service is exported to "
                                 "a cluster that offloads to this one");
    }
    return Consumer{name, id};
  }
  std::string msg = "no peered consumer named \"" + wanted + "\" (a ForeignCluster name or " +
                    "cluster ID with role Consumer)";
  if (consumers.empty()) {
    msg += "; this cluster has no consumer: peer one first (`strait token`, then `strait peer` "
           "on the consumer)";
  } else {
    std::string near = closestName(wanted, consumers);
    if (!near.empty()) msg += "; did you mean \"" + near + "\"?";
    msg += "; consumers:";
    for (const std::string& c : consumers) msg += " " + c;
  }
  return kube::makeError(kube::Code::NotFound, msg);
}

int runExpose(const ExposeFlags& f) {
  setupLogging("warn");
  auto ref = reflection::parseServiceRef(f.service);
  if (!ref.ok()) {
    std::cerr << "error: SERVICE: " << ref.error().message << "\n";
    return kExitUsage;
  }
  const auto& [ns, name] = *ref;
  auto client = clientFor(f.kubeconfig);
  if (!client.ok()) return failWith(client.error().message);
  kube::Client& c = **client;
  auto svc = c.get(kube::resources::kServices, ns, name);
  if (!svc.ok()) {
    if (svc.error().code == kube::Code::NotFound) {
      return failWith("Service " + ns + "/" + name + " not found in the cluster of " +
                      f.kubeconfig);
    }
    return failWith("cannot read Service " + ns + "/" + name + ": " + svc.error().message);
  }
  if (!f.remove) {
    if (kube::stringOf((*svc)["spec"], "type") == "ExternalName") {
      return failWith("Service " + ns + "/" + name +
                      " is of type ExternalName: it has no endpoints to export");
    }
  }
  std::vector<std::string> ids = reflection::exportConsumers(*svc);
  auto consumer = findConsumer(c, f.to);
  if (!consumer.ok() && f.remove && std::find(ids.begin(), ids.end(), f.to) != ids.end()) {
    consumer = Consumer{f.to, f.to};  // a consumer unpeered since: its ID still listed
  }
  if (!consumer.ok()) return failWith(consumer.error().message);
  const bool listed = std::find(ids.begin(), ids.end(), consumer->clusterId) != ids.end();
  if (f.remove) {
    if (!listed) {
      std::cout << "service " << ns << "/" << name << " was not exported to " << consumer->name
                << "\n";
      return 0;
    }
    std::erase(ids, consumer->clusterId);
  } else {
    if (listed) {
      std::cout << "service " << ns << "/" << name << " already exported to " << consumer->name
                << " (cluster ID " << consumer->clusterId << ")\n";
      return 0;
    }
    ids.push_back(consumer->clusterId);
  }
  const std::string value = reflection::exportToValue(ids);
  json patch = {{"metadata",
                 {{"annotations",
                   {{std::string(peering::kAnnotationExportTo),
                     value.empty() ? json(nullptr) : json(value)}}}}}};
  auto done = c.patch(kube::resources::kServices, ns, name, kube::PatchType::Merge, patch);
  if (!done.ok()) {
    return failWith("cannot annotate Service " + ns + "/" + name + ": " + done.error().message);
  }
  if (f.remove) {
    std::cout << "service " << ns << "/" << name << " no longer exported to " << consumer->name
              << "\n";
  } else {
    std::cout << "service " << ns << "/" << name << " exported to " << consumer->name
              << " (cluster ID " << consumer->clusterId << ")\n";
  }
  return 0;
}

}  // namespace

void addExposeCommand(CLI::App& app) {
  auto f = std::make_shared<ExposeFlags>();
  CLI::App* expose =
      app.add_subcommand("expose", "export a provider Service to a peered consumer");
  expose->require_subcommand(1);
  CLI::App* svc = expose->add_subcommand(
      "service", "export this Service to a consumer, which gets a Service of the same name "
                 "whose endpoints are this cluster's Pods (annotation strait.io/export-to)");
  svc->add_option("SERVICE", f->service, "the Service, as NAMESPACE/NAME")->required();
  svc->add_option("--kubeconfig", f->kubeconfig, "kubeconfig of the provider")->required();
  svc->add_option("--to", f->to, "the consumer (its ForeignCluster name or cluster ID)")
      ->required();
  svc->add_flag("--remove", f->remove,
                "take that consumer off the Service's export list");
  svc->callback([f] { setExitCode(runExpose(*f)); });
}

}  // namespace strait::cmd

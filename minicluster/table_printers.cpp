// Table printers of the built-in kinds, see table_printers.h. Columns and cell formats follow
// upstream pkg/printers/internalversion.
#include "minicluster/table_printers.h"

#include <algorithm>
#include <climits>
#include <set>

#include "kube/time.h"
#include "minicluster/tables.h"

namespace strait::minicluster::table {
namespace {

using json = nlohmann::json;

json podCells(const json& pod, long long now, json& rowConditions) {
  const json& spec = path(pod, {"spec"});
  const json& status = path(pod, {"status"});
  long long restarts = 0;
  long long restartableInitRestarts = 0;
  long long totalContainers = static_cast<long long>(sizeOf(path(spec, {"containers"})));
  long long readyContainers = 0;
  std::optional<long long> lastRestart, lastRestartableInitRestart;
  auto later = [](std::optional<long long>& cur, const json& finishedAt) {
    auto t = timeOf(finishedAt);
    if (t && (!cur || *cur < *t)) cur = t;
  };

  const std::string phase = str(path(status, {"phase"}));
  std::string reason = phase;
  if (!str(path(status, {"reason"})).empty()) reason = str(path(status, {"reason"}));
  for (const json& c : arrayOrEmpty(path(status, {"conditions"}))) {
    if (str(path(c, {"type"})) == "PodScheduled" &&
        str(path(c, {"reason"})) == "SchedulingGated") {
      reason = "SchedulingGated";
    }
  }
  if (phase == "Succeeded") {
    rowConditions = json::array({{{"type", "Completed"},
                                  {"status", "True"},
                                  {"reason", "Succeeded"},
                                  {"message", "The pod has completed successfully."}}});
  } else if (phase == "Failed") {
    rowConditions = json::array({{{"type", "Completed"},
                                  {"status", "True"},
                                  {"reason", "Failed"},
                                  {"message", "The pod failed."}}});
  }

  std::set<std::string> restartableInit;  // sidecars: initContainers with restartPolicy Always
  const json& initSpecs = arrayOrEmpty(path(spec, {"initContainers"}));
  for (const json& c : initSpecs) {
    if (str(path(c, {"restartPolicy"})) == "Always") {
      restartableInit.insert(str(path(c, {"name"})));
      ++totalContainers;
    }
  }

  bool initializing = false;
  const json& initStatuses = arrayOrEmpty(path(status, {"initContainerStatuses"}));
  for (size_t i = 0; i < initStatuses.size(); ++i) {
    const json& cs = initStatuses[i];
    const bool sidecar = restartableInit.count(str(path(cs, {"name"}))) > 0;
    restarts += integer(path(cs, {"restartCount"}));
    const json& lastTerminated = path(cs, {"lastState", "terminated"});
    if (lastTerminated.is_object()) later(lastRestart, path(lastTerminated, {"finishedAt"}));
    if (sidecar) {
      restartableInitRestarts += integer(path(cs, {"restartCount"}));
      if (lastTerminated.is_object()) {
        later(lastRestartableInitRestart, path(lastTerminated, {"finishedAt"}));
      }
    }
    const json& terminated = path(cs, {"state", "terminated"});
    const json& waiting = path(cs, {"state", "waiting"});
    if (terminated.is_object() && integer(path(terminated, {"exitCode"})) == 0) {
      continue;
    }
    if (sidecar && path(cs, {"started"}) == json(true)) {
      if (path(cs, {"ready"}) == json(true)) ++readyContainers;
      continue;
    }
    if (terminated.is_object()) {
      std::string r = str(path(terminated, {"reason"}));
      if (r.empty()) {
        long long signal = integer(path(terminated, {"signal"}));
        reason = signal != 0
                     ? "Init:Signal:" + std::to_string(signal)
                     : "Init:ExitCode:" + std::to_string(integer(path(terminated, {"exitCode"})));
      } else {
        reason = "Init:" + r;
      }
    } else if (waiting.is_object() && !str(path(waiting, {"reason"})).empty() &&
               str(path(waiting, {"reason"})) != "PodInitializing") {
      reason = "Init:" + str(path(waiting, {"reason"}));
    } else {
      reason = "Init:" + std::to_string(i) + "/" + std::to_string(initSpecs.size());
    }
    initializing = true;
    break;
  }

  bool initializedTrue = false;
  for (const json& c : arrayOrEmpty(path(status, {"conditions"}))) {
    if (str(path(c, {"type"})) == "Initialized") {
      initializedTrue = str(path(c, {"status"})) == "True";
      break;
    }
  }

  if (!initializing || initializedTrue) {
    restarts = restartableInitRestarts;
    lastRestart = lastRestartableInitRestart;
    bool hasRunning = false;
    const json& statuses = arrayOrEmpty(path(status, {"containerStatuses"}));
    for (size_t k = statuses.size(); k-- > 0;) {
      const json& cs = statuses[k];
      restarts += integer(path(cs, {"restartCount"}));
      const json& lastTerminated = path(cs, {"lastState", "terminated"});
      if (lastTerminated.is_object()) later(lastRestart, path(lastTerminated, {"finishedAt"}));
      const json& waiting = path(cs, {"state", "waiting"});
      const json& terminated = path(cs, {"state", "terminated"});
      if (waiting.is_object() && !str(path(waiting, {"reason"})).empty()) {
        reason = str(path(waiting, {"reason"}));
      } else if (terminated.is_object() && !str(path(terminated, {"reason"})).empty()) {
        reason = str(path(terminated, {"reason"}));
      } else if (terminated.is_object()) {
        long long signal = integer(path(terminated, {"signal"}));
        reason = signal != 0
                     ? "Signal:" + std::to_string(signal)
                     : "ExitCode:" + std::to_string(integer(path(terminated, {"exitCode"})));
      } else if (path(cs, {"ready"}) == json(true) && path(cs, {"state", "running"}).is_object()) {
        hasRunning = true;
        ++readyContainers;
      }
    }
    if (reason == "Completed" && hasRunning) {
      bool podReady = false;
      for (const json& c : arrayOrEmpty(path(status, {"conditions"}))) {
        if (str(path(c, {"type"})) == "Ready" && str(path(c, {"status"})) == "True") {
          podReady = true;
        }
      }
      reason = podReady ? "Running" : "NotReady";
    }
  }

  const bool deleting = !path(pod, {"metadata", "deletionTimestamp"}).is_null();
  if (deleting && str(path(status, {"reason"})) == "NodeLost") {
    reason = "Unknown";
  } else if (deleting && phase != "Succeeded" && phase != "Failed") {
    reason = "Terminating";
  }

  std::string restartsStr = std::to_string(restarts);
  if (restarts != 0 && lastRestart) {
    restartsStr += " (" + humanDuration(now - *lastRestart) + " ago)";
  }

  std::string podIP;
  const json& podIPs = path(status, {"podIPs"});
  if (podIPs.is_array() && !podIPs.empty()) {
    podIP = str(path(podIPs[0], {"ip"}));
  } else {
    podIP = str(path(status, {"podIP"}));
  }
  if (podIP.empty()) podIP = "<none>";
  std::string nodeName = str(path(spec, {"nodeName"}));
  if (nodeName.empty()) nodeName = "<none>";
  std::string nominated = str(path(status, {"nominatedNodeName"}));
  if (nominated.empty()) nominated = "<none>";
  std::string readinessGates = "<none>";
  const json& gates = arrayOrEmpty(path(spec, {"readinessGates"}));
  if (!gates.empty()) {
    size_t trueConditions = 0;
    for (const json& g : gates) {
      for (const json& c : arrayOrEmpty(path(status, {"conditions"}))) {
        if (path(c, {"type"}) == path(g, {"conditionType"})) {
          if (str(path(c, {"status"})) == "True") ++trueConditions;
          break;
        }
      }
    }
    readinessGates = std::to_string(trueConditions) + "/" + std::to_string(gates.size());
  }

  return json::array({nameOf(pod),
                      std::to_string(readyContainers) + "/" + std::to_string(totalContainers),
                      reason, restartsStr, age(pod, now), podIP, nodeName, nominated,
                      readinessGates});
}

std::string nodeAddress(const json& node, const std::string& type) {
  for (const json& a : arrayOrEmpty(path(node, {"status", "addresses"}))) {
    if (str(path(a, {"type"})) == type) return str(path(a, {"address"}));
  }
  return "<none>";
}

json nodeCells(const json& node, long long now, json&) {
  std::vector<std::string> status;
  for (const json& c : arrayOrEmpty(path(node, {"status", "conditions"}))) {
    if (str(path(c, {"type"})) == "Ready") {
      status = {str(path(c, {"status"})) == "True" ? "Ready" : "NotReady"};  // last one wins
    }
  }
  if (status.empty()) status.push_back("Unknown");
  if (path(node, {"spec", "unschedulable"}) == json(true)) status.push_back("SchedulingDisabled");

  std::set<std::string> roles;
  const json& labels = path(node, {"metadata", "labels"});
  if (labels.is_object()) {
    const std::string prefix = "node-role.kubernetes.io/";
    for (auto it = labels.begin(); it != labels.end(); ++it) {
      if (it.key().rfind(prefix, 0) == 0) {
        if (it.key().size() > prefix.size()) roles.insert(it.key().substr(prefix.size()));
      } else if (it.key() == "kubernetes.io/role" && !str(*it).empty()) {
        roles.insert(str(*it));
      }
    }
  }
  std::string rolesStr = join(std::vector<std::string>(roles.begin(), roles.end()), ",");
  if (rolesStr.empty()) rolesStr = "<none>";

  const json& info = path(node, {"status", "nodeInfo"});
  auto orUnknown = [](std::string s) { return s.empty() ? std::string("<unknown>") : s; };
  return json::array({nameOf(node), join(status, ","), rolesStr, age(node, now),
                      str(path(info, {"kubeletVersion"})), nodeAddress(node, "InternalIP"),
                      nodeAddress(node, "ExternalIP"), orUnknown(str(path(info, {"osImage"}))),
                      orUnknown(str(path(info, {"kernelVersion"}))),
                      orUnknown(str(path(info, {"containerRuntimeVersion"})))});
}

std::string serviceExternalIP(const json& svc) {
  std::string type = str(path(svc, {"spec", "type"}));
  if (type.empty()) type = "ClusterIP";
  std::vector<std::string> externalIPs;
  for (const json& ip : arrayOrEmpty(path(svc, {"spec", "externalIPs"}))) {
    externalIPs.push_back(str(ip));
  }
  if (type == "ClusterIP" || type == "NodePort") {
    return externalIPs.empty() ? "<none>" : join(externalIPs, ",");
  }
  if (type == "LoadBalancer") {
    std::set<std::string> lb;
    for (const json& in : arrayOrEmpty(path(svc, {"status", "loadBalancer", "ingress"}))) {
      if (!str(path(in, {"ip"})).empty()) {
        lb.insert(str(path(in, {"ip"})));
      } else if (!str(path(in, {"hostname"})).empty()) {
        lb.insert(str(path(in, {"hostname"})));
      }
    }
    std::vector<std::string> all(lb.begin(), lb.end());
    if (!externalIPs.empty()) {
      all.insert(all.end(), externalIPs.begin(), externalIPs.end());
      return join(all, ",");
    }
    return all.empty() ? "<pending>" : join(all, ",");
  }
  if (type == "ExternalName") return str(path(svc, {"spec", "externalName"}));
  return "<unknown>";
}

json serviceCells(const json& svc, long long now, json&) {
  const json& spec = path(svc, {"spec"});
  std::string type = str(path(spec, {"type"}));
  if (type.empty()) type = "ClusterIP";
  std::string clusterIP = "<none>";
  const json& ips = path(spec, {"clusterIPs"});
  if (ips.is_array() && !ips.empty()) {
    clusterIP = str(ips[0]);
  } else if (!str(path(spec, {"clusterIP"})).empty()) {
    clusterIP = str(path(spec, {"clusterIP"}));
  }
  std::vector<std::string> ports;
  for (const json& p : arrayOrEmpty(path(spec, {"ports"}))) {
    std::string proto = str(path(p, {"protocol"}));
    if (proto.empty()) proto = "TCP";
    long long nodePort = integer(path(p, {"nodePort"}));
    std::string piece = std::to_string(integer(path(p, {"port"})));
    if (nodePort > 0) piece += ":" + std::to_string(nodePort);
    ports.push_back(piece + "/" + proto);
  }
  std::string portStr = ports.empty() ? "<none>" : join(ports, ",");
  return json::array({nameOf(svc), type, clusterIP, serviceExternalIP(svc), portStr, age(svc, now),
                      formatLabels(path(spec, {"selector"}))});
}

json endpointsCells(const json& ep, long long now, json&) {
  const json& subsets = arrayOrEmpty(path(ep, {"subsets"}));
  if (subsets.empty()) return json::array({nameOf(ep), "<none>", age(ep, now)});
  std::vector<std::string> list;
  const size_t max = 3;
  bool more = false;
  size_t count = 0;
  for (const json& ss : subsets) {
    const json& addrs = arrayOrEmpty(path(ss, {"addresses"}));
    const json& ports = arrayOrEmpty(path(ss, {"ports"}));
    if (ports.empty()) {
      count += addrs.size();
      for (const json& a : addrs) {
        if (list.size() == max) {
          more = true;
          break;
        }
        list.push_back(str(path(a, {"ip"})));
      }
      continue;
    }
    for (const json& p : ports) {
      count += addrs.size();
      for (const json& a : addrs) {
        if (list.size() == max) {
          more = true;
          break;
        }
        list.push_back(joinHostPort(str(path(a, {"ip"})), integer(path(p, {"port"}))));
      }
    }
  }
  std::string ret = join(list, ",");
  if (more) ret += " + " + std::to_string(count - max) + " more...";
  return json::array({nameOf(ep), ret, age(ep, now)});
}

json endpointSliceCells(const json& es, long long now, json&) {
  const size_t max = 3;
  std::vector<std::string> ports;
  bool morePorts = false;
  size_t portCount = 0;
  for (const json& p : arrayOrEmpty(path(es, {"ports"}))) {
    if (ports.size() < max) {
      std::string s = "*";
      if (path(p, {"port"}).is_number()) {
        s = std::to_string(integer(path(p, {"port"})));
      } else if (path(p, {"name"}).is_string()) {
        s = str(path(p, {"name"}));
      }
      ports.push_back(s);
    } else if (ports.size() == max) {
      morePorts = true;
    }
    ++portCount;
  }
  std::vector<std::string> addrs;
  bool moreAddrs = false;
  size_t addrCount = 0;
  for (const json& e : arrayOrEmpty(path(es, {"endpoints"}))) {
    for (const json& a : arrayOrEmpty(path(e, {"addresses"}))) {
      if (addrs.size() < max) {
        addrs.push_back(str(a));
      } else if (addrs.size() == max) {
        moreAddrs = true;
      }
      ++addrCount;
    }
  }
  return json::array({nameOf(es), str(path(es, {"addressType"})),
                      listWithMore(ports, morePorts, portCount, max),
                      listWithMore(addrs, moreAddrs, addrCount, max), age(es, now)});
}

// Core events and events.k8s.io events (whose fields are renamed) print alike.
json eventCells(const json& ev, long long now, bool eventsGroup) {
  auto field = [&](const char* core, const char* group) -> const json& {
    return path(ev, {eventsGroup ? group : core});
  };
  const json& firstTs = field("firstTimestamp", "deprecatedFirstTimestamp");
  const json& lastTs = field("lastTimestamp", "deprecatedLastTimestamp");
  std::string first = timeOf(firstTs) ? since(firstTs, now) : since(path(ev, {"eventTime"}), now);
  std::string last = timeOf(lastTs) ? since(lastTs, now) : first;
  long long count = integer(field("count", "deprecatedCount"));
  const json& series = path(ev, {"series"});
  if (series.is_object()) {
    last = since(path(series, {"lastObservedTime"}), now);
    count = integer(path(series, {"count"}));
  } else if (count == 0) {
    count = 1;
  }
  const json& involved = field("involvedObject", "regarding");
  std::string target = lower(str(path(involved, {"kind"})));
  if (!str(path(involved, {"name"})).empty()) target += "/" + str(path(involved, {"name"}));
  const json& source = field("source", "deprecatedSource");
  std::string component = str(path(source, {"component"}));
  if (component.empty()) component = str(path(ev, {"reportingController"}));
  std::string host = str(path(source, {"host"}));
  if (host.empty()) host = str(path(ev, {"reportingInstance"}));
  std::string sourceStr = host.empty() ? component : component + ", " + host;
  return json::array({last, str(path(ev, {"type"})), str(path(ev, {"reason"})), target,
                      str(path(involved, {"fieldPath"})), sourceStr,
                      trimSpace(str(field("message", "note"))), first, count, nameOf(ev)});
}

json deploymentCells(const json& d, long long now, json&) {
  const json& spec = path(d, {"spec"});
  const json& status = path(d, {"status"});
  long long desired = integer(path(spec, {"replicas"}), 1);
  auto [names, images] = containerCells(path(spec, {"template", "spec"}));
  auto sel = selectorString(path(spec, {"selector"}));
  return json::array({nameOf(d),
                      std::to_string(integer(path(status, {"readyReplicas"}))) + "/" +
                          std::to_string(desired),
                      integer(path(status, {"updatedReplicas"})),
                      integer(path(status, {"availableReplicas"})), age(d, now), names, images,
                      sel ? *sel : std::string("<invalid>")});
}

json replicaSetCells(const json& rs, long long now, json&) {
  const json& spec = path(rs, {"spec"});
  const json& status = path(rs, {"status"});
  auto [names, images] = containerCells(path(spec, {"template", "spec"}));
  return json::array({nameOf(rs), integer(path(spec, {"replicas"}), 1),
                      integer(path(status, {"replicas"})),
                      integer(path(status, {"readyReplicas"})), age(rs, now), names, images,
                      formatLabelSelector(path(spec, {"selector"}))});
}

json statefulSetCells(const json& ss, long long now, json&) {
  const json& spec = path(ss, {"spec"});
  auto [names, images] = containerCells(path(spec, {"template", "spec"}));
  return json::array({nameOf(ss),
                      std::to_string(integer(path(ss, {"status", "readyReplicas"}))) + "/" +
                          std::to_string(integer(path(spec, {"replicas"}), 1)),
                      age(ss, now), names, images});
}

json daemonSetCells(const json& ds, long long now, json&) {
  const json& spec = path(ds, {"spec"});
  const json& status = path(ds, {"status"});
  auto [names, images] = containerCells(path(spec, {"template", "spec"}));
  return json::array({nameOf(ds), integer(path(status, {"desiredNumberScheduled"})),
                      integer(path(status, {"currentNumberScheduled"})),
                      integer(path(status, {"numberReady"})),
                      integer(path(status, {"updatedNumberScheduled"})),
                      integer(path(status, {"numberAvailable"})),
                      formatLabels(path(spec, {"template", "spec", "nodeSelector"})), age(ds, now),
                      names, images, formatLabelSelector(path(spec, {"selector"}))});
}

json csrCells(const json& csr, long long now, json&) {
  const json& spec = path(csr, {"spec"});
  bool approved = false, denied = false, failed = false;
  for (const json& c : arrayOrEmpty(path(csr, {"status", "conditions"}))) {
    std::string type = str(path(c, {"type"}));
    approved = approved || type == "Approved";
    denied = denied || type == "Denied";
    failed = failed || type == "Failed";
  }
  std::string condition = denied ? "Denied" : approved ? "Approved" : "Pending";
  if (failed) condition += ",Failed";
  if (!str(path(csr, {"status", "certificate"})).empty()) condition += ",Issued";
  std::string signer = str(path(spec, {"signerName"}));
  if (signer.empty()) signer = "<none>";
  std::string requested = "<none>";
  if (path(spec, {"expirationSeconds"}).is_number()) {
    requested = humanDuration(integer(path(spec, {"expirationSeconds"})));
  }
  return json::array({nameOf(csr), age(csr, now), signer, str(path(spec, {"username"})),
                      requested, condition});
}

}  // namespace

const std::map<std::string, Printer>& builtinPrinters() {
  static const std::map<std::string, Printer> kPrinters = [] {
    std::map<std::string, Printer> p;
    const std::string kContainersDoc = "Names of each container in the template.";
    const std::string kImagesDoc = "Images referenced by each container in the template.";
    p["pods"] = {
        {nameCol(),
         col("Ready", "string", "The aggregate readiness state of this pod for accepting traffic."),
         col("Status", "string", "The aggregate status of the containers in this pod."),
         col("Restarts", "string",
             "The number of times the containers in this pod have been restarted and when the "
             "last container in this pod has restarted."),
         ageCol(), col("IP", "string", "IP address allocated to the pod.", 1),
         col("Node", "string", "The node this pod is scheduled onto.", 1),
         col("Nominated Node", "string",
             "The node the scheduler nominated for this pod when preempting.", 1),
         col("Readiness Gates", "string", "Readiness gates of the pod that are true.", 1)},
        podCells};
    p["nodes"] = {
        {nameCol(), col("Status", "string", "The status of the node"),
         col("Roles", "string", "The roles of the node"), ageCol(),
         col("Version", "string", "Kubelet Version reported by the node."),
         col("Internal-IP", "string", "List of addresses reachable to the node.", 1),
         col("External-IP", "string", "List of addresses reachable to the node.", 1),
         col("OS-Image", "string", "OS Image reported by the node.", 1),
         col("Kernel-Version", "string", "Kernel Version reported by the node.", 1),
         col("Container-Runtime", "string", "ContainerRuntime Version reported by the node.",
             1)},
        nodeCells};
    p["namespaces"] = {{nameCol(), col("Status", "string", "The status of the namespace"),
                        ageCol()},
                       [](const json& o, long long now, json&) {
                         return json::array(
                             {nameOf(o), str(path(o, {"status", "phase"})), age(o, now)});
                       }};
    p["services"] = {
        {nameCol(), col("Type", "string", "Type determines how the Service is exposed."),
         col("Cluster-IP", "string", "The IP address of the service."),
         col("External-IP", "string", "External IPs of the service."),
         col("Port(s)", "string", "The list of ports that are exposed by this service."),
         ageCol(), col("Selector", "string", "Route service traffic to pods with these labels.", 1)},
        serviceCells};
    p["endpoints"] = {{nameCol(), col("Endpoints", "string", "The set of all endpoints."),
                       ageCol()},
                      endpointsCells};
    p["configmaps"] = {{nameCol(), col("Data", "string", "Configuration data."), ageCol()},
                       [](const json& o, long long now, json&) {
                         return json::array({nameOf(o),
                                             static_cast<long long>(sizeOf(path(o, {"data"})) +
                                                                    sizeOf(path(o, {"binaryData"}))),
                                             age(o, now)});
                       }};
    p["secrets"] = {{nameCol(), col("Type", "string", "Used to facilitate programmatic handling."),
                     col("Data", "string", "Secret data."), ageCol()},
                    [](const json& o, long long now, json&) {
                      return json::array({nameOf(o), str(path(o, {"type"})),
                                          static_cast<long long>(sizeOf(path(o, {"data"}))),
                                          age(o, now)});
                    }};
    p["serviceaccounts"] = {{nameCol(), col("Secrets", "string", "Secrets of the account."),
                             ageCol()},
                            [](const json& o, long long now, json&) {
                              return json::array(
                                  {nameOf(o), static_cast<long long>(sizeOf(path(o, {"secrets"}))),
                                   age(o, now)});
                            }};
    std::vector<Column> eventColumns = {
        col("Last Seen", "string", "The time at which the most recent occurrence was recorded."),
        col("Type", "string", "Type of this event (Normal, Warning)."),
        col("Reason", "string", "Short, machine understandable reason for the transition."),
        col("Object", "string", "The object that this event is about."),
        col("Subobject", "string", "The part of the object this event is about.", 1),
        col("Source", "string", "The component reporting this event.", 1),
        col("Message", "string", "A human-readable description of the status of this operation."),
        col("First Seen", "string", "The time at which the event was first recorded.", 1),
        col("Count", "string", "The number of times this event has occurred.", 1),
        {"Name", "string", "name", kNameDoc, 1}};
    p["events"] = {eventColumns, [](const json& o, long long now, json&) {
                     return eventCells(o, now, false);
                   }};
    p["events.events.k8s.io"] = {eventColumns, [](const json& o, long long now, json&) {
                                   return eventCells(o, now, true);
                                 }};
    p["deployments.apps"] = {
        {nameCol(), col("Ready", "string", "Number of the pod with ready state"),
         col("Up-to-date", "string", "Total number of non-terminated pods with the desired template."),
         col("Available", "string", "Total number of available pods."), ageCol(),
         col("Containers", "string", kContainersDoc, 1), col("Images", "string", kImagesDoc, 1),
         col("Selector", "string", "Label selector for pods.", 1)},
        deploymentCells};
    p["replicasets.apps"] = {
        {nameCol(), col("Desired", "integer", "Number of desired pods."),
         col("Current", "integer", "The most recently observed number of replicas."),
         col("Ready", "integer", "The number of ready replicas."), ageCol(),
         col("Containers", "string", kContainersDoc, 1), col("Images", "string", kImagesDoc, 1),
         col("Selector", "string", "Label selector for pods.", 1)},
        replicaSetCells};
    p["statefulsets.apps"] = {{nameCol(), col("Ready", "string", "Number of the pod with ready state"),
                               ageCol(), col("Containers", "string", kContainersDoc, 1),
                               col("Images", "string", kImagesDoc, 1)},
                              statefulSetCells};
    p["daemonsets.apps"] = {
        {nameCol(), col("Desired", "integer", "The total number of nodes that should run the pod."),
         col("Current", "integer", "The number of nodes running at least one daemon pod."),
         col("Ready", "integer", "The number of nodes with a ready daemon pod."),
         col("Up-to-date", "integer", "The number of nodes running the updated daemon pod."),
         col("Available", "integer", "The number of nodes with an available daemon pod."),
         col("Node Selector", "string", "Selector which must match a node's labels."), ageCol(),
         col("Containers", "string", kContainersDoc, 1), col("Images", "string", kImagesDoc, 1),
         col("Selector", "string", "Label selector for pods.", 1)},
        daemonSetCells};
    p["leases.coordination.k8s.io"] = {
        {nameCol(), col("Holder", "string", "The holder of the lease."), ageCol()},
        [](const json& o, long long now, json&) {
          return json::array({nameOf(o), str(path(o, {"spec", "holderIdentity"})), age(o, now)});
        }};
    p["endpointslices.discovery.k8s.io"] = {
        {nameCol(), col("AddressType", "string", "The type of address carried by this slice."),
         col("Ports", "string", "The network ports exposed by each endpoint."),
         col("Endpoints", "string", "The list of unique endpoints in this slice."), ageCol()},
        endpointSliceCells};
    p["certificatesigningrequests.certificates.k8s.io"] = {
        {nameCol(), ageCol(), col("SignerName", "string", "The requested signer."),
         col("Requestor", "string", "The user that created the request."),
         col("RequestedDuration", "string", "The requested validity duration."),
         col("Condition", "string", "The conditions of the request.")},
        csrCells};
    p["customresourcedefinitions.apiextensions.k8s.io"] = {
        {nameCol(), {"Created At", "date", "", kAgeDoc, 0}},
        [](const json& o, long long, json&) {
          // The default convertor prints the creation time as RFC 3339 in UTC.
          auto t = timeOf(path(o, {"metadata", "creationTimestamp"}));
          std::string created = kube::rfc3339FromUnix(t.value_or(kZeroTime));
          return json::array({nameOf(o), created});
        }};
    // rbac.authorization.k8s.io (upstream printRole, printRoleBinding, ...).
    Printer rbacRole = {{nameCol(), {"Created At", "date", "", kAgeDoc, 0}},
                        [](const json& o, long long, json&) {
                          auto t = timeOf(path(o, {"metadata", "creationTimestamp"}));
                          return json::array({nameOf(o), kube::rfc3339FromUnix(t.value_or(kZeroTime))});
                        }};
    p["roles.rbac.authorization.k8s.io"] = rbacRole;
    p["clusterroles.rbac.authorization.k8s.io"] = rbacRole;
    Printer rbacBinding = {
        {nameCol(), col("Role", "string", "Role indicates the role referenced by the binding."),
         ageCol(), col("Users", "string", "Users in the binding.", 1),
         col("Groups", "string", "Groups in the binding.", 1),
         col("ServiceAccounts", "string", "ServiceAccounts in the binding.", 1)},
        [](const json& o, long long now, json&) {
          std::vector<std::string> users, groups, sas;
          for (const auto& s : arrayOrEmpty(path(o, {"subjects"}))) {
            const std::string kind = str(path(s, {"kind"})), name = str(path(s, {"name"}));
            const std::string ns = str(path(s, {"namespace"}));
            if (kind == "User") users.push_back(name);
            if (kind == "Group") groups.push_back(name);
            if (kind == "ServiceAccount") sas.push_back(ns.empty() ? name : ns + "/" + name);
          }
          std::string role = str(path(o, {"roleRef", "kind"})) + "/" + str(path(o, {"roleRef", "name"}));
          return json::array({nameOf(o), role, age(o, now), join(users, ", "),
                              join(groups, ", "), join(sas, ", ")});
        }};
    p["rolebindings.rbac.authorization.k8s.io"] = rbacBinding;
    p["clusterrolebindings.rbac.authorization.k8s.io"] = rbacBinding;
    Printer webhooks = {
        {nameCol(),
         col("Webhooks", "integer",
             "Webhooks indicates the number of webhooks registered in this configuration"),
         ageCol()},
        [](const json& o, long long now, json&) {
          return json::array(
              {nameOf(o), static_cast<long long>(sizeOf(path(o, {"webhooks"}))), age(o, now)});
        }};
    p["mutatingwebhookconfigurations.admissionregistration.k8s.io"] = webhooks;
    p["validatingwebhookconfigurations.admissionregistration.k8s.io"] = webhooks;
    return p;
  }();
  return kPrinters;
}

}  // namespace strait::minicluster::table

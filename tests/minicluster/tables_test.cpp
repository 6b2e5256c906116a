#include "minicluster/tables.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "minicluster/registry.h"

namespace strait::minicluster {
namespace {

using json = nlohmann::json;
using ::testing::ElementsAre;

// 2024-06-01T12:00:00Z
constexpr long long kNow = 1717243200;

ResourceInfo info(std::string group, std::string resource, std::string kind) {
  ResourceInfo i;
  i.group = std::move(group);
  i.version = "v1";
  i.resource = std::move(resource);
  i.kind = std::move(kind);
  return i;
}

std::vector<std::string> columnNames(const json& table) {
  std::vector<std::string> names;
  for (const json& c : table["columnDefinitions"]) names.push_back(c["name"]);
  return names;
}

std::vector<int> priorities(const json& table) {
  std::vector<int> p;
  for (const json& c : table["columnDefinitions"]) p.push_back(c["priority"]);
  return p;
}

json onlyRowCells(const ResourceInfo& i, const json& obj) {
  json t = makeTable(i, {obj}, json::object(), "Metadata", kNow);
  EXPECT_EQ(t["rows"].size(), 1u);
  return t["rows"][0]["cells"];
}

TEST(TableHumanDuration, MatchesUpstreamCases) {
  struct Case {
    long long seconds;
    const char* want;
  } cases[] = {
      {-5, "<invalid>"},  {-1, "0s"},        {0, "0s"},          {45, "45s"},
      {119, "119s"},      {120, "2m"},       {192, "3m12s"},     {599, "9m59s"},
      {600, "10m"},       {720, "12m"},      {179 * 60, "179m"}, {3 * 3600, "3h"},
      {4 * 3600 + 300, "4h5m"},              {8 * 3600, "8h"},   {47 * 3600, "47h"},
      {51 * 3600, "2d3h"},                   {7 * 86400, "7d"},  {8 * 86400, "8d"},
      {729 * 86400, "729d"},                 {(3 * 365 + 45) * 86400LL, "3y45d"},
      {2 * 365 * 86400LL, "2y"},             {9 * 365 * 86400LL, "9y"},
  };
  for (const Case& c : cases) {
    EXPECT_EQ(humanDuration(c.seconds), c.want) << c.seconds;
  }
}

TEST(TableColumns, BuiltinKindsMatchUpstream) {
  auto names = [](const ResourceInfo& i) {
    return columnNames(makeTable(i, {}, json::object(), "Metadata", kNow));
  };
  EXPECT_THAT(names(info("", "pods", "Pod")),
              ElementsAre("Name", "Ready", "Status", "Restarts", "Age", "IP", "Node",
                          "Nominated Node", "Readiness Gates"));
  EXPECT_THAT(priorities(makeTable(info("", "pods", "Pod"), {}, json::object(), "None", kNow)),
              ElementsAre(0, 0, 0, 0, 0, 1, 1, 1, 1));
  EXPECT_THAT(names(info("", "nodes", "Node")),
              ElementsAre("Name", "Status", "Roles", "Age", "Version", "Internal-IP",
                          "External-IP", "OS-Image", "Kernel-Version", "Container-Runtime"));
  EXPECT_THAT(names(info("", "namespaces", "Namespace")), ElementsAre("Name", "Status", "Age"));
  EXPECT_THAT(names(info("", "services", "Service")),
              ElementsAre("Name", "Type", "Cluster-IP", "External-IP", "Port(s)", "Age",
                          "Selector"));
  EXPECT_THAT(names(info("", "endpoints", "Endpoints")), ElementsAre("Name", "Endpoints", "Age"));
  EXPECT_THAT(names(info("", "configmaps", "ConfigMap")), ElementsAre("Name", "Data", "Age"));
  EXPECT_THAT(names(info("", "secrets", "Secret")), ElementsAre("Name", "Type", "Data", "Age"));
  EXPECT_THAT(names(info("", "serviceaccounts", "ServiceAccount")),
              ElementsAre("Name", "Secrets", "Age"));
  EXPECT_THAT(names(info("", "events", "Event")),
              ElementsAre("Last Seen", "Type", "Reason", "Object", "Subobject", "Source",
                          "Message", "First Seen", "Count", "Name"));
  EXPECT_THAT(priorities(makeTable(info("", "events", "Event"), {}, json::object(), "None", kNow)),
              ElementsAre(0, 0, 0, 0, 1, 1, 0, 1, 1, 1));
  EXPECT_THAT(names(info("apps", "deployments", "Deployment")),
              ElementsAre("Name", "Ready", "Up-to-date", "Available", "Age", "Containers",
                          "Images", "Selector"));
  EXPECT_THAT(names(info("apps", "replicasets", "ReplicaSet")),
              ElementsAre("Name", "Desired", "Current", "Ready", "Age", "Containers", "Images",
                          "Selector"));
  EXPECT_THAT(names(info("coordination.k8s.io", "leases", "Lease")),
              ElementsAre("Name", "Holder", "Age"));
  EXPECT_THAT(names(info("discovery.k8s.io", "endpointslices", "EndpointSlice")),
              ElementsAre("Name", "AddressType", "Ports", "Endpoints", "Age"));
  EXPECT_THAT(names(info("certificates.k8s.io", "certificatesigningrequests",
                         "CertificateSigningRequest")),
              ElementsAre("Name", "Age", "SignerName", "Requestor", "RequestedDuration",
                          "Condition"));
  EXPECT_THAT(names(info("apiextensions.k8s.io", "customresourcedefinitions",
                         "CustomResourceDefinition")),
              ElementsAre("Name", "Created At"));
  EXPECT_THAT(names(info("admissionregistration.k8s.io", "validatingwebhookconfigurations",
                         "ValidatingWebhookConfiguration")),
              ElementsAre("Name", "Webhooks", "Age"));
  EXPECT_THAT(names(info("rbac.authorization.k8s.io", "roles", "Role")),
              ElementsAre("Name", "Created At"));
  EXPECT_THAT(names(info("rbac.authorization.k8s.io", "rolebindings", "RoleBinding")),
              ElementsAre("Name", "Role", "Age", "Users", "Groups", "ServiceAccounts"));
  // A built-in kind without a printer of its own: name and age.
  EXPECT_THAT(names(info("example.com", "gadgets", "Gadget")), ElementsAre("Name", "Age"));
}

TEST(TableShape, MetadataObjectAndListMeta) {
  json pod = {{"metadata",
               {{"name", "web"},
                {"namespace", "default"},
                {"labels", {{"app", "web"}}},
                {"creationTimestamp", "2024-06-01T11:59:15Z"}}},
              {"spec", {{"containers", {{{"name", "c"}}}}}}};
  json listMeta = {{"resourceVersion", "42"}, {"continue", "tok"}};
  json t = makeTable(info("", "pods", "Pod"), {pod}, listMeta, "Metadata", kNow);
  EXPECT_EQ(t["kind"], "Table");
  EXPECT_EQ(t["apiVersion"], "meta.k8s.io/v1");
  EXPECT_EQ(t["metadata"], listMeta);
  const json& col = t["columnDefinitions"][0];
  EXPECT_EQ(col["type"], "string");
  EXPECT_EQ(col["format"], "name");
  EXPECT_TRUE(col.contains("description"));
  const json& row = t["rows"][0];
  EXPECT_EQ(row["object"]["kind"], "PartialObjectMetadata");
  EXPECT_EQ(row["object"]["apiVersion"], "meta.k8s.io/v1");
  EXPECT_EQ(row["object"]["metadata"], pod["metadata"]);
  EXPECT_EQ(row["cells"][4], "45s");

  json full = makeTable(info("", "pods", "Pod"), {pod}, listMeta, "Object", kNow);
  EXPECT_EQ(full["rows"][0]["object"], pod);
  json none = makeTable(info("", "pods", "Pod"), {pod}, listMeta, "None", kNow);
  EXPECT_FALSE(none["rows"][0].contains("object"));
  EXPECT_EQ(makeTable(info("", "pods", "Pod"), {}, json(), "None", kNow)["metadata"],
            json::object());
}

TEST(TablePods, RunningReadyWithRestarts) {
  json pod = json::parse(R"({
    "metadata": {"name": "web-1", "creationTimestamp": "2024-06-01T08:00:00Z"},
    "spec": {"nodeName": "node-a", "containers": [{"name": "app"}]},
    "status": {
      "phase": "Running", "podIP": "10.0.0.7", "podIPs": [{"ip": "10.0.0.7"}],
      "conditions": [{"type": "Ready", "status": "True"}],
      "containerStatuses": [{
        "name": "app", "ready": true, "restartCount": 3,
        "state": {"running": {"startedAt": "2024-06-01T11:55:00Z"}},
        "lastState": {"terminated": {"exitCode": 1, "reason": "Error",
                                     "finishedAt": "2024-06-01T11:55:00Z"}}}]}
  })");
  EXPECT_EQ(onlyRowCells(info("", "pods", "Pod"), pod),
            json::parse(R"J(["web-1", "1/1", "Running", "3 (5m ago)", "4h", "10.0.0.7",
                             "node-a", "<none>", "<none>"])J"));
}

TEST(TablePods, PendingContainerCreating) {
  json pod = json::parse(R"({
    "metadata": {"name": "web-2", "creationTimestamp": "2024-06-01T11:59:50Z"},
    "spec": {"containers": [{"name": "a"}, {"name": "b"}],
             "readinessGates": [{"conditionType": "example.com/ready"}]},
    "status": {"phase": "Pending",
      "containerStatuses": [
        {"name": "a", "ready": false, "restartCount": 0,
         "state": {"waiting": {"reason": "ContainerCreating"}}},
        {"name": "b", "ready": false, "restartCount": 0,
         "state": {"waiting": {"reason": "ContainerCreating"}}}]}
  })");
  EXPECT_EQ(onlyRowCells(info("", "pods", "Pod"), pod),
            json::parse(R"(["web-2", "0/2", "ContainerCreating", "0", "10s", "<none>",
                            "<none>", "<none>", "0/1"])"));
}

TEST(TablePods, StatusVariants) {
  const ResourceInfo pods = info("", "pods", "Pod");
  json base = json::parse(R"({
    "metadata": {"name": "p", "creationTimestamp": "2024-06-01T11:00:00Z"},
    "spec": {"containers": [{"name": "app"}]},
    "status": {"phase": "Running", "containerStatuses": [{"name": "app", "ready": true,
               "restartCount": 0, "state": {"running": {}}}]}
  })");

  json terminating = base;
  terminating["metadata"]["deletionTimestamp"] = "2024-06-01T11:59:00Z";
  EXPECT_EQ(onlyRowCells(pods, terminating)[2], "Terminating");

  json nodeLost = terminating;
  nodeLost["status"]["reason"] = "NodeLost";
  EXPECT_EQ(onlyRowCells(pods, nodeLost)[2], "Unknown");

  json crash = base;
  crash["status"]["containerStatuses"][0] = json::parse(R"({"name": "app", "ready": false,
      "restartCount": 7, "state": {"waiting": {"reason": "CrashLoopBackOff"}}})");
  EXPECT_EQ(onlyRowCells(pods, crash)[2], "CrashLoopBackOff");
  EXPECT_EQ(onlyRowCells(pods, crash)[3], "7");  // no lastState: no "(ago)"
  EXPECT_EQ(onlyRowCells(pods, crash)[1], "0/1");

  json completed = base;
  completed["status"]["phase"] = "Succeeded";
  completed["status"]["containerStatuses"][0] = json::parse(R"({"name": "app", "ready": false,
      "restartCount": 0, "state": {"terminated": {"exitCode": 0, "reason": "Completed"}}})");
  json t = makeTable(pods, {completed}, json::object(), "None", kNow);
  EXPECT_EQ(t["rows"][0]["cells"][2], "Completed");
  EXPECT_EQ(t["rows"][0]["conditions"][0]["reason"], "Succeeded");
  completed["metadata"]["deletionTimestamp"] = "2024-06-01T11:59:00Z";
  EXPECT_EQ(onlyRowCells(pods, completed)[2], "Completed");  // terminal pods never Terminating

  json signal = base;
  signal["status"]["containerStatuses"][0]["state"] = {{"terminated", {{"signal", 9}}}};
  EXPECT_EQ(onlyRowCells(pods, signal)[2], "Signal:9");

  json init = base;
  init["spec"]["initContainers"] = json::parse(R"([{"name": "i1"}, {"name": "i2"}])");
  init["status"]["phase"] = "Pending";
  init["status"]["initContainerStatuses"] = json::parse(R"([
      {"name": "i1", "restartCount": 0, "state": {"terminated": {"exitCode": 0}}},
      {"name": "i2", "restartCount": 0, "state": {"running": {}}}])");
  init["status"]["containerStatuses"][0] = json::parse(R"({"name": "app", "ready": false,
      "restartCount": 0, "state": {"waiting": {"reason": "PodInitializing"}}})");
  EXPECT_EQ(onlyRowCells(pods, init)[2], "Init:1/2");
  init["status"]["initContainerStatuses"][1]["state"] = {{"waiting", {{"reason", "ErrImagePull"}}}};
  EXPECT_EQ(onlyRowCells(pods, init)[2], "Init:ErrImagePull");
  init["status"]["initContainerStatuses"][1]["state"] = {{"terminated", {{"exitCode", 2}}}};
  EXPECT_EQ(onlyRowCells(pods, init)[2], "Init:ExitCode:2");

  json gated = base;
  gated["status"] = json::parse(R"({"phase": "Pending", "conditions": [
      {"type": "PodScheduled", "status": "False", "reason": "SchedulingGated"}]})");
  EXPECT_EQ(onlyRowCells(pods, gated)[2], "SchedulingGated");

  json evicted = base;
  evicted["status"] = json::parse(R"({"phase": "Failed", "reason": "Evicted"})");
  EXPECT_EQ(onlyRowCells(pods, evicted)[2], "Evicted");
}

TEST(TableNodes, StatusRolesAndWideColumns) {
  const ResourceInfo nodes = info("", "nodes", "Node");
  json node = json::parse(R"({
    "metadata": {"name": "node-a", "creationTimestamp": "2024-05-24T12:00:00Z",
                 "labels": {"node-role.kubernetes.io/control-plane": "",
                            "node-role.kubernetes.io/worker": "",
                            "kubernetes.io/role": "infra",
                            "kubernetes.io/hostname": "node-a"}},
    "status": {
      "conditions": [{"type": "MemoryPressure", "status": "False"},
                     {"type": "Ready", "status": "True"}],
      "addresses": [{"type": "InternalIP", "address": "192.168.1.10"},
                    {"type": "Hostname", "address": "node-a"}],
      "nodeInfo": {"kubeletVersion": "v1.32.0", "osImage": "Debian GNU/Linux 12",
                   "kernelVersion": "6.1.0", "containerRuntimeVersion": "containerd://1.7"}}
  })");
  EXPECT_EQ(onlyRowCells(nodes, node),
            json::parse(R"(["node-a", "Ready", "control-plane,infra,worker", "8d", "v1.32.0",
                            "192.168.1.10", "<none>", "Debian GNU/Linux 12", "6.1.0",
                            "containerd://1.7"])"));

  json notReady = node;
  notReady["status"]["conditions"][1]["status"] = "Unknown";
  notReady["spec"]["unschedulable"] = true;
  notReady["metadata"]["labels"] = {{"kubernetes.io/hostname", "node-a"}};
  notReady["status"]["nodeInfo"].erase("osImage");
  json cells = onlyRowCells(nodes, notReady);
  EXPECT_EQ(cells[1], "NotReady,SchedulingDisabled");
  EXPECT_EQ(cells[2], "<none>");
  EXPECT_EQ(cells[7], "<unknown>");

  json bare = {{"metadata", {{"name", "n"}}}};
  cells = onlyRowCells(nodes, bare);
  EXPECT_EQ(cells[1], "Unknown");
  EXPECT_EQ(cells[3], "<unknown>");
}

TEST(TableServices, PortsTypesAndSelector) {
  const ResourceInfo svcs = info("", "services", "Service");
  json np = json::parse(R"({
    "metadata": {"name": "web", "creationTimestamp": "2024-06-01T11:48:00Z"},
    "spec": {"type": "NodePort", "clusterIP": "10.96.0.10", "clusterIPs": ["10.96.0.10"],
             "selector": {"tier": "front", "app": "web"},
             "ports": [{"port": 80, "protocol": "TCP"},
                       {"port": 443, "nodePort": 30443, "protocol": "TCP"},
                       {"port": 53, "protocol": "UDP"}]}
  })");
  EXPECT_EQ(onlyRowCells(svcs, np),
            json::parse(R"(["web", "NodePort", "10.96.0.10", "<none>",
                            "80/TCP,443:30443/TCP,53/UDP", "12m", "app=web,tier=front"])"));

  json lb = np;
  lb["spec"]["type"] = "LoadBalancer";
  json cells = onlyRowCells(svcs, lb);
  EXPECT_EQ(cells[3], "<pending>");
  lb["status"]["loadBalancer"]["ingress"] = json::parse(R"([{"ip": "203.0.113.9"}])");
  EXPECT_EQ(onlyRowCells(svcs, lb)[3], "203.0.113.9");

  json headless = {{"metadata", {{"name", "h"}}}, {"spec", {{"clusterIP", "None"}}}};
  cells = onlyRowCells(svcs, headless);
  EXPECT_EQ(cells[1], "ClusterIP");
  EXPECT_EQ(cells[2], "None");
  EXPECT_EQ(cells[4], "<none>");
  EXPECT_EQ(cells[6], "<none>");

  json ext = {{"metadata", {{"name", "e"}}},
              {"spec", {{"type", "ExternalName"}, {"externalName", "example.com"}}}};
  EXPECT_EQ(onlyRowCells(svcs, ext)[3], "example.com");
}

TEST(TableWorkloads, DeploymentAndReplicaSet) {
  json dep = json::parse(R"({
    "metadata": {"name": "web", "creationTimestamp": "2024-06-01T10:00:00Z"},
    "spec": {"replicas": 3,
             "selector": {"matchLabels": {"app": "web"},
                          "matchExpressions": [{"key": "env", "operator": "In",
                                                "values": ["prod", "dev"]}]},
             "template": {"spec": {"containers": [{"name": "nginx", "image": "nginx:1.27"},
                                                   {"name": "log", "image": "busybox"}]}}},
    "status": {"replicas": 3, "readyReplicas": 2, "updatedReplicas": 3, "availableReplicas": 2}
  })");
  EXPECT_EQ(onlyRowCells(info("apps", "deployments", "Deployment"), dep),
            json::parse(R"J(["web", "2/3", 3, 2, "120m", "nginx,log", "nginx:1.27,busybox",
                             "app=web,env in (dev,prod)"])J"));

  json rs = dep;
  rs["metadata"]["name"] = "web-abc";
  rs["spec"]["selector"] = json::object();
  EXPECT_EQ(onlyRowCells(info("apps", "replicasets", "ReplicaSet"), rs),
            json::parse(R"(["web-abc", 3, 3, 2, "120m", "nginx,log", "nginx:1.27,busybox",
                            "<none>"])"));
}

TEST(TableEvents, CoreAndEventsGroup) {
  json ev = json::parse(R"({
    "metadata": {"name": "web.17d", "creationTimestamp": "2024-06-01T11:50:00Z"},
    "involvedObject": {"kind": "Pod", "name": "web", "fieldPath": "spec.containers{app}"},
    "reason": "Pulled", "type": "Normal", "message": " Container image pulled \n",
    "source": {"component": "kubelet", "host": "node-a"},
    "firstTimestamp": "2024-06-01T11:50:00Z", "lastTimestamp": "2024-06-01T11:59:30Z",
    "count": 4
  })");
  EXPECT_EQ(onlyRowCells(info("", "events", "Event"), ev),
            json::parse(R"(["30s", "Normal", "Pulled", "pod/web", "spec.containers{app}",
                            "kubelet, node-a", "Container image pulled", "10m", 4,
                            "web.17d"])"));

  json micro = json::parse(R"({
    "metadata": {"name": "n.1"},
    "regarding": {"kind": "Node", "name": "node-a"},
    "reason": "Starting", "type": "Normal", "note": "Starting kubelet.",
    "reportingController": "kubelet", "eventTime": "2024-06-01T11:58:00.000000Z"
  })");
  EXPECT_EQ(onlyRowCells(info("events.k8s.io", "events", "Event"), micro),
            json::parse(R"(["2m", "Normal", "Starting", "node/node-a", "", "kubelet",
                            "Starting kubelet.", "2m", 1, "n.1"])"));
}

TEST(TableOtherKinds, CellsMatchUpstreamFormats) {
  json lease = json::parse(R"({"metadata": {"name": "node-a",
      "creationTimestamp": "2024-06-01T11:59:00Z"}, "spec": {"holderIdentity": "node-a"}})");
  EXPECT_EQ(onlyRowCells(info("coordination.k8s.io", "leases", "Lease"), lease),
            json::parse(R"(["node-a", "node-a", "60s"])"));

  json cm = json::parse(R"({"metadata": {"name": "c"}, "data": {"a": "1", "b": "2"},
      "binaryData": {"c": "AA=="}})");
  EXPECT_EQ(onlyRowCells(info("", "configmaps", "ConfigMap"), cm),
            json::parse(R"(["c", 3, "<unknown>"])"));

  json secret = json::parse(R"({"metadata": {"name": "s"}, "type": "Opaque",
      "data": {"a": "MQ=="}})");
  EXPECT_EQ(onlyRowCells(info("", "secrets", "Secret"), secret),
            json::parse(R"(["s", "Opaque", 1, "<unknown>"])"));

  json ep = json::parse(R"({"metadata": {"name": "web"}, "subsets": [
      {"addresses": [{"ip": "10.0.0.1"}, {"ip": "10.0.0.2"}, {"ip": "fd00::3"}],
       "ports": [{"port": 80}, {"port": 443}]}]})");
  EXPECT_EQ(onlyRowCells(info("", "endpoints", "Endpoints"), ep)[1],
            "10.0.0.1:80,10.0.0.2:80,[fd00::3]:80 + 3 more...");
  EXPECT_EQ(onlyRowCells(info("", "endpoints", "Endpoints"), {{"metadata", {{"name", "x"}}}})[1],
            "<none>");

  json slice = json::parse(R"({"metadata": {"name": "web-x"}, "addressType": "IPv4",
      "ports": [{"port": 80, "name": "http"}, {"name": "metrics"}],
      "endpoints": [{"addresses": ["10.0.0.1"]}, {"addresses": ["10.0.0.2"]}]})");
  EXPECT_EQ(onlyRowCells(info("discovery.k8s.io", "endpointslices", "EndpointSlice"), slice),
            json::parse(R"(["web-x", "IPv4", "80,metrics", "10.0.0.1,10.0.0.2", "<unknown>"])"));

  json csr = json::parse(R"({"metadata": {"name": "csr-1",
      "creationTimestamp": "2024-06-01T11:59:00Z"},
      "spec": {"signerName": "kubernetes.io/kube-apiserver-client", "username": "alice",
               "expirationSeconds": 86400},
      "status": {"conditions": [{"type": "Approved", "status": "True"}],
                 "certificate": "LS0t"}})");
  EXPECT_EQ(onlyRowCells(info("certificates.k8s.io", "certificatesigningrequests",
                              "CertificateSigningRequest"),
                         csr),
            json::parse(R"(["csr-1", "60s", "kubernetes.io/kube-apiserver-client", "alice",
                            "24h", "Approved,Issued"])"));

  json crd = json::parse(R"({"metadata": {"name": "widgets.example.com",
      "creationTimestamp": "2024-02-29T23:05:09Z"}})");
  EXPECT_EQ(onlyRowCells(info("apiextensions.k8s.io", "customresourcedefinitions",
                              "CustomResourceDefinition"),
                         crd),
            json::parse(R"(["widgets.example.com", "2024-02-29T23:05:09Z"])"));

  json hooks = json::parse(R"({"metadata": {"name": "h"}, "webhooks": [{}, {}]})");
  EXPECT_EQ(onlyRowCells(info("admissionregistration.k8s.io", "mutatingwebhookconfigurations",
                              "MutatingWebhookConfiguration"),
                         hooks)[1],
            2);

  json ns = json::parse(R"({"metadata": {"name": "default",
      "creationTimestamp": "2024-03-01T12:00:00Z"}, "status": {"phase": "Active"}})");
  EXPECT_EQ(onlyRowCells(info("", "namespaces", "Namespace"), ns),
            json::parse(R"(["default", "Active", "92d"])"));

  json role = json::parse(R"({"metadata": {"name": "r",
      "creationTimestamp": "2024-06-01T11:00:00+01:00"}})");
  EXPECT_EQ(onlyRowCells(info("example.com", "gadgets", "Gadget"), role),
            json::parse(R"(["r", "120m"])"));
  // Roles print their creation time in UTC (upstream printRole).
  EXPECT_EQ(onlyRowCells(info("rbac.authorization.k8s.io", "roles", "Role"), role),
            json::parse(R"(["r", "2024-06-01T10:00:00Z"])"));
}

TEST(TableCustomResources, PrinterColumns) {
  ResourceInfo widgets = info("example.com", "widgets", "Widget");
  widgets.custom = true;
  widgets.printerColumns = json::parse(R"([
    {"name": "Replicas", "type": "integer", "jsonPath": ".spec.replicas"},
    {"name": "Ready", "type": "string",
     "jsonPath": ".status.conditions[?(@.type==\"Ready\")].status"},
    {"name": "Color", "type": "string", "jsonPath": ".spec.color", "priority": 1,
     "description": "The color."},
    {"name": "Tags", "type": "string", "jsonPath": ".spec.tags"},
    {"name": "First", "type": "string", "jsonPath": ".spec.tags[0]"},
    {"name": "Label", "type": "string", "jsonPath": ".metadata.labels['app\\.io/name']"},
    {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"}
  ])");
  json w = json::parse(R"({
    "apiVersion": "example.com/v1", "kind": "Widget",
    "metadata": {"name": "w1", "creationTimestamp": "2024-06-01T11:57:00Z",
                 "labels": {"app.io/name": "shop"}},
    "spec": {"replicas": 2, "tags": ["a", "b"]},
    "status": {"conditions": [{"type": "Synced", "status": "False"},
                              {"type": "Ready", "status": "True"}]}
  })");
  json t = makeTable(widgets, {w}, json::object(), "Metadata", kNow);
  EXPECT_THAT(columnNames(t),
              ElementsAre("Name", "Replicas", "Ready", "Color", "Tags", "First", "Label", "Age"));
  EXPECT_EQ(t["columnDefinitions"][1]["type"], "integer");
  EXPECT_EQ(t["columnDefinitions"][1]["description"],
            "Custom resource definition column (in JSONPath format): .spec.replicas");
  EXPECT_EQ(t["columnDefinitions"][3]["description"], "The color.");
  EXPECT_EQ(t["columnDefinitions"][3]["priority"], 1);
  EXPECT_EQ(t["rows"][0]["cells"],
            json::parse(R"(["w1", 2, "True", null, "[\"a\",\"b\"]", "a", "shop", "3m"])"));
  EXPECT_EQ(t["rows"][0]["object"]["kind"], "PartialObjectMetadata");

  ResourceInfo plain = info("example.com", "gadgets", "Gadget");
  plain.custom = true;
  json t2 = makeTable(plain, {w}, json::object(), "Metadata", kNow);
  EXPECT_THAT(columnNames(t2), ElementsAre("Name", "Age"));
  EXPECT_EQ(t2["columnDefinitions"][1]["type"], "date");
  EXPECT_EQ(t2["rows"][0]["cells"], json::parse(R"(["w1", "3m"])"));
}

TEST(TableRobustness, MalformedObjectsNeverThrow) {
  // Objects come from users: wrong types anywhere must give a row, not an exception.
  std::vector<json> weird = {
      json(),
      json("string"),
      json::array({1, 2}),
      json::parse(R"({"metadata": "x", "spec": [], "status": 7})"),
      json::parse(R"({"metadata": {"name": 5, "creationTimestamp": "yesterday",
          "labels": {"node-role.kubernetes.io/": "", "kubernetes.io/role": 3}},
          "spec": {"containers": "c", "initContainers": [1, {"restartPolicy": "Always"}],
                   "ports": [{"port": "80", "nodePort": -1}], "replicas": "3",
                   "selector": {"matchExpressions": [{"key": "k", "operator": "Bogus"}]},
                   "readinessGates": [null], "expirationSeconds": 1e300,
                   "template": {"spec": {"containers": [{"name": 1}]}}},
          "status": {"conditions": [null, {"type": "Ready"}], "podIPs": [1],
                     "containerStatuses": [{"state": {"terminated": {"signal": "x"}},
                                            "lastState": {"terminated": {"finishedAt": 1}}}],
                     "initContainerStatuses": [{"state": []}], "addresses": {},
                     "loadBalancer": {"ingress": [{}]}},
          "subsets": [{"addresses": [{}], "ports": [{}]}], "endpoints": [{"addresses": [2]}],
          "webhooks": {}, "data": 3, "involvedObject": [], "series": {}})"),
  };
  std::vector<ResourceInfo> kinds = {
      info("", "pods", "Pod"),
      info("", "nodes", "Node"),
      info("", "namespaces", "Namespace"),
      info("", "services", "Service"),
      info("", "endpoints", "Endpoints"),
      info("", "configmaps", "ConfigMap"),
      info("", "secrets", "Secret"),
      info("", "serviceaccounts", "ServiceAccount"),
      info("", "events", "Event"),
      info("events.k8s.io", "events", "Event"),
      info("apps", "deployments", "Deployment"),
      info("apps", "replicasets", "ReplicaSet"),
      info("apps", "statefulsets", "StatefulSet"),
      info("apps", "daemonsets", "DaemonSet"),
      info("coordination.k8s.io", "leases", "Lease"),
      info("discovery.k8s.io", "endpointslices", "EndpointSlice"),
      info("certificates.k8s.io", "certificatesigningrequests", "CertificateSigningRequest"),
      info("apiextensions.k8s.io", "customresourcedefinitions", "CustomResourceDefinition"),
      info("admissionregistration.k8s.io", "mutatingwebhookconfigurations",
           "MutatingWebhookConfiguration"),
      info("example.com", "things", "Thing"),
  };
  ResourceInfo custom = info("example.com", "widgets", "Widget");
  custom.custom = true;
  custom.printerColumns = json::parse(R"([
    {"name": "A", "type": "integer", "jsonPath": ".spec.replicas"},
    {"name": "B", "type": "date", "jsonPath": ".metadata.creationTimestamp"},
    {"name": "C", "type": "string", "jsonPath": ".spec[99999999999999999999999]"},
    {"name": "D", "type": "string", "jsonPath": ".status.conditions[?(@.type=="},
    {"name": "E", "type": "number", "jsonPath": "..x"},
    {"name": "F", "type": "boolean", "jsonPath": ".spec['unterminated"},
    {"name": 3, "type": null, "jsonPath": 4}
  ])");
  kinds.push_back(custom);
  for (const ResourceInfo& k : kinds) {
    for (const json& obj : weird) {
      json t;
      EXPECT_NO_THROW(t = makeTable(k, {obj}, json::object(), "Metadata", kNow))
          << k.resource << " " << obj.dump();
      ASSERT_EQ(t["rows"].size(), 1u);
      EXPECT_EQ(t["rows"][0]["cells"].size(), t["columnDefinitions"].size()) << k.resource;
    }
  }
}

}  // namespace
}  // namespace strait::minicluster

#include "minicluster/registry.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>

namespace strait::minicluster {
namespace {

json widgetCrd() {
  return json::parse(R"({
    "apiVersion": "apiextensions.k8s.io/v1",
    "kind": "CustomResourceDefinition",
    "metadata": {"name": "widgets.example.com"},
    "spec": {
      "group": "example.com",
      "names": {"plural": "widgets", "singular": "widget", "kind": "Widget",
                "shortNames": ["wd"], "categories": ["all"]},
      "scope": "Namespaced",
      "versions": [
        {"name": "v1beta1", "served": true, "storage": false},
        {"name": "v1", "served": true, "storage": true,
         "subresources": {"status": {}},
         "additionalPrinterColumns": [{"name": "Color", "type": "string",
                                       "jsonPath": ".spec.color"}],
         "selectableFields": [{"jsonPath": ".spec.color"}],
         "schema": {"openAPIV3Schema": {"type": "object", "properties": {
            "spec": {"type": "object", "properties": {"color": {"type": "string"}}}}}}},
        {"name": "v0", "served": false, "storage": false}
      ]
    }
  })");
}

const json* findByKey(const json& arr, const char* key, const std::string& value) {
  for (const auto& e : arr) {
    if (e.value(key, std::string()) == value) return &e;
  }
  return nullptr;
}

std::vector<std::string> strings(const json& arr) { return arr.get<std::vector<std::string>>(); }

TEST(RegistryTest, FindsBuiltins) {
  Registry reg;
  auto pods = reg.find("", "v1", "pods");
  ASSERT_TRUE(pods);
  EXPECT_EQ(pods->kind, "Pod");
  EXPECT_EQ(pods->listKind, "PodList");
  EXPECT_EQ(pods->singular, "pod");
  EXPECT_TRUE(pods->namespaced);
  EXPECT_EQ(pods->shortNames, std::vector<std::string>{"po"});
  EXPECT_EQ(pods->categories, std::vector<std::string>{"all"});
  EXPECT_EQ(pods->groupResource(), "pods");
  for (const char* sub : {"status", "binding", "log", "exec", "eviction"}) {
    EXPECT_NE(std::find(pods->subresources.begin(), pods->subresources.end(), sub),
              pods->subresources.end())
        << sub;
  }

  auto deploy = reg.find("apps", "v1", "deployments");
  ASSERT_TRUE(deploy);
  EXPECT_EQ(deploy->apiVersion(), "apps/v1");
  EXPECT_EQ(deploy->groupResource(), "deployments.apps");

  auto ns = reg.findKind("", "Namespace");
  ASSERT_TRUE(ns);
  EXPECT_FALSE(ns->namespaced);
  EXPECT_EQ(std::count(ns->verbs.begin(), ns->verbs.end(), "deletecollection"), 0);

  auto crd = reg.findKind("apiextensions.k8s.io", "CustomResourceDefinition");
  ASSERT_TRUE(crd);
  EXPECT_EQ(crd->shortNames, (std::vector<std::string>{"crd", "crds"}));
  ASSERT_TRUE(reg.find("", "v1", "bindings"));
  EXPECT_EQ(reg.find("", "v1", "bindings")->verbs, std::vector<std::string>{"create"});

  EXPECT_FALSE(reg.find("", "v1", "widgets"));
  EXPECT_FALSE(reg.find("apps", "v2", "deployments"));
  EXPECT_FALSE(reg.findKind("apps", "Pod"));
  for (const char* r : {"namespaces", "nodes", "services", "endpoints", "configmaps", "secrets",
                        "serviceaccounts", "events"}) {
    EXPECT_TRUE(reg.find("", "v1", r)) << r;
  }
  EXPECT_TRUE(reg.find("discovery.k8s.io", "v1", "endpointslices"));
  EXPECT_TRUE(reg.find("coordination.k8s.io", "v1", "leases"));
  EXPECT_TRUE(reg.find("apps", "v1", "replicasets"));
  EXPECT_TRUE(reg.find("certificates.k8s.io", "v1", "certificatesigningrequests"));
  EXPECT_TRUE(reg.find("admissionregistration.k8s.io", "v1", "mutatingwebhookconfigurations"));
  EXPECT_TRUE(reg.find("admissionregistration.k8s.io", "v1", "validatingwebhookconfigurations"));
}

TEST(RegistryTest, LegacyDiscoveryDocuments) {
  Registry reg;
  json v = reg.apiVersions();
  EXPECT_EQ(v["kind"], "APIVersions");
  EXPECT_EQ(v["versions"], json::array({"v1"}));
  EXPECT_EQ(v["serverAddressByClientCIDRs"][0]["clientCIDR"], "0.0.0.0/0");

  json groups = reg.apiGroupList();
  EXPECT_EQ(groups["kind"], "APIGroupList");
  const json* apps = findByKey(groups["groups"], "name", "apps");
  ASSERT_NE(apps, nullptr);
  EXPECT_EQ((*apps)["preferredVersion"]["groupVersion"], "apps/v1");
  EXPECT_EQ((*apps)["versions"][0]["version"], "v1");
  EXPECT_EQ(findByKey(groups["groups"], "name", ""), nullptr);

  auto core = reg.apiResourceList("", "v1");
  ASSERT_TRUE(core);
  EXPECT_EQ((*core)["groupVersion"], "v1");
  const json* pods = findByKey((*core)["resources"], "name", "pods");
  ASSERT_NE(pods, nullptr);
  EXPECT_EQ((*pods)["kind"], "Pod");
  EXPECT_EQ((*pods)["singularName"], "pod");
  EXPECT_EQ((*pods)["namespaced"], true);
  EXPECT_EQ((*pods)["shortNames"], json::array({"po"}));
  const json* status = findByKey((*core)["resources"], "name", "pods/status");
  ASSERT_NE(status, nullptr);
  EXPECT_EQ((*status)["kind"], "Pod");
  EXPECT_EQ(strings((*status)["verbs"]), (std::vector<std::string>{"get", "patch", "update"}));
  const json* eviction = findByKey((*core)["resources"], "name", "pods/eviction");
  ASSERT_NE(eviction, nullptr);
  EXPECT_EQ((*eviction)["group"], "policy");
  EXPECT_EQ((*eviction)["kind"], "Eviction");
  EXPECT_NE(findByKey((*core)["resources"], "name", "pods/log"), nullptr);

  auto appsList = reg.apiResourceList("apps", "v1");
  ASSERT_TRUE(appsList);
  const json* scale = findByKey((*appsList)["resources"], "name", "deployments/scale");
  ASSERT_NE(scale, nullptr);
  EXPECT_EQ((*scale)["group"], "autoscaling");
  EXPECT_EQ((*scale)["kind"], "Scale");
  EXPECT_FALSE(reg.apiResourceList("apps", "v9"));
  EXPECT_FALSE(reg.apiResourceList("example.com", "v1"));
}

TEST(RegistryTest, AggregatedDiscoveryShape) {
  Registry reg;
  for (const std::string av : {"apidiscovery.k8s.io/v2", "apidiscovery.k8s.io/v2beta1"}) {
    json legacy = reg.aggregatedDiscovery(true, av);
    EXPECT_EQ(legacy["kind"], "APIGroupDiscoveryList");
    EXPECT_EQ(legacy["apiVersion"], av);
    ASSERT_EQ(legacy["items"].size(), 1u);
    const json& v1 = legacy["items"][0]["versions"][0];
    EXPECT_EQ(v1["version"], "v1");
    EXPECT_EQ(v1["freshness"], "Current");
    const json* pods = findByKey(v1["resources"], "resource", "pods");
    ASSERT_NE(pods, nullptr);
    EXPECT_EQ((*pods)["responseKind"], json({{"group", ""}, {"version", "v1"}, {"kind", "Pod"}}));
    EXPECT_EQ((*pods)["scope"], "Namespaced");
    EXPECT_EQ((*pods)["singularResource"], "pod");
    EXPECT_EQ((*pods)["shortNames"], json::array({"po"}));
    EXPECT_EQ((*pods)["categories"], json::array({"all"}));
    const json* log = findByKey((*pods)["subresources"], "subresource", "log");
    ASSERT_NE(log, nullptr);
    EXPECT_EQ(strings((*log)["verbs"]), std::vector<std::string>{"get"});
    const json* nodes = findByKey(v1["resources"], "resource", "nodes");
    ASSERT_NE(nodes, nullptr);
    EXPECT_EQ((*nodes)["scope"], "Cluster");

    json apis = reg.aggregatedDiscovery(false, av);
    ASSERT_FALSE(apis["items"].empty());
    for (const auto& item : apis["items"]) {
      EXPECT_FALSE(item["metadata"]["name"].get<std::string>().empty());
    }
    const json* apps = nullptr;
    for (const auto& item : apis["items"]) {
      if (item["metadata"]["name"] == "apps") apps = &item;
    }
    ASSERT_NE(apps, nullptr);
    const json* deploy = findByKey((*apps)["versions"][0]["resources"], "resource", "deployments");
    ASSERT_NE(deploy, nullptr);
    const json* scale = findByKey((*deploy)["subresources"], "subresource", "scale");
    ASSERT_NE(scale, nullptr);
    EXPECT_EQ((*scale)["responseKind"]["group"], "autoscaling");
  }
}

TEST(RegistryTest, CustomResourceLifecycle) {
  Registry reg;
  ASSERT_TRUE(reg.addCustom(widgetCrd()).ok());

  auto v1 = reg.find("example.com", "v1", "widgets");
  ASSERT_TRUE(v1);
  EXPECT_TRUE(v1->custom);
  EXPECT_EQ(v1->kind, "Widget");
  EXPECT_EQ(v1->listKind, "WidgetList");
  EXPECT_EQ(v1->singular, "widget");
  EXPECT_EQ(v1->shortNames, std::vector<std::string>{"wd"});
  EXPECT_EQ(v1->subresources, std::vector<std::string>{"status"});
  EXPECT_EQ(v1->printerColumns.size(), 1u);
  EXPECT_TRUE(reg.find("example.com", "v1beta1", "widgets"));
  EXPECT_FALSE(reg.find("example.com", "v0", "widgets"));  // not served
  auto byKind = reg.findKind("example.com", "Widget");
  ASSERT_TRUE(byKind);
  EXPECT_EQ(byKind->version, "v1");  // preferred: GA before beta

  json groups = reg.apiGroupList();
  const json* g = findByKey(groups["groups"], "name", "example.com");
  ASSERT_NE(g, nullptr);
  EXPECT_EQ((*g)["preferredVersion"]["version"], "v1");
  ASSERT_EQ((*g)["versions"].size(), 2u);
  EXPECT_EQ((*g)["versions"][1]["version"], "v1beta1");
  // CRD groups come after the built-in groups.
  EXPECT_EQ(groups["groups"].back()["name"], "example.com");

  auto list = reg.apiResourceList("example.com", "v1");
  ASSERT_TRUE(list);
  EXPECT_NE(findByKey((*list)["resources"], "name", "widgets/status"), nullptr);

  json agg = reg.aggregatedDiscovery(false, "apidiscovery.k8s.io/v2");
  const json* item = nullptr;
  for (const auto& i : agg["items"]) {
    if (i["metadata"]["name"] == "example.com") item = &i;
  }
  ASSERT_NE(item, nullptr);
  const json& res = (*item)["versions"][0]["resources"][0];
  EXPECT_EQ(res["resource"], "widgets");
  EXPECT_EQ(res["responseKind"]["kind"], "Widget");
  EXPECT_EQ(res["categories"], json::array({"all"}));

  // Re-adding replaces.
  json changed = widgetCrd();
  changed["spec"]["scope"] = "Cluster";
  ASSERT_TRUE(reg.addCustom(changed).ok());
  EXPECT_FALSE(reg.find("example.com", "v1", "widgets")->namespaced);

  reg.removeCustom("widgets.example.com");
  EXPECT_FALSE(reg.find("example.com", "v1", "widgets"));
  EXPECT_FALSE(reg.findKind("example.com", "Widget"));
  EXPECT_EQ(findByKey(reg.apiGroupList()["groups"], "name", "example.com"), nullptr);
  EXPECT_FALSE(reg.apiResourceList("example.com", "v1"));
  for (const auto& i : reg.aggregatedDiscovery(false, "apidiscovery.k8s.io/v2")["items"]) {
    EXPECT_NE(i["metadata"]["name"], "example.com");
  }
  reg.removeCustom("widgets.example.com");  // idempotent
}

struct MalformedCase {
  const char* name;
  std::function<void(json&)> mutate;
  const char* expected;
};

TEST(RegistryTest, MalformedCrdsAreInvalid) {
  std::vector<MalformedCase> cases = {
      {"no plural", [](json& c) { c["spec"]["names"].erase("plural"); },
       "spec.names.plural: Required value"},
      {"no kind", [](json& c) { c["spec"]["names"].erase("kind"); },
       "spec.names.kind: Required value"},
      {"no group", [](json& c) { c["spec"].erase("group"); }, "spec.group: Required value"},
      {"group without dot",
       [](json& c) {
         c["spec"]["group"] = "example";
         c["metadata"]["name"] = "widgets.example";
       },
       "spec.group: Invalid value"},
      {"bad scope", [](json& c) { c["spec"]["scope"] = "Global"; },
       "spec.scope: Unsupported value: \"Global\""},
      {"no versions", [](json& c) { c["spec"]["versions"] = json::array(); },
       "spec.versions: Required value"},
      {"two storage versions", [](json& c) { c["spec"]["versions"][0]["storage"] = true; },
       "must have exactly one version marked as storage version"},
      {"plural not a string", [](json& c) { c["spec"]["names"]["plural"] = 5; },
       "spec.names.plural: Invalid value: 5"},
      {"wrong name", [](json& c) { c["metadata"]["name"] = "gadgets.example.com"; },
       "metadata.name: Invalid value"},
      {"no spec", [](json& c) { c.erase("spec"); }, "spec: Required value"},
      {"version without name", [](json& c) { c["spec"]["versions"][1].erase("name"); },
       "spec.versions[1].name: Required value"},
      {"uppercase plural",
       [](json& c) {
         c["spec"]["names"]["plural"] = "Widgets";
         c["metadata"]["name"] = "Widgets.example.com";
       },
       "spec.names.plural: Invalid value"},
  };
  for (const auto& tc : cases) {
    Registry reg;
    json crd = widgetCrd();
    tc.mutate(crd);
    kube::Status st = reg.addCustom(crd);
    ASSERT_FALSE(st.ok()) << tc.name;
    EXPECT_EQ(st.code(), kube::Code::Invalid) << tc.name;
    EXPECT_NE(st.error().message.find(tc.expected), std::string::npos)
        << tc.name << ": " << st.error().message;
    EXPECT_FALSE(reg.find("example.com", "v1", "widgets")) << tc.name;
  }
  Registry reg;
  EXPECT_EQ(reg.addCustom(json::array()).code(), kube::Code::Invalid);
  EXPECT_EQ(reg.addCustom(json("x")).code(), kube::Code::Invalid);
}

TEST(RegistryTest, OpenApiIndexAndDocuments) {
  Registry reg;
  json index = reg.openApiIndex();
  ASSERT_TRUE(index["paths"].contains("api/v1"));
  ASSERT_TRUE(index["paths"].contains("apis/apps/v1"));
  const std::string coreUrl = index["paths"]["api/v1"]["serverRelativeURL"];
  EXPECT_EQ(coreUrl.rfind("/openapi/v3/api/v1?hash=", 0), 0u) << coreUrl;
  EXPECT_EQ(reg.openApiIndex(), index);  // stable for the same content

  auto core = reg.openApiDocument("api/v1");
  ASSERT_TRUE(core);
  EXPECT_EQ((*core)["openapi"].get<std::string>().rfind("3.", 0), 0u);
  const json& pod = (*core)["components"]["schemas"]["io.k8s.api.core.v1.Pod"];
  ASSERT_TRUE(pod.is_object());
  EXPECT_EQ(pod["type"], "object");
  EXPECT_EQ(pod["x-kubernetes-group-version-kind"],
            json::array({json{{"group", ""}, {"version", "v1"}, {"kind", "Pod"}}}));
  EXPECT_EQ(pod["properties"]["spec"]["x-kubernetes-preserve-unknown-fields"], true);
  EXPECT_EQ(pod["properties"]["metadata"]["allOf"][0]["$ref"],
            "#/components/schemas/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta");
  EXPECT_TRUE((*core)["components"]["schemas"]["io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"]
                  ["properties"]
                      .contains("labels"));

  // What kubectl's fieldValidation verifier checks: a patch operation for the GVK (single
  // object extension) carrying a fieldValidation parameter.
  const json& item = (*core)["paths"]["/api/v1/namespaces/{namespace}/pods/{name}"];
  ASSERT_TRUE(item.contains("patch"));
  const json& patch = item["patch"];
  EXPECT_EQ(patch["x-kubernetes-group-version-kind"],
            json({{"group", ""}, {"version", "v1"}, {"kind", "Pod"}}));
  EXPECT_EQ(patch["x-kubernetes-action"], "patch");
  for (const char* p : {"fieldValidation", "fieldManager", "dryRun", "force"}) {
    const json* param = findByKey(patch["parameters"], "name", p);
    ASSERT_NE(param, nullptr) << p;
    EXPECT_EQ((*param)["in"], "query");
  }
  EXPECT_TRUE(patch["requestBody"]["content"].contains("application/merge-patch+json"));
  EXPECT_TRUE(patch["requestBody"]["content"].contains("application/apply-patch+yaml"));
  EXPECT_TRUE(patch["requestBody"]["content"].contains("application/json-patch+json"));
  EXPECT_TRUE(item.contains("get"));
  EXPECT_TRUE(item.contains("put"));
  EXPECT_TRUE(item.contains("delete"));
  EXPECT_TRUE((*core)["paths"].contains("/api/v1/namespaces/{namespace}/pods"));
  EXPECT_TRUE((*core)["paths"].contains("/api/v1/nodes/{name}"));
  // Every patch operation carries fieldValidation (the verifier takes whichever comes first).
  for (const auto& [path, ops] : (*core)["paths"].items()) {
    if (ops.contains("patch")) {
      EXPECT_NE(findByKey(ops["patch"]["parameters"], "name", "fieldValidation"), nullptr) << path;
    }
  }

  auto apps = reg.openApiDocument("apis/apps/v1");
  ASSERT_TRUE(apps);
  EXPECT_TRUE((*apps)["components"]["schemas"].contains("io.k8s.api.apps.v1.Deployment"));
  auto crds = reg.openApiDocument("apis/apiextensions.k8s.io/v1");
  ASSERT_TRUE(crds);
  EXPECT_TRUE((*crds)["components"]["schemas"].contains(
      "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.CustomResourceDefinition"));
  EXPECT_TRUE(reg.openApiDocument("apis/coordination.k8s.io/v1").value()["components"]["schemas"]
                  .contains("io.k8s.api.coordination.v1.Lease"));
  EXPECT_FALSE(reg.openApiDocument("apis/example.com/v1"));
  EXPECT_FALSE(reg.openApiDocument("apis/nope"));
}

TEST(RegistryTest, OpenApiFollowsCrds) {
  Registry reg;
  json before = reg.openApiIndex();
  ASSERT_TRUE(reg.addCustom(widgetCrd()).ok());
  json after = reg.openApiIndex();
  ASSERT_TRUE(after["paths"].contains("apis/example.com/v1"));
  ASSERT_TRUE(after["paths"].contains("apis/example.com/v1beta1"));
  EXPECT_EQ(after["paths"]["api/v1"], before["paths"]["api/v1"]);

  auto doc = reg.openApiDocument("apis/example.com/v1");
  ASSERT_TRUE(doc);
  const json& widget = (*doc)["components"]["schemas"]["com.example.v1.Widget"];
  ASSERT_TRUE(widget.is_object());
  EXPECT_EQ(widget["x-kubernetes-group-version-kind"][0]["kind"], "Widget");
  EXPECT_EQ(widget["properties"]["spec"]["properties"]["color"]["type"], "string");
  EXPECT_TRUE(widget["properties"].contains("metadata"));
  const json& patch =
      (*doc)["paths"]["/apis/example.com/v1/namespaces/{namespace}/widgets/{name}"]["patch"];
  EXPECT_NE(findByKey(patch["parameters"], "name", "fieldValidation"), nullptr);
  EXPECT_TRUE((*doc)["paths"].contains(
      "/apis/example.com/v1/namespaces/{namespace}/widgets/{name}/status"));
  // Without a schema the kind is permissive.
  auto beta = reg.openApiDocument("apis/example.com/v1beta1");
  ASSERT_TRUE(beta);
  EXPECT_EQ((*beta)["components"]["schemas"]["com.example.v1beta1.Widget"]["properties"]["spec"]
               ["x-kubernetes-preserve-unknown-fields"],
            true);

  // A changed CRD changes the hash of its document.
  json changed = widgetCrd();
  changed["spec"]["versions"][1]["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]
         ["size"] = {{"type", "integer"}};
  ASSERT_TRUE(reg.addCustom(changed).ok());
  EXPECT_NE(reg.openApiIndex()["paths"]["apis/example.com/v1"],
            after["paths"]["apis/example.com/v1"]);

  reg.removeCustom("widgets.example.com");
  EXPECT_FALSE(reg.openApiIndex()["paths"].contains("apis/example.com/v1"));
  EXPECT_FALSE(reg.openApiDocument("apis/example.com/v1"));
}

TEST(RegistryTest, PodFields) {
  Registry reg;
  auto pods = reg.find("", "v1", "pods");
  json pod = json::parse(R"({
    "metadata": {"name": "web", "namespace": "default"},
    "spec": {"nodeName": "n1", "restartPolicy": "Always", "schedulerName": "default-scheduler",
             "serviceAccountName": "default"},
    "status": {"phase": "Running", "podIP": "10.0.0.5"}
  })");
  auto f = reg.fieldsOf(*pods, pod);
  EXPECT_EQ(f["metadata.name"], "web");
  EXPECT_EQ(f["metadata.namespace"], "default");
  EXPECT_EQ(f["spec.nodeName"], "n1");
  EXPECT_EQ(f["spec.restartPolicy"], "Always");
  EXPECT_EQ(f["spec.schedulerName"], "default-scheduler");
  EXPECT_EQ(f["spec.serviceAccountName"], "default");
  EXPECT_EQ(f["spec.hostNetwork"], "false");
  EXPECT_EQ(f["status.phase"], "Running");
  EXPECT_EQ(f["status.podIP"], "10.0.0.5");
  EXPECT_EQ(f.count("status.nominatedNodeName"), 1u);
  pod["spec"]["hostNetwork"] = true;
  EXPECT_EQ(reg.fieldsOf(*pods, pod)["spec.hostNetwork"], "true");

  EXPECT_TRUE(reg.isSelectableField(*pods, "spec.nodeName"));
  EXPECT_TRUE(reg.isSelectableField(*pods, "status.phase"));
  EXPECT_TRUE(reg.isSelectableField(*pods, "metadata.namespace"));
  EXPECT_FALSE(reg.isSelectableField(*pods, "spec.containers"));
  EXPECT_FALSE(reg.isSelectableField(*reg.find("", "v1", "configmaps"), "spec.nodeName"));
}

TEST(RegistryTest, EventAndOtherFields) {
  Registry reg;
  auto events = reg.find("", "v1", "events");
  json ev = json::parse(R"({
    "metadata": {"name": "n1.abc", "namespace": "default"},
    "involvedObject": {"kind": "Node", "name": "n1", "uid": "u-1", "apiVersion": "v1"},
    "reason": "Starting", "type": "Normal", "reportingController": "kubelet"
  })");
  auto f = reg.fieldsOf(*events, ev);
  EXPECT_EQ(f["involvedObject.kind"], "Node");
  EXPECT_EQ(f["involvedObject.name"], "n1");
  EXPECT_EQ(f["involvedObject.namespace"], "");
  EXPECT_EQ(f.count("involvedObject.namespace"), 1u);
  EXPECT_EQ(f["involvedObject.uid"], "u-1");
  EXPECT_EQ(f["reason"], "Starting");
  EXPECT_EQ(f["type"], "Normal");
  EXPECT_EQ(f["source"], "kubelet");  // falls back to reportingController
  EXPECT_EQ(f["reportingComponent"], "kubelet");
  ev["source"] = {{"component", "scheduler"}};
  EXPECT_EQ(reg.fieldsOf(*events, ev)["source"], "scheduler");
  EXPECT_TRUE(reg.isSelectableField(*events, "involvedObject.fieldPath"));

  auto nodes = reg.find("", "v1", "nodes");
  EXPECT_EQ(reg.fieldsOf(*nodes, json{{"metadata", {{"name", "n1"}}}})["spec.unschedulable"],
            "false");
  auto secrets = reg.find("", "v1", "secrets");
  EXPECT_EQ(reg.fieldsOf(*secrets, json{{"type", "Opaque"}})["type"], "Opaque");
  auto rs = reg.find("apps", "v1", "replicasets");
  EXPECT_EQ(reg.fieldsOf(*rs, json{{"status", {{"replicas", 3}}}})["status.replicas"], "3");
  auto ns = reg.find("", "v1", "namespaces");
  EXPECT_EQ(reg.fieldsOf(*ns, json{{"status", {{"phase", "Active"}}}})["status.phase"], "Active");
}

TEST(RegistryTest, CustomResourceFields) {
  Registry reg;
  ASSERT_TRUE(reg.addCustom(widgetCrd()).ok());
  auto v1 = reg.find("example.com", "v1", "widgets");
  auto beta = reg.find("example.com", "v1beta1", "widgets");
  json w = {{"metadata", {{"name", "w1"}, {"namespace", "ns"}}}, {"spec", {{"color", "red"}}}};
  auto f = reg.fieldsOf(*v1, w);
  EXPECT_EQ(f["metadata.name"], "w1");
  EXPECT_EQ(f["spec.color"], "red");
  EXPECT_TRUE(reg.isSelectableField(*v1, "spec.color"));
  EXPECT_FALSE(reg.isSelectableField(*beta, "spec.color"));
  EXPECT_TRUE(reg.isSelectableField(*beta, "metadata.name"));
  EXPECT_FALSE(reg.isSelectableField(*v1, "spec.size"));
}

}  // namespace
}  // namespace strait::minicluster

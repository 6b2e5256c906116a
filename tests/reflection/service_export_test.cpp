// What a provider's exported Service and EndpointSlices become in a consumer, the address
// mapping, and the consumer's write/delete/conflict decision (service_export.h).
#include "reflection/service_export.h"

#include <gtest/gtest.h>

#include "peering/names.h"

namespace strait::reflection {
namespace {

using nlohmann::json;

json providerService() {
  return json::parse(R"({
    "apiVersion": "v1", "kind": "Service",
    "metadata": {"name": "db", "namespace": "shop", "uid": "svc-uid-9", "resourceVersion": "7",
                 "labels": {"app": "db", "strait.io/origin-uid": "x"},
                 "annotations": {"strait.io/export-to": " c-2, c-1,,c-2 ", "team": "a"}},
    "spec": {"type": "NodePort", "selector": {"app": "db"},
             "clusterIP": "10.96.5.5", "clusterIPs": ["10.96.5.5"],
             "ports": [{"name": "sql", "protocol": "TCP", "port": 5432, "targetPort": "sql",
                        "nodePort": 30432, "appProtocol": "postgresql"}],
             "sessionAffinity": "ClientIP", "externalTrafficPolicy": "Local"}
  })");
}

json providerSlice() {
  return json::parse(R"({
    "apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
    "metadata": {"name": "db-abcde", "namespace": "shop", "uid": "slice-uid-3",
                 "labels": {"kubernetes.io/service-name": "db",
                            "endpointslice.kubernetes.io/managed-by": "endpointslice-controller.k8s.io"},
                 "annotations": {"endpoints.kubernetes.io/last-change-trigger-time": "t"}},
    "addressType": "IPv4",
    "ports": [{"name": "sql", "protocol": "TCP", "port": 5432}],
    "endpoints": [
      {"addresses": ["10.200.1.4"], "conditions": {"ready": true, "serving": true},
       "nodeName": "p-node-1", "zone": "z1", "hostname": "db-0",
       "targetRef": {"kind": "Pod", "name": "db-0", "namespace": "shop"}},
      {"addresses": ["10.200.2.9"], "conditions": {"ready": false, "serving": true}},
      {"addresses": ["10.200.3.1"]}
    ]
  })");
}

TEST(ServiceExport, ConsumersFromTheAnnotationSortedWithoutBlanksOrDuplicates) {
  EXPECT_EQ(exportConsumers(providerService()), (std::vector<std::string>{"c-1", "c-2"}));
  EXPECT_TRUE(exportConsumers(json{{"metadata", json::object()}}).empty());
  EXPECT_EQ(exportToValue({"b", "", "a", "b"}), "a,b");
  EXPECT_EQ(exportToValue({}), "");
}

TEST(ServiceExport, ServiceRefIsNamespaceSlashName) {
  auto ok = parseServiceRef("shop/db");
  ASSERT_TRUE(ok.ok());
  EXPECT_EQ(ok->first, "shop");
  EXPECT_EQ(ok->second, "db");
  for (const char* bad : {"db", "shop/", "/db", "a/b/c", "Shop/db", "shop/1db", "shop/d_b", ""}) {
    auto r = parseServiceRef(bad);
    EXPECT_FALSE(r.ok()) << bad;
    if (!r.ok()) EXPECT_EQ(r.error().code, kube::Code::Invalid) << bad;
  }
}

TEST(ServiceExport, ServiceBecomesSelectorlessClusterIpMarkedImported) {
  auto r = forgeExportedService(providerService(), "prov-7");
  ASSERT_TRUE(r.ok()) << r.error().message;
  const json& s = *r;
  EXPECT_EQ(s["metadata"]["namespace"], "shop");
  EXPECT_EQ(s["metadata"]["name"], "db");
  EXPECT_FALSE(s["metadata"].contains("uid"));
  EXPECT_FALSE(s["metadata"].contains("resourceVersion"));
  const json& labels = s["metadata"]["labels"];
  EXPECT_EQ(labels["app"], "db");
  EXPECT_EQ(labels[std::string(peering::kLabelImportedFrom)], "prov-7");
  EXPECT_EQ(labels[std::string(peering::kLabelManagedBy)], "strait");
  EXPECT_EQ(labels[std::string(peering::kLabelOriginUid)], "svc-uid-9");
  EXPECT_FALSE(s["metadata"]["annotations"].contains(std::string(peering::kAnnotationExportTo)));
  EXPECT_EQ(s["spec"]["type"], "ClusterIP");
  EXPECT_FALSE(s["spec"].contains("selector"));
  EXPECT_FALSE(s["spec"].contains("clusterIP"));
  EXPECT_FALSE(s["spec"].contains("externalTrafficPolicy"));
  EXPECT_EQ(s["spec"]["sessionAffinity"], "ClientIP");
  ASSERT_EQ(s["spec"]["ports"].size(), 1u);
  EXPECT_EQ(s["spec"]["ports"][0],
            (json{{"name", "sql"}, {"protocol", "TCP"}, {"port", 5432}, {"appProtocol", "postgresql"}}));
}

TEST(ServiceExport, HeadlessStaysHeadlessExternalNameAndMalformedRefused) {
  json headless = providerService();
  headless["spec"]["clusterIP"] = "None";
  auto h = forgeExportedService(headless, "p");
  ASSERT_TRUE(h.ok());
  EXPECT_EQ((*h)["spec"]["clusterIP"], "None");
  json ext = providerService();
  ext["spec"] = {{"type", "ExternalName"}, {"externalName", "db.example.com"}};
  auto e = forgeExportedService(ext, "p");
  ASSERT_FALSE(e.ok());
  EXPECT_NE(e.error().message.find("ExternalName"), std::string::npos);
  json noUid = providerService();
  noUid["metadata"].erase("uid");
  EXPECT_FALSE(forgeExportedService(noUid, "p").ok());
  EXPECT_FALSE(forgeExportedService(json::array(), "p").ok());
}

TEST(ServiceExport, SliceMirrorsEndpointConditionsWithoutProviderNames) {
  auto r = forgeExportedEndpointSlice(providerSlice(), "prov-7");
  ASSERT_TRUE(r.ok()) << r.error().message;
  const json& s = *r;
  EXPECT_EQ(s["apiVersion"], "discovery.k8s.io/v1");
  EXPECT_EQ(s["metadata"]["name"], "db-abcde");
  EXPECT_EQ(s["metadata"]["labels"]["kubernetes.io/service-name"], "db");
  EXPECT_EQ(s["metadata"]["labels"]["endpointslice.kubernetes.io/managed-by"],
            "endpointslice.strait.io");
  EXPECT_EQ(s["metadata"]["labels"][std::string(peering::kLabelImportedFrom)], "prov-7");
  ASSERT_EQ(s["endpoints"].size(), 3u);
  EXPECT_EQ(s["endpoints"][0]["addresses"], json::array({"10.200.1.4"}));
  EXPECT_EQ(s["endpoints"][0]["conditions"],
            json({{"ready", true}, {"serving", true}, {"terminating", false}}));
  EXPECT_EQ(s["endpoints"][0]["hostname"], "db-0");
  EXPECT_FALSE(s["endpoints"][0].contains("nodeName"));
  EXPECT_FALSE(s["endpoints"][0].contains("targetRef"));
  EXPECT_FALSE(s["endpoints"][0].contains("zone"));
  // Not ready but still serving (a terminating Pod draining): mirrored, not dropped.
  EXPECT_EQ(s["endpoints"][1]["addresses"], json::array({"10.200.2.9"}));
  EXPECT_EQ(s["endpoints"][1]["conditions"],
            json({{"ready", false}, {"serving", true}, {"terminating", false}}));
  // No conditions: ready and serving, as Kubernetes reads an absent condition.
  EXPECT_EQ(s["endpoints"][2]["addresses"], json::array({"10.200.3.1"}));
  EXPECT_EQ(s["endpoints"][2]["conditions"],
            json({{"ready", true}, {"serving", true}, {"terminating", false}}));
  // What the consumer holds while the provider is unreachable.
  json notReady = endpointSliceNotReady(s);
  for (const json& e : notReady["endpoints"]) {
    EXPECT_EQ(e["conditions"]["ready"], false);
    EXPECT_EQ(e["conditions"]["serving"], false);
  }
  EXPECT_EQ(notReady["endpoints"].size(), 3u);  // nothing dropped
  EXPECT_EQ(s["ports"], providerSlice()["ports"]);
  json noService = providerSlice();
  noService["metadata"]["labels"].erase("kubernetes.io/service-name");
  EXPECT_FALSE(forgeExportedEndpointSlice(noService, "p").ok());
}

TEST(ServiceExport, AddressesMappedIntoTheConsumerViewUnmappableDropped) {
  json s = *forgeExportedEndpointSlice(providerSlice(), "p");
  json m = mapExportedSliceAddresses(s, [](const std::string& ip) -> std::string {
    if (ip == "10.200.1.4") return "10.77.1.4";
    return "";
  });
  ASSERT_EQ(m["endpoints"].size(), 1u);
  EXPECT_EQ(m["endpoints"][0]["addresses"], json::array({"10.77.1.4"}));
  EXPECT_EQ(mapExportedSliceAddresses(s, nullptr), s);
}

TEST(ServiceExport, ImportDecision) {
  const json forged = *forgeExportedService(providerService(), "prov-7");
  EXPECT_EQ(decideImport(forged, nullptr, "prov-7"), MirrorAction::Apply);
  EXPECT_EQ(decideImport(forged, forged, "prov-7"), MirrorAction::None);
  json changed = forged;
  changed["spec"]["ports"][0]["port"] = 5433;
  EXPECT_EQ(decideImport(changed, forged, "prov-7"), MirrorAction::Apply);
  // The consumer's own Service of that name, or another provider's import: never touched.
  json own = json::parse(R"({"kind":"Service","metadata":{"name":"db","namespace":"shop"},
                             "spec":{"selector":{"app":"db"}}})");
  EXPECT_EQ(decideImport(forged, own, "prov-7"), MirrorAction::Conflict);
  EXPECT_EQ(decideImport(nullptr, own, "prov-7"), MirrorAction::None);
  EXPECT_EQ(decideImport(forged, *forgeExportedService(providerService(), "prov-8"), "prov-7"),
            MirrorAction::Conflict);
  EXPECT_EQ(decideImport(nullptr, forged, "prov-7"), MirrorAction::Delete);
  EXPECT_EQ(decideImport(nullptr, nullptr, "prov-7"), MirrorAction::None);
  const json slice = *forgeExportedEndpointSlice(providerSlice(), "prov-7");
  json fewer = slice;
  fewer["endpoints"].erase(1);
  EXPECT_EQ(decideImport(fewer, slice, "prov-7"), MirrorAction::Apply);
  EXPECT_EQ(decideImport(slice, slice, "prov-7"), MirrorAction::None);
}

}  // namespace
}  // namespace strait::reflection

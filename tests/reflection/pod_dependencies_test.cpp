#include "reflection/pod_dependencies.h"

#include <gtest/gtest.h>

#include "reflection/labels.h"

namespace strait::reflection {
namespace {

using nlohmann::json;

TEST(PodDependencies, FindsEveryReference) {
  json pod = json::parse(R"({"spec":{"serviceAccountName":"sa",
    "imagePullSecrets":[{"name":"pull"}],
    "volumes":[{"name":"a","configMap":{"name":"cm-vol"}},
               {"name":"b","secret":{"secretName":"sec-vol"}},
               {"name":"c","projected":{"sources":[{"configMap":{"name":"cm-proj"}},
                 {"secret":{"name":"sec-proj"}},{"configMap":{"name":"kube-root-ca.crt"}},
                 {"serviceAccountToken":{"path":"token"}}]}}],
    "initContainers":[{"name":"i","envFrom":[{"secretRef":{"name":"sec-init"}}]}],
    "containers":[{"name":"c","env":[
       {"name":"A","valueFrom":{"configMapKeyRef":{"name":"cm-env","key":"k"}}},
       {"name":"B","valueFrom":{"secretKeyRef":{"name":"sec-env","key":"k","optional":true}}}],
      "envFrom":[{"configMapRef":{"name":"cm-from"}}]}]}})");
  PodDependencies d = podDependencies(pod);
  EXPECT_EQ(d.configMaps, (std::set<std::string>{"cm-vol", "cm-proj", "cm-env", "cm-from"}));
  EXPECT_EQ(d.secrets,
            (std::set<std::string>{"pull", "sec-vol", "sec-proj", "sec-init", "sec-env"}));
  EXPECT_EQ(d.serviceAccount, "sa");
  PodDependencies none = podDependencies(json::parse(R"({"spec":{"volumes":[1,{"secret":3}]}})"));
  EXPECT_TRUE(none.configMaps.empty());
  EXPECT_TRUE(none.secrets.empty());
}

ObjectForgeContext ctx() { return {"consumer-1", "web-consumer-1"}; }

TEST(PodDependencies, ForgesConfigMapSecretAndServiceAccount) {
  json cm = json::parse(R"({"metadata":{"name":"conf","namespace":"web","uid":"cm-uid",
    "resourceVersion":"5","ownerReferences":[{"kind":"X"}],"labels":{"a":"b"},
    "annotations":{"kubectl.kubernetes.io/last-applied-configuration":"{}"}},
    "data":{"k":"v"},"binaryData":{"b":"AAE="},"immutable":true})");
  json r = *forgeRemoteConfigMap(cm, ctx());
  EXPECT_EQ(r["metadata"]["namespace"], "web-consumer-1");
  EXPECT_EQ(r["metadata"]["labels"]["a"], "b");
  EXPECT_EQ(originUid(r), "cm-uid");
  EXPECT_TRUE(isOwnedBy(r, "consumer-1"));
  EXPECT_FALSE(r["metadata"].contains("resourceVersion"));
  EXPECT_FALSE(r["metadata"].contains("ownerReferences"));
  EXPECT_FALSE(r["metadata"]["annotations"].contains(
      "kubectl.kubernetes.io/last-applied-configuration"));
  EXPECT_EQ(r["data"], cm["data"]);
  EXPECT_EQ(r["binaryData"], cm["binaryData"]);
  EXPECT_EQ(r["immutable"], true);

  json sec = json::parse(R"({"metadata":{"name":"s","namespace":"web","uid":"s-uid"},
    "type":"kubernetes.io/dockerconfigjson","data":{".dockerconfigjson":"e30="}})");
  json rs = *forgeRemoteSecret(sec, ctx());
  EXPECT_EQ(rs["type"], "kubernetes.io/dockerconfigjson");
  EXPECT_EQ(rs["data"], sec["data"]);
  sec["type"] = "kubernetes.io/service-account-token";
  auto refused = forgeRemoteSecret(sec, ctx());
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error().code, kube::Code::Forbidden);

  json sa = json::parse(R"({"metadata":{"name":"sa","namespace":"web","uid":"sa-uid"},
    "automountServiceAccountToken":false,"imagePullSecrets":[{"name":"pull"}],
    "secrets":[{"name":"sa-token-x"}]})");
  json rsa = *forgeRemoteServiceAccount(sa, ctx());
  EXPECT_EQ(rsa["kind"], "ServiceAccount");
  EXPECT_EQ(rsa["automountServiceAccountToken"], false);
  EXPECT_EQ(rsa["imagePullSecrets"], sa["imagePullSecrets"]);
  EXPECT_FALSE(rsa.contains("secrets"));

  EXPECT_FALSE(forgeRemoteConfigMap(json::parse("[]"), ctx()).ok());
  EXPECT_FALSE(forgeRemoteSecret(json::parse(R"({"metadata":{"name":"x"}})"), ctx()).ok());
}

TEST(PodDependencies, SameContentIgnoresServerFields) {
  json cm = json::parse(R"({"metadata":{"name":"c","namespace":"web","uid":"u"},"data":{"k":"v"}})");
  json a = *forgeRemoteConfigMap(cm, ctx());
  json stored = a;
  stored["metadata"]["uid"] = "remote-uid";
  stored["metadata"]["resourceVersion"] = "77";
  EXPECT_TRUE(sameReflectedContent(a, stored));
  stored["data"]["k"] = "w";
  EXPECT_FALSE(sameReflectedContent(a, stored));
}

}  // namespace
}  // namespace strait::reflection

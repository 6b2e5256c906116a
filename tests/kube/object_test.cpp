// Tests for kube/object.h, and for the small value types of kube/gvk.h.
#include "kube/object.h"

#include <gtest/gtest.h>

#include <map>
#include <set>
#include <string>

#include "kube/gvk.h"

namespace strait::kube {
namespace {

using nlohmann::json;
using std::chrono::system_clock;

json pod() {
  return json::parse(R"({
    "apiVersion": "v1", "kind": "Pod",
    "metadata": {
      "name": "web-0", "namespace": "prod", "uid": "u-1", "resourceVersion": "42",
      "generation": 3, "generateName": "web-",
      "labels": {"app": "web", "bad": 7},
      "annotations": {"note": "x"},
      "finalizers": ["a/b", "c/d"],
      "ownerReferences": [
        {"apiVersion": "apps/v1", "kind": "StatefulSet", "name": "web", "uid": "owner-1",
         "controller": true},
        {"apiVersion": "v1", "kind": "ConfigMap", "name": "cm", "uid": "owner-2"}
      ],
      "creationTimestamp": "2024-05-01T12:00:00Z",
      "deletionTimestamp": "2024-05-02T12:00:00Z"
    }})");
}

TEST(ObjectTest, Getters) {
  json p = pod();
  EXPECT_EQ(getName(p), "web-0");
  EXPECT_EQ(getNamespace(p), "prod");
  EXPECT_EQ(getUid(p), "u-1");
  EXPECT_EQ(getResourceVersion(p), "42");
  EXPECT_EQ(getGenerateName(p), "web-");
  EXPECT_EQ(getGeneration(p), 3);
  EXPECT_EQ(getLabels(p), (std::map<std::string, std::string>{{"app", "web"}}));
  EXPECT_EQ(getAnnotations(p), (std::map<std::string, std::string>{{"note", "x"}}));
  EXPECT_EQ(getFinalizers(p), (std::vector<std::string>{"a/b", "c/d"}));
  EXPECT_TRUE(hasFinalizer(p, "a/b"));
  EXPECT_FALSE(hasFinalizer(p, "x"));
  EXPECT_EQ(getOwnerReferences(p).size(), 2u);
  EXPECT_EQ(getCreationTimestamp(p), "2024-05-01T12:00:00Z");
  EXPECT_EQ(getDeletionTimestamp(p), "2024-05-02T12:00:00Z");
  EXPECT_TRUE(isBeingDeleted(p));
}

TEST(ObjectTest, GettersTolerateMissingOrMistypedMetadata) {
  for (const json& j : {json(), json::object(), json::array(), json("str"), json(5),
                        json::parse(R"({"metadata": null})"), json::parse(R"({"metadata": []})"),
                        json::parse(R"({"metadata": {"name": 5, "labels": [], "generation":
                                    "x", "finalizers": {}, "ownerReferences": "y",
                                    "deletionTimestamp": 1}})")}) {
    EXPECT_EQ(getName(j), "") << j;
    EXPECT_EQ(getNamespace(j), "");
    EXPECT_EQ(getUid(j), "");
    EXPECT_EQ(getResourceVersion(j), "");
    EXPECT_EQ(getGeneration(j), 0);
    EXPECT_TRUE(getLabels(j).empty());
    EXPECT_TRUE(getAnnotations(j).empty());
    EXPECT_TRUE(getFinalizers(j).empty());
    EXPECT_TRUE(getOwnerReferences(j).empty());
    EXPECT_FALSE(getDeletionTimestamp(j).has_value());
    EXPECT_FALSE(isBeingDeleted(j));
    EXPECT_FALSE(isControlledBy(j, "x"));
    EXPECT_FALSE(getControllerOf(j).has_value());
  }
}

TEST(ObjectTest, SettersCreateMetadata) {
  json j;
  setName(j, "n");
  setNamespace(j, "ns");
  setUid(j, "u");
  setResourceVersion(j, "7");
  setGeneration(j, 2);
  setLabel(j, "a", "1");
  setLabel(j, "b", "2");
  setAnnotation(j, "k", "v");
  setCreationTimestamp(j, "2024-01-01T00:00:00Z");
  EXPECT_EQ(j, json::parse(R"({"metadata": {"name": "n", "namespace": "ns", "uid": "u",
      "resourceVersion": "7", "generation": 2, "labels": {"a": "1", "b": "2"},
      "annotations": {"k": "v"}, "creationTimestamp": "2024-01-01T00:00:00Z"}})"));

  setLabels(j, {{"x", "y"}});
  EXPECT_EQ(getLabels(j), (std::map<std::string, std::string>{{"x", "y"}}));
  setLabels(j, {});
  EXPECT_FALSE(j["metadata"].contains("labels"));
  setAnnotations(j, {{"p", "q"}});
  EXPECT_EQ(getAnnotations(j).at("p"), "q");

  json broken = json::parse(R"({"metadata": "oops", "spec": {"x": 1}})");
  setName(broken, "fixed");
  EXPECT_EQ(getName(broken), "fixed");
  EXPECT_EQ(broken["spec"]["x"], 1);
  json labelsBroken = json::parse(R"({"metadata": {"labels": "oops"}})");
  setLabel(labelsBroken, "a", "b");
  EXPECT_EQ(getLabels(labelsBroken).at("a"), "b");
}

TEST(ObjectTest, Finalizers) {
  json j;
  EXPECT_TRUE(addFinalizer(j, "a"));
  EXPECT_FALSE(addFinalizer(j, "a"));
  EXPECT_TRUE(addFinalizer(j, "b"));
  EXPECT_EQ(getFinalizers(j), (std::vector<std::string>{"a", "b"}));
  EXPECT_TRUE(removeFinalizer(j, "a"));
  EXPECT_FALSE(removeFinalizer(j, "a"));
  EXPECT_EQ(getFinalizers(j), (std::vector<std::string>{"b"}));
  EXPECT_TRUE(removeFinalizer(j, "b"));
  EXPECT_FALSE(j["metadata"].contains("finalizers"));
  setFinalizers(j, {"x", "y"});
  EXPECT_TRUE(hasFinalizer(j, "y"));
}

TEST(ObjectTest, OwnerReferencesAndController) {
  json p = pod();
  EXPECT_TRUE(isControlledBy(p, "owner-1"));
  EXPECT_FALSE(isControlledBy(p, "owner-2"));  // an owner, but not the controller
  EXPECT_FALSE(isControlledBy(p, ""));
  auto c = getControllerOf(p);
  ASSERT_TRUE(c.has_value());
  EXPECT_EQ((*c)["name"], "web");

  json j;
  setOwnerReferences(j, {json::parse(R"({"uid": "o", "controller": false})")});
  EXPECT_FALSE(isControlledBy(j, "o"));
  setOwnerReferences(j, {json::parse(R"({"uid": "o", "controller": true})")});
  EXPECT_TRUE(isControlledBy(j, "o"));
  setOwnerReferences(j, {});
  EXPECT_FALSE(j["metadata"].contains("ownerReferences"));
  setDeletionTimestamp(j, rfc3339Now());
  EXPECT_TRUE(isBeingDeleted(j));
}

TEST(ObjectTest, NewUidIsRandomV4) {
  std::set<std::string> seen;
  for (int i = 0; i < 200; ++i) {
    std::string u = newUid();
    ASSERT_EQ(u.size(), 36u);
    EXPECT_EQ(u[8], '-');
    EXPECT_EQ(u[13], '-');
    EXPECT_EQ(u[18], '-');
    EXPECT_EQ(u[23], '-');
    EXPECT_EQ(u[14], '4');                                          // version
    EXPECT_NE(std::string("89ab").find(u[19]), std::string::npos);  // variant
    for (char c : u) {
      EXPECT_TRUE(c == '-' || (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f')) << u;
    }
    seen.insert(u);
  }
  EXPECT_EQ(seen.size(), 200u);
}

// ---- kube/gvk.h ----

TEST(GvkTest, ParseGroupVersion) {
  auto gv = GroupVersion::parse("apps/v1");
  ASSERT_TRUE(gv.ok());
  EXPECT_EQ(gv->group, "apps");
  EXPECT_EQ(gv->version, "v1");
  EXPECT_EQ(gv->toString(), "apps/v1");

  gv = GroupVersion::parse("v1");
  ASSERT_TRUE(gv.ok());
  EXPECT_EQ(gv->group, "");
  EXPECT_EQ(gv->version, "v1");
  EXPECT_EQ(gv->toString(), "v1");

  gv = GroupVersion::parse("rbac.authorization.k8s.io/v1beta1");
  ASSERT_TRUE(gv.ok());
  EXPECT_EQ(gv->group, "rbac.authorization.k8s.io");

  for (const char* bad : {"", "a/b/c", "/v1", "apps/", "/"}) {
    auto r = GroupVersion::parse(bad);
    EXPECT_FALSE(r.ok()) << bad;
    if (!r.ok()) {
      EXPECT_EQ(r.code(), Code::BadRequest);
      EXPECT_FALSE(r.error().message.empty());
    }
  }
  EXPECT_NE(GroupVersion::parse("a/b/c").error().message.find("unexpected GroupVersion string"),
            std::string::npos);
}

TEST(GvkTest, KindsAndResources) {
  auto gvk = GroupVersionKind::fromApiVersionKind("apps/v1", "Deployment");
  ASSERT_TRUE(gvk.ok());
  EXPECT_EQ(gvk->toString(), "apps/v1, Kind=Deployment");
  EXPECT_EQ(gvk->apiVersion(), "apps/v1");
  EXPECT_EQ(gvk->groupVersion(), (GroupVersion{"apps", "v1"}));

  auto pod = GroupVersionKind::fromObject(json::parse(R"({"apiVersion":"v1","kind":"Pod"})"));
  ASSERT_TRUE(pod.ok());
  EXPECT_EQ(pod->toString(), "/v1, Kind=Pod");
  EXPECT_EQ(pod->apiVersion(), "v1");

  EXPECT_FALSE(GroupVersionKind::fromApiVersionKind("v1", "").ok());
  EXPECT_FALSE(GroupVersionKind::fromObject(json::parse(R"({"kind":"Pod"})")).ok());
  EXPECT_FALSE(GroupVersionKind::fromObject(json::parse(R"({"apiVersion":"v1"})")).ok());
  EXPECT_FALSE(GroupVersionKind::fromObject(json::parse(R"({"apiVersion":1,"kind":"P"})")).ok());
  EXPECT_FALSE(GroupVersionKind::fromObject(json::array()).ok());
  EXPECT_FALSE(
      GroupVersionKind::fromObject(json::parse(R"({"apiVersion":"a/b/c","kind":"P"})")).ok());

  GroupVersionResource gvr{"apps", "v1", "deployments"};
  EXPECT_EQ(gvr.toString(), "apps/v1, Resource=deployments");
  EXPECT_EQ(gvr.groupVersion().toString(), "apps/v1");
}

TEST(GvkTest, Ordering) {
  GroupVersionKind a{"", "v1", "Pod"};
  GroupVersionKind b{"apps", "v1", "Deployment"};
  EXPECT_LT(a, b);
  EXPECT_EQ(a, (GroupVersionKind{"", "v1", "Pod"}));
  EXPECT_NE(a, b);
  std::map<GroupVersionResource, int> m;
  m[{"apps", "v1", "deployments"}] = 1;
  m[{"", "v1", "pods"}] = 2;
  EXPECT_EQ(m.begin()->second, 2);
  EXPECT_LT((GroupVersion{"", "v1"}), (GroupVersion{"apps", "v1"}));
}

}  // namespace
}  // namespace strait::kube

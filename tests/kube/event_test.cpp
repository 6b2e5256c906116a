// Tests for kube/event.h: the core/v1 Events every component writes.
#include "kube/event.h"

#include <gtest/gtest.h>

#include "kube/time.h"

namespace strait::kube {
namespace {

using nlohmann::json;

TEST(EventTest, NamedEventCarriesEveryRecorderField) {
  EventFields f;
  f.involvedObject = {{"apiVersion", "v1"}, {"kind", "Pod"}, {"namespace", "web"},
                      {"name", "web-0"},    {"uid", "u-1"}};
  f.type = "Warning";
  f.reason = "FailedScheduling";
  f.message = "0/3 nodes are available";
  f.component = "default-scheduler";
  f.host = "node-1";
  f.name = "web-0.17a";
  f.firstTimestamp = "2024-05-01T12:00:00Z";
  f.lastTimestamp = "2024-05-01T12:05:00Z";
  f.count = 3;
  json ev = makeEvent(f);
  EXPECT_EQ(ev["apiVersion"], "v1");
  EXPECT_EQ(ev["kind"], "Event");
  EXPECT_EQ(ev["metadata"], json({{"name", "web-0.17a"}, {"namespace", "web"}}));
  EXPECT_EQ(ev["involvedObject"], f.involvedObject);
  EXPECT_EQ(ev["type"], "Warning");
  EXPECT_EQ(ev["reason"], "FailedScheduling");
  EXPECT_EQ(ev["message"], "0/3 nodes are available");
  EXPECT_EQ(ev["source"], json({{"component", "default-scheduler"}, {"host", "node-1"}}));
  EXPECT_EQ(ev["reportingComponent"], "default-scheduler");
  EXPECT_EQ(ev["reportingInstance"], "node-1");
  EXPECT_EQ(ev["firstTimestamp"], "2024-05-01T12:00:00Z");
  EXPECT_EQ(ev["lastTimestamp"], "2024-05-01T12:05:00Z");
  EXPECT_EQ(ev["count"], 3);
}

TEST(EventTest, DefaultsGenerateNameNamespaceAndTimes) {
  EventFields f;
  f.involvedObject = {{"kind", "Node"}, {"name", "node-1"}};  // cluster-scoped
  f.reason = "NodeReady";
  f.component = "kubelet";
  json ev = makeEvent(f);
  EXPECT_EQ(ev["metadata"], json({{"generateName", "node-1."}, {"namespace", "default"}}));
  EXPECT_EQ(ev["type"], "Normal");
  EXPECT_EQ(ev["source"], json({{"component", "kubelet"}}));
  EXPECT_EQ(ev["reportingInstance"], "kubelet");
  EXPECT_EQ(ev["count"], 1);
  ASSERT_TRUE(ev["firstTimestamp"].is_string());
  EXPECT_TRUE(parseRfc3339(ev["firstTimestamp"].get<std::string>()).ok());
  EXPECT_EQ(ev["firstTimestamp"], ev["lastTimestamp"]);

  f.involvedObject["namespace"] = "prod";
  EXPECT_EQ(makeEvent(f)["metadata"]["namespace"], "prod");
  f.eventNamespace = "other";
  EXPECT_EQ(makeEvent(f)["metadata"]["namespace"], "other");
}

TEST(EventTest, ObjectReferenceToleratesMissingFields) {
  json pod = {{"apiVersion", "v1"},
              {"kind", "Pod"},
              {"metadata",
               {{"name", "web-0"}, {"namespace", "web"}, {"uid", "u-1"}, {"resourceVersion", "7"}}}};
  EXPECT_EQ(objectReference(pod), json({{"apiVersion", "v1"},
                                        {"kind", "Pod"},
                                        {"name", "web-0"},
                                        {"namespace", "web"},
                                        {"uid", "u-1"},
                                        {"resourceVersion", "7"}}));
  json node = {{"kind", "Node"}, {"metadata", {{"name", 5}}}};
  EXPECT_EQ(objectReference(node), json({{"apiVersion", ""},
                                         {"kind", "Node"},
                                         {"name", ""},
                                         {"uid", ""},
                                         {"resourceVersion", ""}}));
  EXPECT_EQ(objectReference(json("not an object"))["kind"], "");
}

}  // namespace
}  // namespace strait::kube

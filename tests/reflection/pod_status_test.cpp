#include "reflection/pod_status.h"

#include <gtest/gtest.h>

namespace strait::reflection {
namespace {

using nlohmann::json;

json local() {
  return json::parse(R"({"metadata":{"name":"p","namespace":"web","uid":"u"},
    "status":{"phase":"Pending","qosClass":"Burstable","conditions":[
      {"type":"PodScheduled","status":"True","lastTransitionTime":"2026-11-30T04:00:00Z"}]}})");
}

json remoteRunning() {
  return json::parse(R"({"metadata":{"name":"p","namespace":"web-c"},
    "status":{"phase":"Running","startTime":"2026-11-30T04:00:02Z","hostIP":"192.168.5.7",
      "hostIPs":[{"ip":"192.168.5.7"}],"podIP":"10.244.1.5","podIPs":[{"ip":"10.244.1.5"}],
      "qosClass":"BestEffort","nominatedNodeName":"n3",
      "conditions":[
        {"type":"PodScheduled","status":"True","lastTransitionTime":"2026-11-30T04:00:01Z"},
        {"type":"Initialized","status":"True"},
        {"type":"ContainersReady","status":"True"},
        {"type":"Ready","status":"True"}],
      "containerStatuses":[{"name":"app","image":"nginx:1","imageID":"sha256:abc",
        "ready":true,"started":true,"restartCount":2,
        "state":{"running":{"startedAt":"2026-11-30T04:00:03Z"}}}]}})");
}

TEST(PodStatus, RunningRemoteMapsBack) {
  PodStatusContext ctx;
  ctx.virtualNodeAddress = "10.0.0.9";
  json s = mapRemoteStatus(local(), remoteRunning(), ctx);
  EXPECT_EQ(s["phase"], "Running");
  EXPECT_EQ(s["startTime"], "2026-11-30T04:00:02Z");
  EXPECT_EQ(s["hostIP"], "10.0.0.9");
  EXPECT_EQ(s["hostIPs"], json::parse(R"([{"ip":"10.0.0.9"}])"));
  EXPECT_EQ(s["podIP"], "10.244.1.5");
  EXPECT_EQ(s["podIPs"], json::parse(R"([{"ip":"10.244.1.5"}])"));
  EXPECT_EQ(s["qosClass"], "Burstable");  // local
  EXPECT_FALSE(s.contains("nominatedNodeName"));
  ASSERT_EQ(s["conditions"].size(), 4u);
  EXPECT_EQ(s["conditions"][0]["type"], "PodScheduled");
  EXPECT_EQ(s["conditions"][0]["lastTransitionTime"], "2026-11-30T04:00:00Z");  // local one
  EXPECT_EQ(s["conditions"][3]["type"], "Ready");
  EXPECT_EQ(s["containerStatuses"][0]["restartCount"], 2);
  EXPECT_EQ(s["containerStatuses"][0]["imageID"], "sha256:abc");
}

TEST(PodStatus, PodIpsAreRemappedAndRecreationsCounted) {
  PodStatusContext ctx;
  ctx.virtualNodeAddress = "10.0.0.9";
  ctx.recreations = 3;
  ctx.mapPodIp = [](const std::string& ip) { return "172.16." + ip.substr(ip.find('.', 3) + 1); };
  json s = mapRemoteStatus(local(), remoteRunning(), ctx);
  EXPECT_EQ(s["podIP"], "172.16.1.5");
  EXPECT_EQ(s["podIPs"][0]["ip"], "172.16.1.5");
  EXPECT_EQ(s["containerStatuses"][0]["restartCount"], 5);
}

TEST(PodStatus, TerminalStaysTerminal) {
  json l = local();
  l["status"]["phase"] = "Succeeded";
  json s = mapRemoteStatus(l, remoteRunning(), {});
  EXPECT_EQ(s, l["status"]);
  json lost = lostRemoteStatus(l, "gone");
  EXPECT_EQ(lost["phase"], "Succeeded");
}

TEST(PodStatus, RemoteWithoutStatusIsPending) {
  json s = mapRemoteStatus(local(), json::parse(R"({"metadata":{}})"), {});
  EXPECT_EQ(s["phase"], "Pending");
  EXPECT_FALSE(s.contains("podIP"));
  // Garbage in the remote status is skipped, not thrown on.
  json junk = json::parse(R"({"status":{"phase":3,"podIP":4,"podIPs":"x",
    "conditions":[1,{"type":2}],"containerStatuses":[5,{"name":"a","restartCount":"x"}]}})");
  PodStatusContext ctx;
  ctx.recreations = 1;
  json s2 = mapRemoteStatus(local(), junk, ctx);
  EXPECT_EQ(s2["phase"], "Pending");
  EXPECT_EQ(s2["containerStatuses"].size(), 1u);
  EXPECT_EQ(s2["containerStatuses"][0]["restartCount"], 1);
}

TEST(PodStatus, LostRemoteFailsTheLocalPod) {
  json l = local();
  l["status"] = remoteRunning()["status"];
  json s = lostRemoteStatus(l, "remote pod deleted in the provider");
  EXPECT_EQ(s["phase"], "Failed");
  EXPECT_EQ(s["reason"], "ProviderPodLost");
  EXPECT_EQ(s["containerStatuses"][0]["ready"], false);
  EXPECT_EQ(s["containerStatuses"][0]["state"]["terminated"]["exitCode"], 137);
  EXPECT_EQ(s["conditions"][3]["status"], "False");
}

// While the provider is unreachable (e.g. its tunnel down with the stream still up) the
// remote's Ready says nothing about reaching the Pod: the mapped status keeps Ready and
// ContainersReady False, and writing it back again changes nothing.
TEST(PodStatus, UnreachableProviderKeepsReadyFalseIdempotently) {
  bool unreachable = true;
  PodStatusContext ctx;
  ctx.providerUnreachable = [&] { return unreachable; };
  ctx.unreachableMessage = "gone";
  json first = mapRemoteStatus(local(), remoteRunning(), ctx);
  for (const json& c : first["conditions"]) {
    if (c["type"] == "Ready" || c["type"] == "ContainersReady") {
      EXPECT_EQ(c["status"], "False") << c.dump();
      EXPECT_EQ(c["reason"], "ProviderUnreachable") << c.dump();
      EXPECT_EQ(c["message"], "gone") << c.dump();
      EXPECT_TRUE(c.contains("lastTransitionTime")) << c.dump();
    }
  }
  EXPECT_EQ(first["containerStatuses"][0]["ready"], false);
  json written = local();
  written["status"] = first;
  EXPECT_EQ(mapRemoteStatus(written, remoteRunning(), ctx), first) << "idempotent";
  unreachable = false;
  json healed = mapRemoteStatus(written, remoteRunning(), ctx);
  for (const json& c : healed["conditions"]) {
    if (c["type"] == "Ready") EXPECT_EQ(c["status"], "True") << c.dump();
  }
  EXPECT_EQ(healed["containerStatuses"][0]["ready"], true);
}

}  // namespace
}  // namespace strait::reflection

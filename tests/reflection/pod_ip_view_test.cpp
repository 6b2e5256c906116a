// The podIP / podIPs the consumer writes on its Pods for offloaded Pods, through the hook the
// virtual kubelet wires (LivePeering::localPodIp fed from the negotiated NetworkState) into
// the reflected status (mapRemoteStatus): the provider's pod CIDR in the consumer's view.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "peering/network_state.h"
#include "peering/observer.h"
#include "reflection/pod_status.h"

namespace strait::reflection {
namespace {

using json = nlohmann::json;

json localPod() {
  return json::parse(R"({"metadata":{"name":"web-1","namespace":"web"},
    "spec":{"nodeName":"strait-cloud"},"status":{"phase":"Pending","qosClass":"BestEffort"}})");
}

json remotePod(const std::string& ip) {
  return json{{"metadata", {{"name", "web-1"}, {"namespace", "web-home"}}},
              {"status",
               {{"phase", "Running"},
                {"podIP", ip},
                {"podIPs", json::array({{{"ip", ip}}})},
                {"hostIP", "100.64.0.3"}}}};
}

TEST(PodIpView, OffloadedPodIpsAreShownInTheConsumersViewOfTheProvider) {
  peering::NetworkState network;
  peering::LivePeering live("home-id", "cloud-id", "cloud", "strait-tenant-home-id");
  live.setNetwork(&network);
  PodStatusContext ctx;
  ctx.virtualNodeAddress = "10.0.0.9";
  ctx.mapPodIp = [&live](const std::string& ip) { return live.localPodIp(ip); };

  // Before the negotiation (or without a tunnel): the IPs as the provider reports them.
  json remote = remotePod("10.244.2.7");
  EXPECT_EQ(mapRemoteStatus(localPod(), remote, ctx)["podIP"], "10.244.2.7");

  // Both clusters use 10.244.0.0/16: the consumer sees the provider's as 10.240.0.0/16.
  network.setView("cloud-id", {"10.244.0.0/16", "10.240.0.0/16"});
  json s = mapRemoteStatus(localPod(), remote, ctx);
  EXPECT_EQ(s["podIP"], "10.240.2.7");
  EXPECT_EQ(s["podIPs"], json::parse(R"([{"ip":"10.240.2.7"}])"));
  EXPECT_EQ(s["hostIP"], "10.0.0.9");
  // The remote Pod's own status keeps its real address.
  EXPECT_EQ(remote["status"]["podIP"], "10.244.2.7");

  // Another provider's view does not apply to this one; a CIDR that is not remapped stays.
  network.setView("cloud-id", {"10.100.0.0/16", "10.100.0.0/16"});
  EXPECT_EQ(mapRemoteStatus(localPod(), remotePod("10.100.0.4"), ctx)["podIP"], "10.100.0.4");
  network.forget("cloud-id");
  network.setView("edge-id", {"10.244.0.0/16", "10.241.0.0/16"});
  EXPECT_EQ(mapRemoteStatus(localPod(), remote, ctx)["podIP"], "10.244.2.7");
}

}  // namespace
}  // namespace strait::reflection

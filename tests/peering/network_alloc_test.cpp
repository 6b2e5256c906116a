// The remap choice and CIDR arithmetic of the tunnel negotiation (peering/network_alloc.h),
// and the pod IP translation fed from it (peering/network_state.h).
#include "peering/network_alloc.h"

#include <gtest/gtest.h>

#include "peering/network_state.h"

namespace strait::peering {
namespace {

tunnel::IpPrefix cidr(const std::string& text) {
  kube::Result<tunnel::IpPrefix> p = parseCidr("test", text);
  EXPECT_TRUE(p.ok()) << text << ": " << (p.ok() ? "" : p.error().message);
  return p.ok() ? *p : tunnel::IpPrefix();
}

RemapRequest request(const std::string& remote, std::vector<std::string> taken,
                     const std::string& pool = "10.240.0.0/12") {
  RemapRequest r;
  r.remote = cidr(remote);
  for (const std::string& t : taken) r.taken.push_back(cidr(t));
  r.pool = cidr(pool);
  return r;
}

std::string chosen(const RemapRequest& r) {
  kube::Result<tunnel::IpPrefix> p = chooseSeenAs(r);
  return p.ok() ? p->toString() : "error: " + p.error().message;
}

TEST(ParseCidr, RefusesWhatIsNotAnIpv4NetworkSayingWhy) {
  EXPECT_TRUE(parseCidr("--pod-cidr", "10.244.0.0/16").ok());
  kube::Result<tunnel::IpPrefix> hostBits = parseCidr("--pod-cidr", "10.244.1.0/16");
  ASSERT_FALSE(hostBits.ok());
  EXPECT_EQ(hostBits.code(), kube::Code::Invalid);
  EXPECT_NE(hostBits.error().message.find("host bits"), std::string::npos);
  EXPECT_NE(hostBits.error().message.find("10.244.0.0/16"), std::string::npos);
  kube::Result<tunnel::IpPrefix> bare = parseCidr("--remap-pool", "10.240.0.0");
  ASSERT_FALSE(bare.ok());
  EXPECT_NE(bare.error().message.find("--remap-pool"), std::string::npos);
  EXPECT_FALSE(parseCidr("x", "10.300.0.0/16").ok());
  EXPECT_FALSE(parseCidr("x", "10.0.0.0/33").ok());
  kube::Result<tunnel::IpPrefix> v6 = parseCidr("x", "fd00::/64");
  ASSERT_FALSE(v6.ok());
  EXPECT_NE(v6.error().message.find("IPv4"), std::string::npos);
}

TEST(ChooseSeenAs, ARemoteCidrThatCollidesWithNothingIsSeenAsItIs) {
  EXPECT_EQ(chosen(request("10.100.0.0/16", {"10.244.0.0/16", "10.96.0.0/14"})),
            "10.100.0.0/16");
}

TEST(ChooseSeenAs, OverlapWithThePodCidrTakesTheFirstFreePrefixOfTheSameSize) {
  EXPECT_EQ(chosen(request("10.244.0.0/16", {"10.244.0.0/16"})), "10.240.0.0/16");
  // Same size as the remote, whatever its size; a partial overlap counts.
  EXPECT_EQ(chosen(request("10.244.128.0/20", {"10.244.0.0/16"})), "10.240.0.0/20");
  EXPECT_EQ(chosen(request("10.0.0.0/8", {"10.244.0.0/16"}, "8.0.0.0/6")), "8.0.0.0/8");
}

TEST(ChooseSeenAs, OverlapWithTheServiceCidrOrAnotherPeeringsViewIsAvoidedToo) {
  // The remote's pod CIDR is this side's service CIDR.
  EXPECT_EQ(chosen(request("10.96.0.0/16", {"10.244.0.0/16", "10.96.0.0/12"})), "10.240.0.0/16");
  // Another peering is already seen as 10.240.0.0/16 and a third as 10.241.0.0/16: the same
  // pod CIDR again gets the next free one, and an unrelated CIDR that collides with a view
  // is remapped as well.
  EXPECT_EQ(chosen(request("10.244.0.0/16", {"10.244.0.0/16", "10.240.0.0/16", "10.241.0.0/16"})),
            "10.242.0.0/16");
  EXPECT_EQ(chosen(request("10.240.0.0/16", {"10.244.0.0/16", "10.240.0.0/16"})), "10.241.0.0/16");
  // A larger taken prefix inside the pool is skipped whole.
  EXPECT_EQ(chosen(request("10.244.0.0/16", {"10.244.0.0/16", "10.240.0.0/14"})),
            "10.245.0.0/16");
  EXPECT_EQ(chosen(request("10.200.0.0/16", {"10.200.0.0/16", "10.240.0.0/14"})), "10.244.0.0/16");
}

TEST(ChooseSeenAs, AnExhaustedPoolIsAConflictNamingThePool) {
  RemapRequest r = request("10.244.0.0/16", {"10.244.0.0/16", "10.240.0.0/16"}, "10.240.0.0/16");
  kube::Result<tunnel::IpPrefix> p = chooseSeenAs(r);
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.code(), kube::Code::Conflict);
  EXPECT_NE(p.error().message.find("remap pool 10.240.0.0/16 exhausted"), std::string::npos)
      << p.error().message;
  // A remote larger than the whole pool can never fit.
  kube::Result<tunnel::IpPrefix> big =
      chooseSeenAs(request("10.0.0.0/8", {"10.244.0.0/16"}, "10.240.0.0/12"));
  ASSERT_FALSE(big.ok());
  EXPECT_EQ(big.code(), kube::Code::Invalid);
  EXPECT_NE(big.error().message.find("larger than the whole remap pool"), std::string::npos);
}

TEST(ChooseSeenAs, AStoredChoiceIsKeptWhileItIsStillFree) {
  RemapRequest r = request("10.244.0.0/16", {"10.244.0.0/16"});
  r.previous = cidr("10.243.0.0/16");  // not the lowest free one: kept anyway
  EXPECT_EQ(chosen(r), "10.243.0.0/16");
  // A stored "not remapped" stays too, as long as nothing collides with it.
  RemapRequest plain = request("10.100.0.0/16", {"10.244.0.0/16"});
  plain.previous = cidr("10.100.0.0/16");
  EXPECT_EQ(chosen(plain), "10.100.0.0/16");
  // Taken meanwhile (by another peering's view), of another size, or outside the pool: a
  // new choice.
  r.taken.push_back(cidr("10.243.0.0/16"));
  EXPECT_EQ(chosen(r), "10.240.0.0/16");
  RemapRequest resized = request("10.244.0.0/16", {"10.244.0.0/16"});
  resized.previous = cidr("10.243.0.0/24");
  EXPECT_EQ(chosen(resized), "10.240.0.0/16");
  RemapRequest outside = request("10.244.0.0/16", {"10.244.0.0/16"});
  outside.previous = cidr("172.16.0.0/16");
  EXPECT_EQ(chosen(outside), "10.240.0.0/16");
}

TEST(CidrHelpers, CoveringFirstHostAndTranslation) {
  kube::Result<tunnel::IpPrefix> cover =
      coveringCidr({cidr("10.244.0.0/24"), cidr("10.244.1.0/24"), cidr("10.244.7.0/24")});
  ASSERT_TRUE(cover.ok());
  EXPECT_EQ(cover->toString(), "10.244.0.0/21");
  EXPECT_EQ(coveringCidr({cidr("10.244.3.0/24")})->toString(), "10.244.3.0/24");
  EXPECT_FALSE(coveringCidr({}).ok());
  EXPECT_EQ(firstHostAddress(cidr("10.244.1.0/24")), "10.244.1.1");
  EXPECT_EQ(translateAddress("10.244.2.7", cidr("10.244.0.0/16"), cidr("10.240.0.0/16")),
            std::optional<std::string>("10.240.2.7"));
  EXPECT_EQ(translateAddress("10.245.2.7", cidr("10.244.0.0/16"), cidr("10.240.0.0/16")),
            std::nullopt);
  EXPECT_EQ(translateAddress("not-an-ip", cidr("10.244.0.0/16"), cidr("10.240.0.0/16")),
            std::nullopt);
  EXPECT_TRUE(cidrsOverlap(cidr("10.244.0.0/16"), cidr("10.244.3.0/24")));
  EXPECT_FALSE(cidrsOverlap(cidr("10.244.0.0/16"), cidr("10.245.0.0/16")));
}

TEST(NetworkState, PodIpsAreTranslatedOnlyForARemappedRemote) {
  NetworkState state;
  // Nothing negotiated: identity.
  EXPECT_EQ(state.toLocalView("cloud", "10.244.2.7"), "10.244.2.7");
  state.setView("cloud", {"10.244.0.0/16", "10.240.0.0/16"});
  state.setView("edge", {"10.100.0.0/16", "10.100.0.0/16"});
  EXPECT_EQ(state.toLocalView("cloud", "10.244.2.7"), "10.240.2.7");
  EXPECT_EQ(state.toLocalView("cloud", "10.99.0.1"), "10.99.0.1");  // not in its CIDR
  EXPECT_EQ(state.toLocalView("edge", "10.100.0.9"), "10.100.0.9");  // not remapped
  EXPECT_EQ(state.toLocalView("other", "10.244.2.7"), "10.244.2.7");
  EXPECT_EQ(state.toLocalView("cloud", "fd00::1"), "fd00::1");
  state.forget("cloud");
  EXPECT_EQ(state.toLocalView("cloud", "10.244.2.7"), "10.244.2.7");
  // The default condition names why there is no tunnel.
  NetworkState off(TunnelCondition{false, "TunnelNotConfigured", "this cluster runs no gateway"});
  EXPECT_EQ(off.condition("cloud").message, "this cluster runs no gateway");
  off.setCondition("cloud", {true, "TunnelEstablished", "ok"});
  EXPECT_TRUE(off.condition("cloud").up);
}

TEST(NetworkState, ATunnelIsLostOnlyAfterItWasUp) {
  NetworkState state(TunnelCondition{false, "TunnelNotConfigured", "no gateway"});
  EXPECT_FALSE(state.tunnelLost("home"));  // unknown remote
  state.setCondition("home", {false, "Handshaking", "waiting for the first handshake"});
  EXPECT_FALSE(state.tunnelLost("home"));  // never up: nothing was lost
  state.setCondition("home", {false, "HandshakeMissing", "no handshake"});
  EXPECT_FALSE(state.tunnelLost("home"));
  state.setCondition("home", {true, "TunnelEstablished", "ok"});
  EXPECT_FALSE(state.tunnelLost("home"));
  state.setCondition("home", {false, "ProbeUnanswered", "no probe answered"});
  EXPECT_TRUE(state.tunnelLost("home"));
  state.setCondition("home", {false, "Handshaking", "renegotiated"});
  EXPECT_TRUE(state.tunnelLost("home"));  // a renegotiation carries no traffic either
  state.setCondition("home", {false, "TunnelNotConfigured", "the consumer dropped its gateway"});
  EXPECT_FALSE(state.tunnelLost("home"));  // no tunnel meant: traffic goes another way
  state.setCondition("home", {true, "TunnelEstablished", "ok"});
  EXPECT_FALSE(state.tunnelLost("home"));
  state.setCondition("home", {false, "HandshakeMissing", "no handshake"});
  EXPECT_TRUE(state.tunnelLost("home"));
  state.forget("home");  // unpeered
  EXPECT_FALSE(state.tunnelLost("home"));
  state.setCondition("home", {false, "HandshakeMissing", "no handshake"});
  EXPECT_FALSE(state.tunnelLost("home"));
}

}  // namespace
}  // namespace strait::peering

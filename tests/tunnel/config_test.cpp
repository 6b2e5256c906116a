// wg-quick configuration parsing: a full file, and errors that name file, line and key.
#include "tunnel/config.h"

#include <gtest/gtest.h>

namespace strait::tunnel {
namespace {

const std::string kPriv = keyToBase64(generatePrivateKey().bytes());
const std::string kPub = keyToBase64(*publicKeyOf(generatePrivateKey()));

std::string errorOf(const std::string& text) {
  auto r = parseConfig(text, "gw.conf");
  return r.ok() ? "" : r.error().message;
}

TEST(Config, ParsesAFullFile) {
  std::string text = "# gateway\n[Interface]\nPrivateKey = " + kPriv +
                     "\nListenPort = 51820\nAddress = 10.100.0.1/24, 10.100.1.1/32\nMTU = 1380\n"
                     "PostUp = iptables ...\n\n[Peer]\npublickey=" +
                     kPub + "  # comment\nPresharedKey = " + kPriv +
                     "\nEndpoint = 10.99.0.2:51821\nAllowedIPs = 10.100.0.2/32, 10.201.0.0/16\n"
                     "PersistentKeepalive = 25\nRemap = 10.200.0.0/16 -> 10.201.0.0/16\n";
  auto r = parseConfig(text, "gw.conf");
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(keyToBase64(r->privateKey.bytes()), kPriv);
  EXPECT_EQ(r->listenPort, 51820);
  ASSERT_EQ(r->addresses.size(), 2u);
  EXPECT_EQ(r->addresses[0].address.toString(), "10.100.0.1") << "host address kept";
  EXPECT_EQ(r->addresses[0].bits, 24);
  EXPECT_EQ(r->mtu, 1380);
  ASSERT_EQ(r->ignoredKeys.size(), 1u);
  ASSERT_EQ(r->peers.size(), 1u);
  const PeerConfig& p = r->peers[0];
  EXPECT_EQ(keyToBase64(p.publicKey), kPub);
  ASSERT_TRUE(p.presharedKey);
  ASSERT_TRUE(p.endpoint);
  EXPECT_EQ(p.endpoint->toString(), "10.99.0.2:51821");
  ASSERT_EQ(p.allowedIps.size(), 2u);
  EXPECT_EQ(p.allowedIps[1].toString(), "10.201.0.0/16");
  EXPECT_EQ(p.persistentKeepalive, 25);
  ASSERT_TRUE(p.remap);
  EXPECT_EQ(p.remap->toString(), "10.200.0.0/16 -> 10.201.0.0/16");
}

TEST(Config, ErrorsNameLineAndKey) {
  std::string head = "[Interface]\nPrivateKey = " + kPriv + "\n";
  EXPECT_EQ(errorOf(""), "gw.conf: no [Interface] section");
  EXPECT_EQ(errorOf("[Interface]\nListenPort = 1\n"), "gw.conf: [Interface] has no PrivateKey");
  EXPECT_EQ(errorOf(head + "ListenPort = 70000\n"),
            "gw.conf:3: ListenPort must be 0..65535, got \"70000\"");
  EXPECT_EQ(errorOf(head + "Colour = blue\n"), "gw.conf:3: unknown key Colour in [Interface]");
  EXPECT_EQ(errorOf(head + "[Peer]\nAllowedIPs = 10.0.0.0/8\n"),
            "gw.conf:3: [Peer] has no PublicKey");
  EXPECT_EQ(errorOf(head + "[Peer]\nPublicKey = abc\n"),
            "gw.conf:4: PublicKey is not a base64 32-byte key");
  EXPECT_NE(errorOf(head + "[Peer]\nPublicKey = " + kPub + "\nAllowedIPs = 10.0.0.0/40\n")
                .find("gw.conf:5: AllowedIPs"),
            std::string::npos);
  EXPECT_NE(errorOf(head + "[Peer]\nPublicKey = " + kPub + "\nEndpoint = nowhere\n")
                .find("gw.conf:5: Endpoint"),
            std::string::npos);
  EXPECT_NE(errorOf(head + "[Peer]\nPublicKey = " + kPub + "\nRemap = 10.0.0.0/8\n")
                .find("gw.conf:5: remap"),
            std::string::npos);
  EXPECT_EQ(errorOf(head + "[Wat]\n"),
            "gw.conf:3: unknown section [Wat] (expected [Interface] or [Peer])");
  EXPECT_EQ(errorOf(head + "just words\n"), "gw.conf:3: expected Key = Value, got \"just words\"");
  EXPECT_EQ(errorOf("PrivateKey = x\n"), "gw.conf:1: PrivateKey outside of a section");
  EXPECT_NE(errorOf(head + "[Peer]\nPublicKey = " + kPub + "\n[Peer]\nPublicKey = " + kPub + "\n")
                .find("two [Peer] sections"),
            std::string::npos);
  EXPECT_EQ(errorOf(head + "MTU = 12\n"), "gw.conf:3: MTU must be 576..65535, got \"12\"");
}

TEST(Config, MissingFileIsNotFound) {
  auto r = loadConfigFile("/nonexistent/strait-gw.conf");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, base::Code::NotFound);
  EXPECT_NE(r.error().message.find("/nonexistent/strait-gw.conf"), std::string::npos);
}

}  // namespace
}  // namespace strait::tunnel

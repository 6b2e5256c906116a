// The UAPI text protocol against a device (no socket): set then get, errors.
#include "tunnel/uapi.h"

#include <gtest/gtest.h>

namespace strait::tunnel {
namespace {

TEST(Uapi, SetThenGet) {
  Device d({});
  PrivateKey priv = generatePrivateKey();
  PublicKey peer = *publicKeyOf(generatePrivateKey());
  std::string set =
      "set=1\nprivate_key=" + toHex(priv.bytes()) +
      "\nlisten_port=51999\npublic_key=" + toHex(peer) +
      "\nendpoint=10.99.0.2:51820\npersistent_keepalive_interval=25\n"
      "replace_allowed_ips=true\nallowed_ip=10.100.0.2/32\nallowed_ip=10.201.0.0/16\n\n";
  EXPECT_EQ(handleUapiRequest(d, set), "errno=0\n\n");
  std::string got = handleUapiRequest(d, "get=1\n\n");
  EXPECT_NE(got.find("private_key=" + toHex(priv.bytes()) + "\n"), std::string::npos) << got;
  EXPECT_NE(got.find("listen_port=51999\n"), std::string::npos) << got;
  EXPECT_NE(got.find("public_key=" + toHex(peer) + "\n"), std::string::npos);
  EXPECT_NE(got.find("endpoint=10.99.0.2:51820\n"), std::string::npos);
  EXPECT_NE(got.find("persistent_keepalive_interval=25\n"), std::string::npos);
  EXPECT_NE(got.find("allowed_ip=10.100.0.2/32\n"), std::string::npos);
  EXPECT_NE(got.find("allowed_ip=10.201.0.0/16\n"), std::string::npos);
  EXPECT_NE(got.find("last_handshake_time_sec=0\n"), std::string::npos);
  EXPECT_EQ(got.substr(got.size() - 9), "errno=0\n\n");

  // update_only for an unknown peer is a no-op, remove removes.
  PublicKey other = *publicKeyOf(generatePrivateKey());
  EXPECT_EQ(handleUapiRequest(d, "set=1\npublic_key=" + toHex(other) + "\nupdate_only=true\n\n"),
            "errno=0\n\n");
  EXPECT_EQ(d.snapshot().peers.size(), 1u);
  EXPECT_EQ(handleUapiRequest(d, "set=1\npublic_key=" + toHex(peer) + "\nremove=true\n\n"),
            "errno=0\n\n");
  EXPECT_EQ(d.snapshot().peers.size(), 0u);
}

TEST(Uapi, BadRequestsAreEinval) {
  Device d({});
  EXPECT_EQ(handleUapiRequest(d, "frobnicate=1\n\n"), "errno=22\n\n");
  EXPECT_EQ(handleUapiRequest(d, "set=1\nlisten_port=99999\n\n"), "errno=22\n\n");
  EXPECT_EQ(handleUapiRequest(d, "set=1\nprivate_key=xyz\n\n"), "errno=22\n\n");
  EXPECT_EQ(handleUapiRequest(d, "set=1\nwhat=ever\n\n"), "errno=22\n\n");
  EXPECT_EQ(handleUapiRequest(d, "set=1\nno equals sign\n\n"), "errno=22\n\n");
  PublicKey peer = *publicKeyOf(generatePrivateKey());
  EXPECT_EQ(
      handleUapiRequest(d, "set=1\npublic_key=" + toHex(peer) + "\nallowed_ip=10.0.0.0/99\n\n"),
      "errno=22\n\n");
  EXPECT_EQ(handleUapiRequest(d, "set=1\npublic_key=" + toHex(peer) + "\nendpoint=nope\n\n"),
            "errno=22\n\n");
}

}  // namespace
}  // namespace strait::tunnel

#include "peering/identity.h"

#include <gtest/gtest.h>

namespace strait::peering {
namespace {

TEST(Identity, SecretRoundTrip) {
  ClusterIdentity id = *ClusterIdentity::generate("cloud");
  EXPECT_TRUE(validClusterId(id.clusterId)) << id.clusterId;
  nlohmann::json secret = id.toSecret();
  EXPECT_EQ(secret["metadata"]["name"], "strait-identity");
  EXPECT_EQ(secret["metadata"]["namespace"], "strait-system");
  kube::Result<ClusterIdentity> back = ClusterIdentity::fromSecret(secret);
  ASSERT_TRUE(back.ok()) << back.error().message;
  EXPECT_EQ(back->clusterId, id.clusterId);
  EXPECT_EQ(back->clusterName, "cloud");
  EXPECT_EQ(back->ca.certPem, id.ca.certPem);
  EXPECT_EQ(back->tokenKey.reveal(), id.tokenKey.reveal());
  EXPECT_EQ(back->caFingerprint().size(), 64u);
}

TEST(Identity, BrokenSecretNamesTheKey) {
  ClusterIdentity id = *ClusterIdentity::generate("cloud");
  nlohmann::json secret = id.toSecret();
  secret["data"].erase("ca.key");
  kube::Result<ClusterIdentity> r = ClusterIdentity::fromSecret(secret);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("ca.key"), std::string::npos);
  secret = id.toSecret();
  secret["data"]["clusterID"] = "bm90LWEtdXVpZA==";  // "not-a-uuid"
  EXPECT_FALSE(ClusterIdentity::fromSecret(secret).ok());
  EXPECT_FALSE(ClusterIdentity::fromSecret(nlohmann::json::array()).ok());
}

TEST(Identity, ClusterIdValidation) {
  EXPECT_TRUE(validClusterId(newUuid()));
  EXPECT_NE(newUuid(), newUuid());
  EXPECT_FALSE(validClusterId("../../etc"));
  EXPECT_FALSE(validClusterId("11111111-2222-4333-8444-55555555555G"));
}

}  // namespace
}  // namespace strait::peering

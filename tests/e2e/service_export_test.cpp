// `strait expose service` with real processes and real kubectl: a `strait minicluster` as
// the provider, the ForeignCluster CRD and two ForeignClusters (a consumer and a provider of
// this cluster) written with kubectl, a Service created with kubectl. Checks that exposing
// records the consumer's cluster ID in the Service's strait.io/export-to annotation (by
// ForeignCluster name or cluster ID, idempotently), that --remove takes it off (the
// annotation goes with the last consumer), and that each bad input is refused with its exit
// code and a message naming what is wrong: a malformed NAMESPACE/NAME (2), a Service that
// does not exist, an unknown consumer, a cluster that is a provider (1).

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "e2e/cluster_fixture.h"
#include "peering/foreign_cluster.h"
#include "peering/names.h"

namespace strait::e2e {
namespace {

using json = nlohmann::json;

class ServiceExportCliTest : public ClusterTest {
 protected:
  void SetUp() override {
    ClusterTest::SetUp();
    if (HasFatalFailure()) return;
    CommandResult crd = kubectl({"apply", "-f", "-"}, peering::foreignClusterCrd().dump());
    ASSERT_EQ(crd.exitCode, 0) << crd.describe();
    ASSERT_TRUE(waitFor([&] { return kubectl({"get", "foreignclusters"}).exitCode == 0; }, 30s));
    json consumer = peering::makeForeignCluster("home", "home-id-1", "home",
                                                std::string(peering::kRoleConsumer), "");
    json provider = peering::makeForeignCluster("far", "far-id-2", "far",
                                                std::string(peering::kRoleProvider), "");
    for (const json& fc : {consumer, provider}) {
      CommandResult r = kubectl({"apply", "-f", "-"}, fc.dump());
      ASSERT_EQ(r.exitCode, 0) << r.describe();
    }
    CommandResult ns = kubectl({"create", "namespace", "shop"});
    ASSERT_TRUE(ns.exitCode == 0 || ns.err.find("AlreadyExists") != std::string::npos)
        << ns.describe();
    kubectl({"-n", "shop", "delete", "service", "db", "--ignore-not-found"});
    CommandResult svc = kubectl({"-n", "shop", "create", "service", "clusterip", "db",
                                 "--tcp=5432:5432"});
    ASSERT_EQ(svc.exitCode, 0) << svc.describe();
  }

  CommandResult expose(const std::vector<std::string>& args) {
    std::vector<std::string> argv = {straitBinary(), "expose", "service"};
    argv.insert(argv.end(), args.begin(), args.end());
    return runCommand(argv, clientEnv());
  }

  std::string exportTo() {
    CommandResult r = kubectl({"-n", "shop", "get", "service", "db", "-o", "json"});
    EXPECT_EQ(r.exitCode, 0) << r.describe();
    json svc = json::parse(r.out, nullptr, false);
    if (svc.is_discarded()) return "<unparsable>";
    const json a = svc["metadata"].value("annotations", json::object());
    auto it = a.find(std::string(peering::kAnnotationExportTo));
    return it == a.end() ? "<none>" : it->get<std::string>();
  }
};

TEST_F(ServiceExportCliTest, ExposeAndRemoveRecordTheConsumersOnTheService) {
  const std::string kc = cluster().kubeconfig();
  CommandResult r = expose({"shop/db", "--kubeconfig", kc, "--to", "home"});
  ASSERT_EQ(r.exitCode, 0) << r.describe();
  EXPECT_NE(r.out.find("exported to home (cluster ID home-id-1)"), std::string::npos) << r.out;
  EXPECT_EQ(exportTo(), "home-id-1");

  // By cluster ID, a second time: nothing changes.
  r = expose({"shop/db", "--kubeconfig", kc, "--to", "home-id-1"});
  ASSERT_EQ(r.exitCode, 0) << r.describe();
  EXPECT_NE(r.out.find("already exported"), std::string::npos) << r.out;
  EXPECT_EQ(exportTo(), "home-id-1");

  // A second consumer joins the list (sorted).
  json other = peering::makeForeignCluster("branch", "branch-id-0", "branch",
                                           std::string(peering::kRoleConsumer), "");
  ASSERT_EQ(kubectl({"apply", "-f", "-"}, other.dump()).exitCode, 0);
  r = expose({"shop/db", "--kubeconfig", kc, "--to", "branch"});
  ASSERT_EQ(r.exitCode, 0) << r.describe();
  EXPECT_EQ(exportTo(), "branch-id-0,home-id-1");

  r = expose({"shop/db", "--kubeconfig", kc, "--to", "home", "--remove"});
  ASSERT_EQ(r.exitCode, 0) << r.describe();
  EXPECT_NE(r.out.find("no longer exported to home"), std::string::npos) << r.out;
  EXPECT_EQ(exportTo(), "branch-id-0");

  // A consumer unpeered since (no ForeignCluster left) is still removed by its cluster ID.
  ASSERT_EQ(kubectl({"delete", "foreigncluster", "branch"}).exitCode, 0);
  r = expose({"shop/db", "--kubeconfig", kc, "--to", "branch-id-0", "--remove"});
  ASSERT_EQ(r.exitCode, 0) << r.describe();
  EXPECT_EQ(exportTo(), "<none>");

  r = expose({"shop/db", "--kubeconfig", kc, "--to", "home", "--remove"});
  ASSERT_EQ(r.exitCode, 0) << r.describe();
  EXPECT_NE(r.out.find("was not exported to home"), std::string::npos) << r.out;
}

TEST_F(ServiceExportCliTest, BadInputIsRefusedWithAClearMessage) {
  const std::string kc = cluster().kubeconfig();
  for (const char* bad : {"db", "shop/db/x", "Shop/db", "shop/", "shop/9db"}) {
    CommandResult r = expose({bad, "--kubeconfig", kc, "--to", "home"});
    EXPECT_EQ(r.exitCode, 2) << bad << ": " << r.describe();
    EXPECT_NE(r.err.find("error: SERVICE:"), std::string::npos) << bad << ": " << r.err;
  }
  CommandResult r = expose({"shop/nosuch", "--kubeconfig", kc, "--to", "home"});
  EXPECT_EQ(r.exitCode, 1) << r.describe();
  EXPECT_NE(r.err.find("Service shop/nosuch not found"), std::string::npos) << r.err;

  r = expose({"shop/db", "--kubeconfig", kc, "--to", "hom"});
  EXPECT_EQ(r.exitCode, 1) << r.describe();
  EXPECT_NE(r.err.find("no peered consumer named \"hom\""), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("did you mean \"home\""), std::string::npos) << r.err;

  r = expose({"shop/db", "--kubeconfig", kc, "--to", "far"});
  EXPECT_EQ(r.exitCode, 1) << r.describe();
  EXPECT_NE(r.err.find("is a peered Provider of this cluster, not a consumer"), std::string::npos)
      << r.err;

  r = expose({"shop/db", "--kubeconfig", kc});
  EXPECT_EQ(r.exitCode, 2) << r.describe();
  EXPECT_NE(r.err.find("--to"), std::string::npos) << r.err;
  EXPECT_EQ(exportTo(), "<none>");  // nothing refused was written
}

}  // namespace
}  // namespace strait::e2e

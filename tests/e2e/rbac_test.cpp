// rbac.authorization.k8s.io/v1 through the machine's real kubectl (and the real helm from the
// build tree's tools/, when present): the default ClusterRoles, kubectl's typed create
// commands, upstream's validation message, ClusterRole aggregation, and a rendered chart
// applied with --dry-run=server (client-side validation reads the server's OpenAPI).

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "e2e/cluster_fixture.h"

namespace strait::e2e {
namespace {

using ::testing::HasSubstr;
using namespace std::chrono_literals;

class RbacTest : public ClusterTest {
 protected:
  CommandResult must(const std::vector<std::string>& args, const std::string& stdinData = {}) {
    CommandResult r = kubectl(args, stdinData);
    EXPECT_EQ(r.exitCode, 0) << r.describe();
    return r;
  }
};

// The source tree the build directory was configured from (CMakeCache.txt beside the binary).
std::string sourceDir() {
  std::filesystem::path bin = straitBinary();
  std::ifstream cache(bin.parent_path() / "CMakeCache.txt");
  const std::string key = "CMAKE_HOME_DIRECTORY:INTERNAL=";
  for (std::string line; std::getline(cache, line);) {
    if (line.rfind(key, 0) == 0) return line.substr(key.size());
  }
  return "";
}

TEST_F(RbacTest, DefaultClusterRolesAndTypedCreate) {
  CommandResult roles = must({"get", "clusterroles"});
  EXPECT_THAT(roles.out, HasSubstr("CREATED AT"));
  for (const char* name : {"cluster-admin", "admin", "edit", "view", "system:basic-user",
                           "system:discovery", "system:public-info-viewer"}) {
    EXPECT_THAT(roles.out, HasSubstr(std::string("\n") + name + " ")) << name;
  }
  CommandResult bindings = must({"get", "clusterrolebinding", "cluster-admin", "-o", "wide"});
  EXPECT_THAT(bindings.out, HasSubstr("ClusterRole/cluster-admin"));
  EXPECT_THAT(bindings.out, HasSubstr("system:masters"));

  must({"create", "clusterrole", "pod-reader", "--verb=get,list,watch", "--resource=pods"});
  must({"create", "role", "cm-editor", "-n", "default", "--verb=get,update",
        "--resource=configmaps"});
  must({"create", "rolebinding", "cm-editors", "-n", "default", "--role=cm-editor",
        "--user=alice", "--group=devs"});
  must({"create", "clusterrolebinding", "pod-readers", "--clusterrole=pod-reader",
        "--serviceaccount=default:robot"});
  CommandResult rb = must({"get", "rolebinding", "cm-editors", "-n", "default", "-o", "wide"});
  EXPECT_THAT(rb.out, HasSubstr("Role/cm-editor"));
  EXPECT_THAT(rb.out, HasSubstr("alice"));
  CommandResult crb = must({"get", "clusterrolebinding", "pod-readers", "-o", "wide"});
  EXPECT_THAT(crb.out, HasSubstr("default/robot"));
  CommandResult rule =
      must({"get", "role", "cm-editor", "-n", "default", "-o", "jsonpath={.rules[0].verbs}"});
  EXPECT_EQ(rule.out, R"(["get","update"])");

  // roleRef is immutable.
  CommandResult patch = kubectl({"patch", "rolebinding", "cm-editors", "-n", "default",
                                 "--type=merge", "-p", R"({"roleRef":{"name":"other"}})"});
  EXPECT_NE(patch.exitCode, 0);
  EXPECT_THAT(patch.err, HasSubstr("cannot change roleRef")) << patch.describe();
}

TEST_F(RbacTest, InvalidRoleRefusedWithUpstreamMessage) {
  CommandResult r = kubectl({"apply", "-f", "-"}, R"(
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata:
  name: bad
  namespace: default
rules:
- verbs: ["get"]
  resources: ["pods"]
)");
  EXPECT_NE(r.exitCode, 0);
  EXPECT_THAT(r.err, HasSubstr("The Role \"bad\" is invalid: rules[0].apiGroups: Required value: "
                               "resource rules must supply at least one api group"))
      << r.describe();
  CommandResult urls = kubectl({"create", "-f", "-"}, R"(
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata:
  name: urls
  namespace: default
rules:
- verbs: ["get"]
  nonResourceURLs: ["/healthz"]
)");
  EXPECT_NE(urls.exitCode, 0);
  EXPECT_THAT(urls.err, HasSubstr("namespaced rules cannot apply to non-resource URLs"))
      << urls.describe();
}

TEST_F(RbacTest, AggregationFillsAClusterRole) {
  must({"apply", "-f", "-"}, R"(
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: monitoring
aggregationRule:
  clusterRoleSelectors:
  - matchLabels:
      example.com/aggregate-to-monitoring: "true"
rules: []
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: monitoring-endpoints
  labels:
    example.com/aggregate-to-monitoring: "true"
rules:
- apiGroups: [""]
  resources: ["services", "endpoints", "pods"]
  verbs: ["get", "list", "watch"]
)");
  std::string resources;
  for (int i = 0; i < 100 && resources.empty(); ++i) {
    resources = kubectl({"get", "clusterrole", "monitoring", "-o",
                         "jsonpath={.rules[0].resources}"})
                    .out;
    if (resources.empty()) std::this_thread::sleep_for(100ms);
  }
  EXPECT_EQ(resources, R"(["services","endpoints","pods"])");
  // The default aggregated roles: view holds the aggregate-to-view rules.
  CommandResult view = must({"get", "clusterrole", "view", "-o", "json"});
  EXPECT_THAT(view.out, HasSubstr("\"deployments\""));
}

TEST_F(RbacTest, HelmTemplateAppliesWithServerDryRun) {
  std::filesystem::path helm = std::filesystem::path(straitBinary()).parent_path() / "tools/helm";
  if (access(helm.c_str(), X_OK) != 0) {
    GTEST_SKIP() << helm << " missing: run scripts/install-deps.sh to fetch the real helm";
  }
  const std::string chart = sourceDir() + "/charts/strait";
  CommandResult rendered = runCommand(
      {helm.string(), "template", "strait", chart, "--set", "clusterName=home"}, clientEnv(), 60s);
  ASSERT_EQ(rendered.exitCode, 0) << rendered.describe();
  ASSERT_THAT(rendered.out, HasSubstr("kind: ClusterRole"));
  // The chart's Role for the identity Secret lives in the namespace the agent keeps it in.
  must({"create", "namespace", "strait-system"});
  CommandResult applied = kubectl({"apply", "--dry-run=server", "-f", "-"}, rendered.out);
  EXPECT_EQ(applied.exitCode, 0) << applied.describe();
  EXPECT_THAT(applied.out, HasSubstr("created (server dry run)"));
}

}  // namespace
}  // namespace strait::e2e

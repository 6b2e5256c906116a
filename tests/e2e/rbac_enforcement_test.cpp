// RBAC enforcement through the real kubectl: a ServiceAccount's token from `kubectl create
// token` is refused (403, upstream's message) outside its Role and served inside it;
// `kubectl auth can-i` (plain, --as, --list) and `kubectl auth whoami`; impersonation refused
// to a non-impersonator; escalation refused; --authorization-mode AlwaysAllow.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "e2e/cluster_fixture.h"

namespace strait::e2e {
namespace {

using ::testing::HasSubstr;

class RbacEnforcementTest : public ClusterTest {
 protected:
  CommandResult must(const std::vector<std::string>& args, const std::string& stdinData = {}) {
    CommandResult r = kubectl(args, stdinData);
    EXPECT_EQ(r.exitCode, 0) << r.describe();
    return r;
  }

  // A namespace with ServiceAccount `sa` bound to a Role that reads pods there; returns a
  // kubeconfig that authenticates with a token of that ServiceAccount only.
  std::string serviceAccountKubeconfig(const std::string& ns, const std::string& sa) {
    must({"create", "namespace", ns});
    must({"create", "serviceaccount", sa, "-n", ns});
    must({"create", "role", "pod-reader", "-n", ns, "--verb=get,list,watch", "--resource=pods"});
    must({"create", "rolebinding", "pod-reader", "-n", ns, "--role=pod-reader",
          "--serviceaccount=" + ns + ":" + sa});
    CommandResult token = must({"create", "token", sa, "-n", ns});
    std::string t = token.out;
    while (!t.empty() && (t.back() == '\n' || t.back() == '\r')) t.pop_back();
    std::string error;
    auto creds = loadAdminCredentials(cluster().kubeconfig(), testDir(), &error);
    EXPECT_TRUE(creds) << error;
    if (!creds) return "";
    const std::string path = testDir() + "/" + sa + ".kubeconfig";
    Env env = clientEnv();
    auto cfg = [&](std::vector<std::string> args) {
      args.insert(args.begin(), {"kubectl", "config", "--kubeconfig=" + path});
      CommandResult r = runCommand(args, env);
      EXPECT_EQ(r.exitCode, 0) << r.describe();
    };
    cfg({"set-cluster", "c", "--server=" + creds->server,
         "--certificate-authority=" + creds->caFile, "--embed-certs=true"});
    cfg({"set-credentials", sa, "--token=" + t});
    cfg({"set-context", "c", "--cluster=c", "--user=" + sa, "--namespace=" + ns});
    cfg({"use-context", "c"});
    return path;
  }

  // kubectl with the ServiceAccount's kubeconfig.
  CommandResult as(const std::string& kubeconfig, std::vector<std::string> args) {
    args.insert(args.begin(), {"kubectl", "--kubeconfig=" + kubeconfig});
    Env env = clientEnv();
    env["KUBECONFIG"] = kubeconfig;
    return runCommand(args, env);
  }
};

TEST_F(RbacEnforcementTest, ServiceAccountTokenForbiddenOutsideItsRole) {
  const std::string kc = serviceAccountKubeconfig("rbac-a", "reader");
  ASSERT_FALSE(kc.empty());
  const std::string user = "system:serviceaccount:rbac-a:reader";

  CommandResult inside = as(kc, {"get", "pods", "-n", "rbac-a"});
  EXPECT_EQ(inside.exitCode, 0) << inside.describe();
  EXPECT_THAT(inside.err, HasSubstr("No resources found in rbac-a namespace"));

  CommandResult other = as(kc, {"get", "pods", "-n", "default"});
  EXPECT_NE(other.exitCode, 0);
  EXPECT_THAT(other.err,
              HasSubstr("Error from server (Forbidden): pods is forbidden: User \"" + user +
                        "\" cannot list resource \"pods\" in API group \"\" in the namespace "
                        "\"default\""))
      << other.describe();

  CommandResult nodes = as(kc, {"get", "nodes"});
  EXPECT_NE(nodes.exitCode, 0);
  EXPECT_THAT(nodes.err, HasSubstr("nodes is forbidden: User \"" + user +
                                   "\" cannot list resource \"nodes\" in API group \"\" at the "
                                   "cluster scope"))
      << nodes.describe();

  CommandResult create = as(kc, {"create", "configmap", "c", "-n", "rbac-a"});
  EXPECT_NE(create.exitCode, 0);
  EXPECT_THAT(create.err, HasSubstr("configmaps is forbidden: User \"" + user +
                                    "\" cannot create resource \"configmaps\" in API group \"\" "
                                    "in the namespace \"rbac-a\""))
      << create.describe();

  CommandResult deploy = as(kc, {"get", "deployments", "-n", "rbac-a"});
  EXPECT_THAT(deploy.err, HasSubstr("deployments.apps is forbidden: User \"" + user +
                                    "\" cannot list resource \"deployments\" in API group "
                                    "\"apps\" in the namespace \"rbac-a\""))
      << deploy.describe();

  CommandResult raw = as(kc, {"get", "--raw", "/metrics-nowhere"});
  EXPECT_NE(raw.exitCode, 0);
  EXPECT_THAT(raw.err,
              HasSubstr("forbidden: User \"" + user + "\" cannot get path \"/metrics-nowhere\""))
      << raw.describe();

  // Discovery is granted to every authenticated user by the default policy.
  CommandResult resources = as(kc, {"api-resources", "--api-group=apps"});
  EXPECT_EQ(resources.exitCode, 0) << resources.describe();
  EXPECT_THAT(resources.out, HasSubstr("deployments"));
  CommandResult version = as(kc, {"version", "-o", "json"});
  EXPECT_EQ(version.exitCode, 0) << version.describe();

  // Granting more takes effect on the next request.
  must({"create", "rolebinding", "view-default", "-n", "default", "--clusterrole=view",
        "--serviceaccount=rbac-a:reader"});
  CommandResult granted = as(kc, {"get", "pods", "-n", "default"});
  EXPECT_EQ(granted.exitCode, 0) << granted.describe();
}

TEST_F(RbacEnforcementTest, AuthCanIWhoamiAndImpersonation) {
  const std::string kc = serviceAccountKubeconfig("rbac-b", "bot");
  ASSERT_FALSE(kc.empty());
  const std::string user = "system:serviceaccount:rbac-b:bot";

  CommandResult yes = as(kc, {"auth", "can-i", "list", "pods", "-n", "rbac-b"});
  EXPECT_EQ(yes.exitCode, 0) << yes.describe();
  EXPECT_EQ(yes.out, "yes\n");
  CommandResult no = as(kc, {"auth", "can-i", "delete", "pods", "-n", "rbac-b"});
  EXPECT_EQ(no.exitCode, 1) << no.describe();
  EXPECT_EQ(no.out, "no\n");

  // The admin (system:masters) asks on the ServiceAccount's behalf.
  CommandResult asYes = kubectl({"auth", "can-i", "watch", "pods", "-n", "rbac-b", "--as", user});
  EXPECT_EQ(asYes.out, "yes\n") << asYes.describe();
  CommandResult asNo = kubectl({"auth", "can-i", "list", "secrets", "-n", "rbac-b", "--as", user});
  EXPECT_EQ(asNo.out, "no\n") << asNo.describe();
  CommandResult asNodes = kubectl({"auth", "can-i", "get", "nodes", "--as", user});
  EXPECT_EQ(asNodes.out, "no\n") << asNodes.describe();

  CommandResult list = as(kc, {"auth", "can-i", "--list", "-n", "rbac-b"});
  EXPECT_EQ(list.exitCode, 0) << list.describe();
  EXPECT_THAT(list.out, HasSubstr("pods "));
  EXPECT_THAT(list.out, HasSubstr("[get list watch]"));
  EXPECT_THAT(list.out, HasSubstr("selfsubjectaccessreviews.authorization.k8s.io"));
  EXPECT_THAT(list.out, HasSubstr("/apis/*"));

  CommandResult whoami = as(kc, {"auth", "whoami"});
  EXPECT_EQ(whoami.exitCode, 0) << whoami.describe();
  EXPECT_THAT(whoami.out, HasSubstr(user));
  EXPECT_THAT(whoami.out, HasSubstr("system:serviceaccounts:rbac-b"));
  CommandResult adminWho = kubectl({"auth", "whoami", "--as", user});
  EXPECT_THAT(adminWho.out, HasSubstr(user)) << adminWho.describe();

  // A ServiceAccount with no impersonate grant cannot act as anyone else.
  CommandResult imp = as(kc, {"get", "pods", "-n", "rbac-b", "--as", "jane"});
  EXPECT_NE(imp.exitCode, 0);
  EXPECT_THAT(imp.err, HasSubstr("users \"jane\" is forbidden: User \"" + user +
                                 "\" cannot impersonate resource \"users\" in API group \"\" at "
                                 "the cluster scope"))
      << imp.describe();
  CommandResult impGroup =
      as(kc, {"auth", "can-i", "get", "pods", "--as", user, "--as-group", "system:masters"});
  EXPECT_NE(impGroup.exitCode, 0);
  EXPECT_THAT(impGroup.err, HasSubstr("cannot impersonate resource"));
}

TEST_F(RbacEnforcementTest, EscalationRefusedAndBindAllowed) {
  const std::string kc = serviceAccountKubeconfig("rbac-c", "manager");
  ASSERT_FALSE(kc.empty());
  const std::string user = "system:serviceaccount:rbac-c:manager";
  must({"create", "role", "rbac-writer", "-n", "rbac-c", "--verb=create,get,list",
        "--resource=roles.rbac.authorization.k8s.io,rolebindings.rbac.authorization.k8s.io"});
  must({"create", "rolebinding", "rbac-writer", "-n", "rbac-c", "--role=rbac-writer",
        "--serviceaccount=rbac-c:manager"});

  CommandResult escalate =
      as(kc, {"create", "role", "secret-reader", "-n", "rbac-c", "--verb=get",
              "--resource=secrets"});
  EXPECT_NE(escalate.exitCode, 0);
  EXPECT_THAT(escalate.err,
              HasSubstr("roles.rbac.authorization.k8s.io \"secret-reader\" is forbidden: user \"" +
                        user + "\" (groups=[\"system:serviceaccounts\" "
                               "\"system:serviceaccounts:rbac-c\" \"system:authenticated\"]) is "
                               "attempting to grant RBAC permissions not currently held:\n"
                               "{APIGroups:[\"\"], Resources:[\"secrets\"], Verbs:[\"get\"]}"))
      << escalate.describe();

  // A role within what it holds is fine, and so is binding it.
  CommandResult own = as(kc, {"create", "role", "pod-lister", "-n", "rbac-c", "--verb=list",
                              "--resource=pods"});
  EXPECT_EQ(own.exitCode, 0) << own.describe();
  CommandResult bindOwn = as(kc, {"create", "rolebinding", "pod-lister", "-n", "rbac-c",
                                  "--role=pod-lister", "--user=someone"});
  EXPECT_EQ(bindOwn.exitCode, 0) << bindOwn.describe();

  // Binding `edit` needs its permissions, or the bind verb on it.
  CommandResult bindEdit = as(kc, {"create", "rolebinding", "edit", "-n", "rbac-c",
                                   "--clusterrole=edit", "--user=someone"});
  EXPECT_NE(bindEdit.exitCode, 0);
  EXPECT_THAT(bindEdit.err, HasSubstr("rolebindings.rbac.authorization.k8s.io \"edit\" is "
                                      "forbidden: user \"" + user + "\""))
      << bindEdit.describe();
  must({"create", "role", "edit-binder", "-n", "rbac-c", "--verb=bind",
        "--resource=clusterroles.rbac.authorization.k8s.io", "--resource-name=edit"});
  must({"create", "rolebinding", "edit-binder", "-n", "rbac-c", "--role=edit-binder",
        "--serviceaccount=rbac-c:manager"});
  CommandResult bound = as(kc, {"create", "rolebinding", "edit", "-n", "rbac-c",
                                "--clusterrole=edit", "--user=someone"});
  EXPECT_EQ(bound.exitCode, 0) << bound.describe();
}

// The same client against a minicluster started with --authorization-mode AlwaysAllow.
class AlwaysAllowTest : public RbacEnforcementTest {
 public:
  static void SetUpTestSuite() { SetUpTestSuiteWithArgs({"--authorization-mode", "AlwaysAllow"}); }
};

TEST_F(AlwaysAllowTest, EveryAuthenticatedRequestIsAllowed) {
  const std::string kc = serviceAccountKubeconfig("open", "anyone");
  ASSERT_FALSE(kc.empty());
  CommandResult nodes = as(kc, {"get", "nodes"});
  EXPECT_EQ(nodes.exitCode, 0) << nodes.describe();
  CommandResult secrets = as(kc, {"get", "secrets", "-n", "default"});
  EXPECT_EQ(secrets.exitCode, 0) << secrets.describe();
  CommandResult can = as(kc, {"auth", "can-i", "delete", "nodes"});
  EXPECT_EQ(can.out, "yes\n") << can.describe();
}

TEST(AuthorizationModeFlagTest, UnknownModeIsRefused) {
  std::string bin = straitBinary();
  ASSERT_FALSE(bin.empty());
  CommandResult r = runCommand({bin, "minicluster", "--authorization-mode", "Webhook"});
  EXPECT_NE(r.exitCode, 0);
  EXPECT_THAT(r.out + r.err, HasSubstr("--authorization-mode"));
}

}  // namespace
}  // namespace strait::e2e

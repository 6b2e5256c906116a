#include "kube/pod_security.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace strait::kube {
namespace {

using nlohmann::json;
using L = PodSecurityLevel;

// A Pod that passes the restricted level; each case changes one thing.
json restrictedPod() {
  return json::parse(R"({
    "metadata": {"name": "p"},
    "spec": {
      "securityContext": {"runAsNonRoot": true, "seccompProfile": {"type": "RuntimeDefault"}},
      "containers": [{"name": "app", "image": "nginx",
        "securityContext": {"allowPrivilegeEscalation": false,
                            "capabilities": {"drop": ["ALL"]}}}],
      "volumes": [{"name": "cfg", "configMap": {"name": "c"}}]
    }
  })");
}

std::string messages(const std::vector<PodSecurityViolation>& vs) {
  std::string out;
  for (const auto& v : vs) {
    if (!out.empty()) out += " | ";
    out += v.check + ": " + v.message();
  }
  return out;
}

struct Case {
  std::string name;
  L level;
  json patch;          // JSON merge patch applied to restrictedPod()
  std::string expect;  // messages(), "" = allowed
};

TEST(PodSecurityTest, EachCheckPositiveAndNegative) {
  const std::vector<Case> cases = {
      {"restricted pod is restricted", L::Restricted, json::object(), ""},
      {"host namespaces", L::Baseline,
       {{"spec", {{"hostNetwork", true}, {"hostPID", true}}}},
       "hostNamespaces: host namespaces (hostNetwork=true, hostPID=true)"},
      {"hostIPC", L::Baseline, {{"spec", {{"hostIPC", true}}}},
       "hostNamespaces: host namespaces (hostIPC=true)"},
      {"host namespaces false", L::Baseline,
       {{"spec", {{"hostNetwork", false}, {"hostPID", false}, {"hostIPC", false}}}}, ""},
      {"privileged", L::Baseline,
       {{"spec", {{"containers", {{{"name", "a"}, {"securityContext", {{"privileged", true}}}}}}}}},
       "privileged: privileged (container \"a\" must not set securityContext.privileged=true)"},
      {"privileged false", L::Baseline,
       {{"spec", {{"containers", {{{"name", "a"}, {"securityContext", {{"privileged", false}}}}}}}}},
       ""},
      {"capabilities beyond baseline", L::Baseline,
       {{"spec",
         {{"containers",
           {{{"name", "a"},
             {"securityContext", {{"capabilities", {{"add", {"SYS_ADMIN", "NET_RAW", "CHOWN"}}}}}}}}}}}},
       "capabilities_baseline: non-default capabilities (container \"a\" must not include "
       "\"NET_RAW\", \"SYS_ADMIN\" in securityContext.capabilities.add)"},
      {"capabilities in baseline set", L::Baseline,
       {{"spec",
         {{"containers",
           {{{"name", "a"}, {"securityContext", {{"capabilities", {{"add", {"CHOWN", "KILL"}}}}}}}}}}}},
       ""},
      {"hostPath volume", L::Baseline,
       {{"spec", {{"volumes", {{{"name", "root"}, {"hostPath", {{"path", "/"}}}}}}}}},
       "hostPathVolumes: hostPath volumes (volume \"root\")"},
      {"emptyDir volume", L::Baseline,
       {{"spec", {{"volumes", {{{"name", "tmp"}, {"emptyDir", json::object()}}}}}}}, ""},
      {"host ports", L::Baseline,
       {{"spec",
         {{"containers",
           {{{"name", "a"}, {"ports", {{{"containerPort", 80}, {"hostPort", 8080}}, {{"containerPort", 443}, {"hostPort", 443}}}}}}}}}},
       "hostPorts: hostPort (container \"a\" uses hostPorts 443, 8080)"},
      {"container ports only", L::Baseline,
       {{"spec", {{"containers", {{{"name", "a"}, {"ports", {{{"containerPort", 80}}}}}}}}}}, ""},
      {"procMount Unmasked", L::Baseline,
       {{"spec", {{"containers", {{{"name", "a"}, {"securityContext", {{"procMount", "Unmasked"}}}}}}}}},
       "procMount: procMount (container \"a\" must not set securityContext.procMount to "
       "\"Unmasked\")"},
      {"procMount Default", L::Baseline,
       {{"spec", {{"containers", {{{"name", "a"}, {"securityContext", {{"procMount", "Default"}}}}}}}}},
       ""},
      {"seccomp Unconfined", L::Baseline,
       {{"spec", {{"securityContext", {{"seccompProfile", {{"type", "Unconfined"}}}}}}}},
       "seccompProfile_baseline: seccompProfile (pod must not set "
       "securityContext.seccompProfile.type to \"Unconfined\")"},
      {"seccomp Localhost", L::Baseline,
       {{"spec", {{"securityContext", {{"seccompProfile", {{"type", "Localhost"}}}}}}}}, ""},
      {"apparmor unconfined field", L::Baseline,
       {{"spec", {{"securityContext", {{"appArmorProfile", {{"type", "Unconfined"}}}}}}}},
       "appArmorProfile: forbidden AppArmor profile (pod must not set AppArmor profile type to "
       "\"Unconfined\")"},
      {"apparmor unconfined annotation", L::Baseline,
       {{"metadata",
         {{"annotations", {{"container.apparmor.security.beta.kubernetes.io/app", "unconfined"}}}}}},
       "appArmorProfile: forbidden AppArmor profile "
       "(container.apparmor.security.beta.kubernetes.io/app=\"unconfined\")"},
      {"apparmor runtime default", L::Baseline,
       {{"metadata",
         {{"annotations",
           {{"container.apparmor.security.beta.kubernetes.io/app", "runtime/default"}}}}},
        {"spec", {{"securityContext", {{"appArmorProfile", {{"type", "RuntimeDefault"}}}}}}}},
       ""},
      {"selinux type user role", L::Baseline,
       {{"spec",
         {{"securityContext",
           {{"seLinuxOptions", {{"type", "spc_t"}, {"user", "root"}, {"role", "sysadm_r"}}}}}}}},
       "seLinuxOptions: seLinuxOptions (pod set forbidden securityContext.seLinuxOptions: type "
       "\"spc_t\"; user may not be set; role may not be set)"},
      {"selinux container_t", L::Baseline,
       {{"spec", {{"securityContext", {{"seLinuxOptions", {{"type", "container_t"}, {"level", "s0:c1"}}}}}}}},
       ""},
      {"unsafe sysctl", L::Baseline,
       {{"spec",
         {{"securityContext",
           {{"sysctls", {{{"name", "kernel.msgmax"}, {"value", "1"}}, {{"name", "net.ipv4.tcp_syncookies"}, {"value", "1"}}}}}}}}},
       "sysctls: forbidden sysctls (kernel.msgmax)"},
      {"safe sysctl", L::Baseline,
       {{"spec", {{"securityContext", {{"sysctls", {{{"name", "net.ipv4.ip_local_port_range"}, {"value", "1024 65535"}}}}}}}}},
       ""},
      {"windows hostProcess", L::Baseline,
       {{"spec", {{"securityContext", {{"windowsOptions", {{"hostProcess", true}}}}}}}},
       "windowsHostProcess: hostProcess (pod must not set "
       "securityContext.windowsOptions.hostProcess=true)"},
      {"windows hostProcess false", L::Baseline,
       {{"spec", {{"securityContext", {{"windowsOptions", {{"hostProcess", false}}}}}}}}, ""},
      {"privileged level allows anything", L::Privileged,
       {{"spec",
         {{"hostNetwork", true},
          {"volumes", {{{"name", "root"}, {"hostPath", {{"path", "/"}}}}}},
          {"containers", {{{"name", "a"}, {"securityContext", {{"privileged", true}}}}}}}}},
       ""},
      // restricted
      {"restricted volume type", L::Restricted,
       {{"spec",
         {{"volumes",
           {{{"name", "root"}, {"hostPath", {{"path", "/"}}}},
            {{"name", "n"}, {"nfs", {{"server", "x"}, {"path", "/"}}}}}}}}},
       "restrictedVolumes: restricted volume types (volumes \"root\", \"n\" use restricted volume "
       "types \"hostPath\", \"nfs\")"},
      {"restricted allowed volume types", L::Restricted,
       {{"spec",
         {{"volumes",
           {{{"name", "a"}, {"emptyDir", json::object()}},
            {{"name", "b"}, {"secret", {{"secretName", "s"}}}},
            {{"name", "c"}, {"persistentVolumeClaim", {{"claimName", "c"}}}}}}}}},
       ""},
      {"nfs volume allowed at baseline", L::Baseline,
       {{"spec", {{"volumes", {{{"name", "n"}, {"nfs", {{"server", "x"}, {"path", "/"}}}}}}}}}, ""},
      {"allowPrivilegeEscalation unset", L::Restricted,
       {{"spec",
         {{"containers",
           {{{"name", "app"},
             {"securityContext", {{"allowPrivilegeEscalation", nullptr}, {"capabilities", {{"drop", {"ALL"}}}}}}}}}}}},
       "allowPrivilegeEscalation: allowPrivilegeEscalation != false (container \"app\" must set "
       "securityContext.allowPrivilegeEscalation=false)"},
      {"runAsNonRoot false", L::Restricted,
       {{"spec", {{"securityContext", {{"runAsNonRoot", false}}}}}},
       "runAsNonRoot: runAsNonRoot != true (pod must not set securityContext.runAsNonRoot=false)"},
      {"runAsNonRoot unset", L::Restricted,
       {{"spec", {{"securityContext", {{"runAsNonRoot", nullptr}}}}}},
       "runAsNonRoot: runAsNonRoot != true (pod or container \"app\" must set "
       "securityContext.runAsNonRoot=true)"},
      {"runAsNonRoot unset in a user namespace", L::Restricted,
       {{"spec", {{"hostUsers", false}, {"securityContext", {{"runAsNonRoot", nullptr}}}}}}, ""},
      {"runAsUser 0", L::Restricted,
       {{"spec", {{"securityContext", {{"runAsUser", 0}}}}}},
       "runAsUser: runAsUser=0 (pod must not set runAsUser=0)"},
      {"runAsUser 1000", L::Restricted,
       {{"spec", {{"securityContext", {{"runAsUser", 1000}}}}}}, ""},
      {"seccomp unset", L::Restricted,
       {{"spec", {{"securityContext", {{"seccompProfile", nullptr}}}}}},
       "seccompProfile_restricted: seccompProfile (pod or container \"app\" must set "
       "securityContext.seccompProfile.type to \"RuntimeDefault\" or \"Localhost\")"},
      {"seccomp Unconfined at restricted", L::Restricted,
       {{"spec", {{"securityContext", {{"seccompProfile", {{"type", "Unconfined"}}}}}}}},
       "seccompProfile_restricted: seccompProfile (pod must not set "
       "securityContext.seccompProfile.type to \"Unconfined\")"},
      {"capabilities not dropped", L::Restricted,
       {{"spec",
         {{"containers",
           {{{"name", "app"},
             {"securityContext",
              {{"allowPrivilegeEscalation", false},
               {"capabilities", {{"drop", nullptr}, {"add", {"NET_BIND_SERVICE", "CHOWN"}}}}}}}}}}}},
       "capabilities_restricted: unrestricted capabilities (container \"app\" must set "
       "securityContext.capabilities.drop=[\"ALL\"]; container \"app\" must not include "
       "\"CHOWN\" in securityContext.capabilities.add)"},
      {"NET_BIND_SERVICE addable", L::Restricted,
       {{"spec",
         {{"containers",
           {{{"name", "app"},
             {"securityContext",
              {{"allowPrivilegeEscalation", false},
               {"capabilities", {{"drop", {"ALL"}}, {"add", {"NET_BIND_SERVICE"}}}}}}}}}}}},
       ""},
  };
  for (const Case& c : cases) {
    json pod = restrictedPod();
    pod.merge_patch(c.patch);
    EXPECT_EQ(messages(checkPodSecurity(c.level, pod)), c.expect) << c.name;
  }
}

TEST(PodSecurityTest, FormatsUpstreamMessageInCheckOrder) {
  json pod = json::parse(R"({"metadata":{"name":"x"},"spec":{
    "hostNetwork": true, "hostPID": true,
    "containers": [{"name": "c", "image": "busybox", "securityContext": {"privileged": true}}],
    "volumes": [{"name": "root", "hostPath": {"path": "/"}}]}})");
  auto v = checkPodSecurity(L::Baseline, pod);
  EXPECT_EQ(formatPodSecurityViolations(L::Baseline, "latest", v),
            "violates PodSecurity \"baseline:latest\": host namespaces (hostNetwork=true, "
            "hostPID=true), hostPath volumes (volume \"root\"), privileged (container \"c\" must "
            "not set securityContext.privileged=true)");
  // Restricted replaces hostPathVolumes by restrictedVolumes, lists both levels' checks.
  auto r = checkPodSecurity(L::Restricted, pod);
  std::vector<std::string> ids;
  for (const auto& x : r) ids.push_back(x.check);
  EXPECT_EQ(ids, (std::vector<std::string>{"allowPrivilegeEscalation", "capabilities_restricted",
                                           "hostNamespaces", "privileged", "restrictedVolumes",
                                           "runAsNonRoot", "seccompProfile_restricted"}));
  EXPECT_EQ(formatPodSecurityViolations(L::Restricted, "", {}),
            "violates PodSecurity \"restricted:latest\": ");
}

TEST(PodSecurityTest, MultipleContainersArePluralAndInitContainersCount) {
  json pod = json::parse(R"({"spec":{
    "initContainers": [{"name": "init", "securityContext": {"privileged": true}}],
    "containers": [{"name": "a", "securityContext": {"privileged": true}}, {"name": "b"}]}})");
  EXPECT_EQ(messages(checkPodSecurity(L::Baseline, pod)),
            "privileged: privileged (containers \"init\", \"a\" must not set "
            "securityContext.privileged=true)");
}

TEST(PodSecurityTest, MalformedInputIsNotACrash) {
  for (const char* s : {"null", "[]", R"({"spec": 3})", R"({"spec": {"containers": [1, "x"]}})",
                        R"({"spec": {"volumes": "x", "securityContext": []}})"}) {
    json pod = json::parse(s);
    EXPECT_TRUE(checkPodSecurity(L::Baseline, pod).empty()) << s;
  }
}

TEST(PodSecurityTest, ParsesLevels) {
  EXPECT_EQ(*parsePodSecurityLevel("baseline"), L::Baseline);
  EXPECT_EQ(*parsePodSecurityLevel("restricted"), L::Restricted);
  EXPECT_EQ(*parsePodSecurityLevel("privileged"), L::Privileged);
  auto bad = parsePodSecurityLevel("strict");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().code, Code::Invalid);
  EXPECT_EQ(podSecurityLevelName(L::Restricted), "restricted");
}

}  // namespace
}  // namespace strait::kube

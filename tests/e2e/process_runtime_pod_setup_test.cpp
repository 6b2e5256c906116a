// What a process-runtime container sees, end to end as root with real kubectl: configMap,
// secret, projected, downwardAPI, emptyDir and hostPath volumes read with `kubectl exec --
// cat`, a ConfigMap update reaching the mounted volume (not the subPath file), read-only
// mounts, a missing ConfigMap keeping the Pod in ContainerCreating with a FailedMount event,
// the ServiceAccount token volume and the kubernetes Service reaching the API server with
// curl, resourceFieldRef and fieldRef variables, dnsPolicy None with dnsConfig, hostAliases,
// postStart and preStop hooks (the preStop hook runs before SIGTERM), and
// `kubectl logs --timestamps / --since-time`.
//
// Skipped (with the reason) when the process runtime cannot run here
// (processRuntimeUnavailable(): not root, no usable `ip netns`, nft, dnsmasq or curl).

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <nlohmann/json.hpp>
#include <regex>

#include "e2e/cluster_fixture.h"

namespace strait::e2e {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using json = nlohmann::json;

class ProcessRuntimePodSetupTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (std::string why = processRuntimeUnavailable(); !why.empty()) GTEST_SKIP() << why;
    home_ = std::make_unique<TempDir>("strait-podsetup-home");
    std::string err = cluster_.start("podsetup-" + std::to_string(::getpid()), 90s,
                                     {"--runtime", "process", "--nodes", "1",
                                      "--node-monitor-grace-period", "40s"});
    ASSERT_EQ(err, "") << err;
  }

  CommandResult kubectl(const std::vector<std::string>& args, const std::string& in = {}) {
    std::vector<std::string> argv = {"/usr/bin/kubectl"};
    argv.insert(argv.end(), args.begin(), args.end());
    return runCommand(argv,
                      {{"KUBECONFIG", cluster_.kubeconfig()},
                       {"KUBECACHEDIR", home_->file("cache-" + std::to_string(++calls_))},
                       {"HOME", home_->path()}},
                      60s, in);
  }
  CommandResult must(const std::vector<std::string>& args, const std::string& in = {}) {
    CommandResult r = kubectl(args, in);
    std::string cmd;
    for (const auto& a : args) cmd += " " + a;
    EXPECT_EQ(r.exitCode, 0) << "kubectl" << cmd << "\n" << r.describe();
    return r;
  }
  // stdout of `kubectl exec pod -- args...`.
  std::string exec(const std::string& pod, std::vector<std::string> args) {
    args.insert(args.begin(), {"exec", pod, "--"});
    return kubectl(args).out;
  }
  void waitRunning(const std::string& pod) {
    bool ok = waitFor(
        [&] {
          return kubectl({"get", "pod", pod, "-o", "jsonpath={.status.phase}"}).out == "Running";
        },
        90s, 250ms);
    ASSERT_TRUE(ok) << kubectl({"describe", "pod", pod}).out << "\n" << cluster_.serverLog();
  }
  std::string events(const std::string& pod) {
    return kubectl({"get", "events", "--field-selector", "involvedObject.name=" + pod, "-o",
                    "jsonpath={range .items[*]}{.reason}: {.message}{\"\\n\"}{end}"})
        .out;
  }

  Minicluster cluster_;
  std::unique_ptr<TempDir> home_;
  int calls_ = 0;
};

json shellContainer(const std::string& name, const std::string& script) {
  return {{"name", name}, {"image", "debian:12"}, {"command", {"sh", "-c", script}}};
}

TEST_F(ProcessRuntimePodSetupTest, VolumesEnvAndTheApiServerFromInsideAPod) {
  must({"create", "configmap", "cfg", "--from-literal=greeting=hello", "--from-literal=color=blue"});
  must({"create", "secret", "generic", "sec", "--from-literal=password=s3cret"});
  json main = shellContainer("main", "echo started; exec sleep infinity");
  main["resources"] = {{"limits", {{"cpu", "500m"}, {"memory", "64Mi"}}}, {"requests", {{"cpu", "250m"}}}};
  main["env"] = json::array(
      {{{"name", "CPU_MILLI"},
        {"valueFrom", {{"resourceFieldRef", {{"resource", "limits.cpu"}, {"divisor", "1m"}}}}}},
       {{"name", "MEM_MI"},
        {"valueFrom", {{"resourceFieldRef", {{"resource", "limits.memory"}, {"divisor", "1Mi"}}}}}},
       {{"name", "REQ_CPU"}, {"valueFrom", {{"resourceFieldRef", {{"resource", "requests.cpu"}, {"divisor", "1m"}}}}}},
       {{"name", "NODE"}, {"valueFrom", {{"fieldRef", {{"fieldPath", "spec.nodeName"}}}}}},
       {{"name", "SA"}, {"valueFrom", {{"fieldRef", {{"fieldPath", "spec.serviceAccountName"}}}}}},
       {{"name", "APP"}, {"valueFrom", {{"fieldRef", {{"fieldPath", "metadata.labels['app']"}}}}}},
       {{"name", "GREETING"}, {"valueFrom", {{"configMapKeyRef", {{"name", "cfg"}, {"key", "greeting"}}}}}},
       {{"name", "SAID"}, {"value", "$(GREETING)-world"}}});
  main["volumeMounts"] = json::array(
      {{{"name", "cfg"}, {"mountPath", "/etc/cfg"}},
       {{"name", "cfg"}, {"mountPath", "/etc/greeting"}, {"subPath", "greeting"}},
       {{"name", "sec"}, {"mountPath", "/etc/sec"}},
       {{"name", "podinfo"}, {"mountPath", "/etc/podinfo"}},
       {{"name", "proj"}, {"mountPath", "/etc/proj"}},
       {{"name", "scratch"}, {"mountPath", "/scratch"}},
       {{"name", "scratch"}, {"mountPath", "/scratch-ro"}, {"readOnly", true}},
       {{"name", "mem"}, {"mountPath", "/mem"}}});
  json other = shellContainer("other", "exec sleep infinity");
  other["env"] = json::array(
      {{{"name", "CPU_NO_LIMIT"}, {"valueFrom", {{"resourceFieldRef", {{"resource", "limits.cpu"}}}}}}});
  other["volumeMounts"] = json::array({{{"name", "scratch"}, {"mountPath", "/shared"}}});
  json pod = {
      {"apiVersion", "v1"},
      {"kind", "Pod"},
      {"metadata", {{"name", "vol"}, {"labels", {{"app", "vol"}, {"tier", "web"}}}}},
      {"spec",
       {{"terminationGracePeriodSeconds", 2},
        {"containers", json::array({main, other})},
        {"volumes",
         json::array(
             {{{"name", "cfg"}, {"configMap", {{"name", "cfg"}}}},
              {{"name", "sec"},
               {"secret",
                {{"secretName", "sec"},
                 {"items", json::array({{{"key", "password"}, {"path", "pw"}, {"mode", 0400}}})}}}},
              {{"name", "podinfo"},
               {"downwardAPI",
                {{"items", json::array({{{"path", "labels"}, {"fieldRef", {{"fieldPath", "metadata.labels"}}}},
                                        {{"path", "mem"},
                                         {"resourceFieldRef",
                                          {{"containerName", "main"}, {"resource", "limits.memory"}, {"divisor", "1Mi"}}}}})}}}},
              {{"name", "proj"},
               {"projected",
                {{"sources",
                  json::array({{{"configMap", {{"name", "cfg"}, {"items", json::array({{{"key", "color"}, {"path", "c"}}})}}}},
                               {{"secret", {{"name", "sec"}}}},
                               {{"downwardAPI", {{"items", json::array({{{"path", "name"}, {"fieldRef", {{"fieldPath", "metadata.name"}}}}})}}}}})}}}},
              {{"name", "scratch"}, {"emptyDir", json::object()}},
              {{"name", "mem"}, {"emptyDir", {{"medium", "Memory"}}}}})}}}};
  must({"apply", "-f", "-"}, pod.dump());
  ASSERT_NO_FATAL_FAILURE(waitRunning("vol"));

  // Volumes.
  EXPECT_EQ(exec("vol", {"cat", "/etc/cfg/greeting"}), "hello");
  EXPECT_EQ(exec("vol", {"cat", "/etc/greeting"}), "hello");
  EXPECT_EQ(exec("vol", {"cat", "/etc/sec/pw"}), "s3cret");
  EXPECT_EQ(exec("vol", {"stat", "-L", "-c", "%a", "/etc/sec/pw"}), "400\n");
  EXPECT_EQ(exec("vol", {"cat", "/etc/podinfo/labels"}), "app=\"vol\"\ntier=\"web\"");
  EXPECT_EQ(exec("vol", {"cat", "/etc/podinfo/mem"}), "64");
  EXPECT_EQ(exec("vol", {"cat", "/etc/proj/c"}), "blue");
  EXPECT_EQ(exec("vol", {"cat", "/etc/proj/password"}), "s3cret");
  EXPECT_EQ(exec("vol", {"cat", "/etc/proj/name"}), "vol");
  // emptyDir: shared by the containers, read-only where the mount says so, tmpfs for Memory.
  EXPECT_EQ(kubectl({"exec", "vol", "-c", "main", "--", "sh", "-c", "echo hi > /scratch/f"}).exitCode, 0);
  EXPECT_EQ(kubectl({"exec", "vol", "-c", "other", "--", "cat", "/shared/f"}).out, "hi\n");
  EXPECT_NE(kubectl({"exec", "vol", "--", "touch", "/scratch-ro/g"}).exitCode, 0);
  EXPECT_NE(kubectl({"exec", "vol", "--", "touch", "/etc/cfg/new"}).exitCode, 0);
  EXPECT_THAT(exec("vol", {"sh", "-c", "grep ' /mem ' /proc/self/mounts"}), HasSubstr("tmpfs"));
  // The host's file system does not see the Pod's mounts.
  EXPECT_FALSE(std::filesystem::exists("/etc/cfg/greeting"));

  // A ConfigMap update reaches the mounted volume within seconds; the subPath file stays.
  must({"patch", "configmap", "cfg", "-p", R"({"data":{"greeting":"bonjour"}})"});
  EXPECT_TRUE(waitFor([&] { return exec("vol", {"cat", "/etc/cfg/greeting"}) == "bonjour"; }, 20s, 500ms))
      << exec("vol", {"ls", "-la", "/etc/cfg"});
  EXPECT_EQ(exec("vol", {"cat", "/etc/greeting"}), "hello");

  // Environment.
  EXPECT_EQ(exec("vol", {"printenv", "CPU_MILLI"}), "500\n");
  EXPECT_EQ(exec("vol", {"printenv", "MEM_MI"}), "64\n");
  EXPECT_EQ(exec("vol", {"printenv", "REQ_CPU"}), "250\n");
  EXPECT_EQ(exec("vol", {"printenv", "NODE"}), "node-0\n");
  EXPECT_EQ(exec("vol", {"printenv", "SA"}), "default\n");
  EXPECT_EQ(exec("vol", {"printenv", "APP"}), "vol\n");
  EXPECT_EQ(exec("vol", {"printenv", "SAID"}), "hello-world\n");
  json node = json::parse(must({"get", "node", "node-0", "-o", "json"}).out);
  std::string cpu = node["status"]["allocatable"]["cpu"];
  EXPECT_EQ(kubectl({"exec", "vol", "-c", "other", "--", "printenv", "CPU_NO_LIMIT"}).out, cpu + "\n");

  // The ServiceAccount token volume and the kubernetes Service.
  const std::string sa = "/var/run/secrets/kubernetes.io/serviceaccount";
  EXPECT_EQ(exec("vol", {"cat", sa + "/namespace"}), "default");
  EXPECT_THAT(exec("vol", {"cat", sa + "/ca.crt"}), HasSubstr("BEGIN CERTIFICATE"));
  EXPECT_TRUE(std::regex_match(exec("vol", {"cat", sa + "/token"}),
                               std::regex(R"([A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+)")));
  EXPECT_EQ(exec("vol", {"printenv", "KUBERNETES_SERVICE_HOST"}), "10.96.0.1\n");
  EXPECT_EQ(exec("vol", {"printenv", "KUBERNETES_SERVICE_PORT"}), "443\n");
  CommandResult version = kubectl({"exec", "vol", "--", "curl", "-sS", "--max-time", "10", "--cacert",
                                   sa + "/ca.crt", "https://kubernetes.default.svc/version"});
  EXPECT_THAT(version.out, HasSubstr("gitVersion")) << version.describe() << "\n"
                                                    << kubectl({"get", "endpointslices", "-A"}).out;
  CommandResult byEnv = kubectl({"exec", "vol", "--", "sh", "-c",
                                 "curl -sS --max-time 10 --cacert " + sa +
                                     "/ca.crt https://$KUBERNETES_SERVICE_HOST:$KUBERNETES_SERVICE_PORT/version"});
  EXPECT_THAT(byEnv.out, HasSubstr("gitVersion")) << byEnv.describe();
  // The token authenticates the Pod's ServiceAccount: refused (403) until RBAC grants it the
  // list, then served; without a token the API server says 401.
  CommandResult forbidden = kubectl({"exec", "vol", "--", "sh", "-c",
                                     "curl -sS --max-time 10 --cacert " + sa + "/ca.crt -H \"Authorization: Bearer $(cat " +
                                         sa + "/token)\" https://kubernetes.default.svc/api/v1/namespaces/default/pods"});
  EXPECT_THAT(forbidden.out, HasSubstr("pods is forbidden: User \\\"system:serviceaccount:default:default\\\" "
                                       "cannot list resource \\\"pods\\\" in API group \\\"\\\" in the namespace "
                                       "\\\"default\\\""))
      << forbidden.describe();
  must({"create", "rolebinding", "default-view", "--clusterrole=view", "--serviceaccount=default:default"});
  CommandResult listed = kubectl({"exec", "vol", "--", "sh", "-c",
                                  "curl -sS --max-time 10 --cacert " + sa + "/ca.crt -H \"Authorization: Bearer $(cat " +
                                      sa + "/token)\" https://kubernetes.default.svc/api/v1/namespaces/default/pods"});
  EXPECT_THAT(listed.out, HasSubstr("\"kind\":\"PodList\"")) << listed.describe();
  CommandResult anonymous = kubectl({"exec", "vol", "--", "curl", "-sS", "--max-time", "10", "-o", "/dev/null", "-w",
                                     "%{http_code}", "--cacert", sa + "/ca.crt",
                                     "https://kubernetes.default.svc/api/v1/namespaces/default/pods"});
  EXPECT_EQ(anonymous.out, "401");
}

TEST_F(ProcessRuntimePodSetupTest, MissingConfigMapKeepsThePodCreatingUntilItExists) {
  json c = shellContainer("main", "exec sleep infinity");
  c["volumeMounts"] = json::array({{{"name", "cfg"}, {"mountPath", "/etc/late"}}});
  json pod = {{"apiVersion", "v1"},
              {"kind", "Pod"},
              {"metadata", {{"name", "late"}}},
              {"spec",
               {{"terminationGracePeriodSeconds", 1},
                {"containers", json::array({c})},
                {"volumes", json::array({{{"name", "cfg"}, {"configMap", {{"name", "absent"}}}}})}}}};
  must({"apply", "-f", "-"}, pod.dump());
  EXPECT_TRUE(waitFor([&] { return events("late").find("FailedMount") != std::string::npos; }, 30s, 500ms))
      << events("late");
  EXPECT_THAT(events("late"), HasSubstr("configmap \"absent\" not found"));
  EXPECT_EQ(kubectl({"get", "pod", "late", "-o", "jsonpath={.status.containerStatuses[0].state.waiting.reason}"}).out,
            "ContainerCreating");
  must({"create", "configmap", "absent", "--from-literal=k=v"});
  ASSERT_NO_FATAL_FAILURE(waitRunning("late"));
  EXPECT_EQ(exec("late", {"cat", "/etc/late/k"}), "v");
}

TEST_F(ProcessRuntimePodSetupTest, DnsPolicyNoneHostAliasesHooksAndLogTimestamps) {
  TempDir out("strait-podsetup-out");
  ::chmod(out.path().c_str(), 0777);
  json c = shellContainer("main",
                          "trap 'echo term >> /out/order; exit 0' TERM; echo line-one; "
                          "while true; do sleep 0.2; done");
  c["volumeMounts"] = json::array({{{"name", "out"}, {"mountPath", "/out"}},
                                   {{"name", "scratch"}, {"mountPath", "/scratch"}}});
  c["lifecycle"] = {
      {"postStart", {{"exec", {{"command", {"sh", "-c", "echo post > /scratch/poststart"}}}}}},
      {"preStop", {{"exec", {{"command", {"sh", "-c", "echo prestop >> /out/order; sleep 1"}}}}}}};
  json pod = {{"apiVersion", "v1"},
              {"kind", "Pod"},
              {"metadata", {{"name", "dns"}}},
              {"spec",
               {{"terminationGracePeriodSeconds", 10},
                {"dnsPolicy", "None"},
                {"dnsConfig",
                 {{"nameservers", {"192.0.2.53"}},
                  {"searches", {"corp.example"}},
                  {"options", json::array({{{"name", "ndots"}, {"value", "2"}}})}}},
                {"hostAliases", json::array({{{"ip", "192.0.2.7"}, {"hostnames", {"printer.local"}}}})},
                {"containers", json::array({c})},
                {"volumes", json::array({{{"name", "out"}, {"hostPath", {{"path", out.path()}, {"type", "Directory"}}}},
                                         {{"name", "scratch"}, {"emptyDir", json::object()}}})}}}};
  must({"apply", "-f", "-"}, pod.dump());
  ASSERT_NO_FATAL_FAILURE(waitRunning("dns"));
  EXPECT_EQ(exec("dns", {"cat", "/etc/resolv.conf"}),
            "nameserver 192.0.2.53\nsearch corp.example\noptions ndots:2\n");
  EXPECT_THAT(exec("dns", {"cat", "/etc/hosts"}), HasSubstr("192.0.2.7\tprinter.local\n"));
  EXPECT_TRUE(waitFor([&] { return exec("dns", {"cat", "/scratch/poststart"}) == "post\n"; }, 10s, 250ms));

  // Logs with a timestamp per line (RFC 3339), and --since-time after the first line.
  std::string stamped = must({"logs", "dns", "--timestamps"}).out;
  EXPECT_TRUE(std::regex_search(stamped, std::regex(R"(^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d+Z line-one\n)")))
      << stamped;
  EXPECT_EQ(must({"logs", "dns"}).out, "line-one\n");
  EXPECT_EQ(must({"logs", "dns", "--since-time", "2100-01-01T00:00:00Z"}).out, "");
  EXPECT_EQ(must({"logs", "dns", "--since", "1h"}).out, "line-one\n");

  // preStop runs before SIGTERM; deletion waits for both.
  must({"delete", "pod", "dns", "--wait=true", "--timeout=60s"});
  EXPECT_EQ(readFile(out.file("order")), "prestop\nterm\n");
}

TEST_F(ProcessRuntimePodSetupTest, FailingPostStartHookKillsTheContainer) {
  json c = shellContainer("main", "exec sleep infinity");
  c["lifecycle"] = {{"postStart", {{"exec", {{"command", {"sh", "-c", "exit 3"}}}}}}};
  json pod = {{"apiVersion", "v1"},
              {"kind", "Pod"},
              {"metadata", {{"name", "badhook"}}},
              {"spec", {{"terminationGracePeriodSeconds", 1}, {"containers", json::array({c})}}}};
  must({"apply", "-f", "-"}, pod.dump());
  EXPECT_TRUE(waitFor([&] { return events("badhook").find("FailedPostStartHook") != std::string::npos; },
                      30s, 500ms))
      << events("badhook");
  EXPECT_TRUE(waitFor(
      [&] {
        std::string n = kubectl({"get", "pod", "badhook", "-o", "jsonpath={.status.containerStatuses[0].restartCount}"}).out;
        return !n.empty() && n != "0";
      },
      30s, 500ms));
}

TEST_F(ProcessRuntimePodSetupTest, TokenRequestIssuesTokensTheApiServerAccepts) {
  std::string token = must({"create", "token", "default", "--duration=15m"}).out;
  while (!token.empty() && token.back() == '\n') token.pop_back();
  ASSERT_FALSE(token.empty());
  std::string server = cluster_.server();
  must({"create", "rolebinding", "default-view", "--clusterrole=view", "--serviceaccount=default:default"});
  CommandResult listed = runCommand({"curl", "-sk", "--max-time", "10", "-H", "Authorization: Bearer " + token,
                                     server + "/api/v1/namespaces/default/serviceaccounts"});
  EXPECT_THAT(listed.out, HasSubstr("\"kind\":\"ServiceAccountList\"")) << listed.describe();
  std::string other = must({"create", "token", "default", "--audience=vault"}).out;
  while (!other.empty() && other.back() == '\n') other.pop_back();
  CommandResult refused = runCommand({"curl", "-sk", "--max-time", "10", "-o", "/dev/null", "-w", "%{http_code}",
                                      "-H", "Authorization: Bearer " + other, server + "/api/v1/namespaces"});
  EXPECT_EQ(refused.out, "401");
  CommandResult missing = kubectl({"create", "token", "nobody"});
  EXPECT_NE(missing.exitCode, 0);
  EXPECT_THAT(missing.err, HasSubstr("serviceaccounts \"nobody\" not found"));
  CommandResult tooShort = kubectl({"create", "token", "default", "--duration=1m"});
  EXPECT_NE(tooShort.exitCode, 0);
}

// agnhost netexec's /shell as upstream's image answers it (needs no root: plain processes).
TEST(AgnhostNetexecTest, ShellRunsTheCommandAndAnswersItsOutputAsJson) {
  if (straitBinary().empty() || ::access("/usr/bin/curl", X_OK) != 0) GTEST_SKIP() << "no strait or curl";
  TempDir dir("strait-agnhost");
  BackgroundProcess agnhost;
  const std::string port = std::to_string(20000 + ::getpid() % 20000);
  std::string error;
  ASSERT_TRUE(agnhost.start({straitBinary(), "agnhost", "netexec", "--http-port=" + port}, {},
                            dir.file("out"), dir.file("err"), &error))
      << error;
  std::string url = "http://127.0.0.1:" + port;
  ASSERT_TRUE(waitFor([&] { return runCommand({"curl", "-s", url + "/healthz"}).out == "ok"; }, 10s, 100ms));
  CommandResult ok = runCommand({"curl", "-s", "-w", " %{http_code}", url + "/shell?cmd=echo%20hi%3B%20echo%20err%201%3E%262"});
  EXPECT_EQ(ok.out, R"({"output":"hi\nerr\n"} 200)");
  CommandResult bad = runCommand({"curl", "-s", "-w", " %{http_code}", url + "/shell?shellCommand=exit%203"});
  EXPECT_EQ(bad.out, R"({"error":"exit status 3","output":""} 417)");
  agnhost.stop();
}

}  // namespace
}  // namespace strait::e2e

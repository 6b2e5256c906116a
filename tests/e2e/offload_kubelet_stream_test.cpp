// `kubectl attach` and `kubectl port-forward` on a Pod offloaded through the virtual node,
// with real processes: two `strait minicluster` (the provider with `--runtime process`, so
// the remote Pod really runs), a `strait agent` on each, `strait peer`, `strait offload`, and
// real kubectl against the CONSUMER cluster. The path:
//   consumer API server -> the virtual kubelet API (in the consumer agent) -> RemoteKubelet
//   Attach / PortForward over the peering's mutual TLS -> the provider agent -> the provider
//   API server's pods/attach / pods/portforward -> the provider kubelet -> the process.
// A port nothing listens on in the remote Pod is reported by kubectl with the provider
// kubelet's message. And a consumer cannot port-forward into a Pod that is not its own: a forged PortForward
// call with the consumer's own credential, naming a Pod of the provider's, is NotFound.
// Skipped when not root (the process runtime needs it).

#include <gtest/gtest.h>
#include <unistd.h>

#include <nlohmann/json.hpp>
#include <regex>
#include <sstream>

#include "e2e/offload_fixture.h"
#include "peering/encoding.h"
#include "peering/kubelet_transport.h"
#include "peering/names.h"
#include "peering/transport.h"

namespace strait::e2e {
namespace {

using json = nlohmann::json;
using namespace std::chrono_literals;

const char* kAgnhost = "registry.k8s.io/e2e-test-images/agnhost:2.52";

class OffloadKubeletStreamTest : public ProcessOffloadSuite {
 protected:
  // A Pod of the consumer's namespace demo bound to the virtual node.
  static json offloaded(const std::string& name, json container) {
    container["resources"] = {{"requests", {{"cpu", "100m"}, {"memory", "32Mi"}}}};
    return {{"apiVersion", "v1"},
            {"kind", "Pod"},
            {"metadata", {{"name", name}, {"namespace", "demo"}}},
            {"spec",
             {{"nodeSelector", {{"kubernetes.io/hostname", kVirtualNode}}},
              {"terminationGracePeriodSeconds", 1},
              {"containers", json::array({container})}}}};
  }
  static json shell(const std::string& script) {
    return {{"name", "main"}, {"image", "debian:12"}, {"command", {"sh", "-c", script}}};
  }
  bool runningAtHome(const std::string& pod) {
    return kubectl(*home_, {"get", "pod", pod, "-n", "demo", "-o", "jsonpath={.status.phase}"})
               .out == "Running";
  }
  // kubectl against home with a time limit (attach runs until the container ends).
  CommandResult kubectlFor(std::chrono::milliseconds timeout, const std::vector<std::string>& args,
                           const std::string& in = "") {
    std::vector<std::string> argv = {"/usr/bin/kubectl", "--kubeconfig", home_->kubeconfig()};
    argv.insert(argv.end(), args.begin(), args.end());
    return runCommand(argv,
                      {{"KUBECACHEDIR", dir_->file("kcache-t" + std::to_string(++timed_))},
                       {"HOME", dir_->path()}},
                      timeout, in);
  }
  // The consumer's own RemoteKubelet client, from the credential its agent holds.
  std::shared_ptr<peering::KubeletClient> consumerKubelet() {
    std::string providerId = kubectl(*cloud_, {"get", "configmap", "-n", "strait-system",
                                               "strait-agent", "-o",
                                               "jsonpath={.data.clusterID}"})
                                 .out;
    json secret = getJson(*home_, {"get", "secret", "-n", "strait-system",
                                   peering::credentialSecretName(providerId)});
    if (!secret.is_object()) return nullptr;
    auto rpc = peering::makeRpcClient(credentialClientConfig(decodeSecretData(secret), providerId));
    if (!rpc.ok()) return nullptr;
    rpc_ = std::move(*rpc);
    return rpc_->kubelet();
  }

  int timed_ = 0;
  std::unique_ptr<peering::RpcClient> rpc_;
};

TEST_F(OffloadKubeletStreamTest, AttachThroughTheVirtualNodeShowsOutputAndDeliversStdin) {
  json ticker = offloaded("ticker", shell("i=0; while true; do i=$((i+1)); echo \"tick $i\"; "
                                          "sleep 0.2; done"));
  ASSERT_EQ(kubectl(*home_, {"apply", "-f", "-"}, ticker.dump()).exitCode, 0);
  int before = 0;
  ASSERT_TRUE(waitFor(
      [&] {
        auto seen = tickNumbers(kubectl(*home_, {"logs", "-n", "demo", "ticker"}).out);
        before = seen.empty() ? 0 : seen.back();
        return runningAtHome("ticker") && before >= 5;
      },
      90s, 500ms))
      << diagnostics();
  CommandResult a = kubectlFor(4s, {"attach", "-n", "demo", "ticker"});
  EXPECT_TRUE(a.timedOut) << a.describe();
  std::vector<int> attached = tickNumbers(a.out);
  ASSERT_GE(attached.size(), 3u) << a.describe() << diagnostics();
  EXPECT_GT(attached.front(), before) << "attach replayed old output:\n" << a.out;

  json cat = offloaded("cat", shell("echo ready; while read l; do echo \"got: $l\"; done; "
                                    "echo \"input closed\""));
  cat["spec"]["restartPolicy"] = "Never";
  cat["spec"]["containers"][0]["stdin"] = true;
  cat["spec"]["containers"][0]["stdinOnce"] = true;
  ASSERT_EQ(kubectl(*home_, {"apply", "-f", "-"}, cat.dump()).exitCode, 0);
  ASSERT_TRUE(waitFor(
      [&] {
        return runningAtHome("cat") &&
               kubectl(*home_, {"logs", "-n", "demo", "cat"}).out == "ready\n";
      },
      90s, 500ms))
      << diagnostics();
  // The container's input ends with the session's (stdinOnce): it exits, and so does attach.
  CommandResult in = kubectlFor(30s, {"attach", "-i", "-n", "demo", "cat"}, "hello\nworld\n");
  EXPECT_EQ(in.exitCode, 0) << in.describe() << diagnostics();
  EXPECT_NE(in.out.find("got: hello\ngot: world\ninput closed\n"), std::string::npos)
      << in.describe() << diagnostics();
  EXPECT_EQ(in.out.find("ready"), std::string::npos) << in.out;
  EXPECT_EQ(kubectl(*home_, {"logs", "-n", "demo", "cat"}).out,
            "ready\ngot: hello\ngot: world\ninput closed\n");
}

TEST_F(OffloadKubeletStreamTest, PortForwardThroughTheVirtualNodeReachesTheRemotePod) {
  json web = offloaded("web", {{"name", "agnhost"},
                               {"image", kAgnhost},
                               {"args", {"netexec", "--http-port=8080"}},
                               {"ports", {{{"containerPort", 8080}}}}});
  ASSERT_EQ(kubectl(*home_, {"apply", "-f", "-"}, web.dump()).exitCode, 0);
  ASSERT_TRUE(waitFor([&] { return runningAtHome("web"); }, 90s, 500ms)) << diagnostics();
  BackgroundProcess pf;
  std::string error;
  ASSERT_TRUE(pf.start({"/usr/bin/kubectl", "--kubeconfig", home_->kubeconfig(),
                        "port-forward", "-n", "demo", "pod/web", ":8080"},
                       {{"KUBECACHEDIR", dir_->file("kcache-pf")}, {"HOME", dir_->path()}},
                       dir_->file("pf.out"), dir_->file("pf.err"), &error))
      << error;
  std::string port;
  ASSERT_TRUE(waitFor(
      [&] {
        std::smatch m;
        std::string text = pf.stdoutText();
        static const std::regex fwd(R"(Forwarding from 127\.0\.0\.1:(\d+) -> 8080)");
        if (!std::regex_search(text, m, fwd)) return false;
        port = m[1];
        return true;
      },
      30s, 100ms))
      << pf.stdoutText() << pf.stderrText();
  // Twice: each curl is a new forwarded connection.
  for (int i = 0; i < 2; ++i) {
    CommandResult curl = runCommand(
        {"curl", "-sS", "--max-time", "10", "http://127.0.0.1:" + port + "/hostname"});
    EXPECT_EQ(curl.exitCode, 0) << curl.describe() << pf.stderrText() << diagnostics();
    EXPECT_EQ(curl.out, "web") << curl.describe();
  }
  // The remote Pod's hostname is its name in the provider: the same, by the reflection.
  json remote = getJson(*cloud_, {"get", "pod", "web", "-n", remoteNamespace("demo")});
  EXPECT_TRUE(remote.is_object()) << diagnostics();
  // Each connection was a PortForward call served by the provider agent.
  EXPECT_NE(cloudAgent_->logs().find("event=remote_port_forward consumer=" + consumerId() +
                                     " pod=" + remoteNamespace("demo") + "/web port=8080"),
            std::string::npos)
      << agentLogs();
  pf.stop();

  // Nothing listens on 9999 in the remote Pod: the provider kubelet's refusal travels back and
  // kubectl prints it for that connection.
  BackgroundProcess bad;
  ASSERT_TRUE(bad.start({"/usr/bin/kubectl", "--kubeconfig", home_->kubeconfig(),
                         "port-forward", "-n", "demo", "pod/web", ":9999"},
                        {{"KUBECACHEDIR", dir_->file("kcache-pf2")}, {"HOME", dir_->path()}},
                        dir_->file("pf2.out"), dir_->file("pf2.err"), &error))
      << error;
  ASSERT_TRUE(waitFor(
      [&] {
        std::smatch m;
        std::string text = bad.stdoutText();
        static const std::regex fwd(R"(Forwarding from 127\.0\.0\.1:(\d+) -> 9999)");
        if (!std::regex_search(text, m, fwd)) return false;
        port = m[1];
        return true;
      },
      30s, 100ms))
      << bad.stdoutText() << bad.stderrText();
  CommandResult refused = runCommand(
      {"curl", "-sS", "--max-time", "10", "http://127.0.0.1:" + port + "/hostname"});
  EXPECT_NE(refused.exitCode, 0) << refused.describe();
  EXPECT_TRUE(waitFor(
      [&] { return bad.stderrText().find("failed to connect to localhost:9999") != std::string::npos; },
      10s, 100ms))
      << bad.stderrText() << diagnostics();
  bad.stop();
}

TEST_F(OffloadKubeletStreamTest, AConsumerCannotPortForwardIntoAPodThatIsNotItsOwn) {
  // A Pod of the provider's own users, in its default namespace.
  json victim = {{"apiVersion", "v1"},
                 {"kind", "Pod"},
                 {"metadata", {{"name", "victim"}, {"namespace", "default"}}},
                 {"spec",
                  {{"terminationGracePeriodSeconds", 1},
                   {"containers", json::array({{{"name", "agnhost"},
                                                {"image", kAgnhost},
                                                {"args", {"netexec", "--http-port=8080"}}}})}}}};
  ASSERT_EQ(kubectl(*cloud_, {"apply", "-f", "-"}, victim.dump()).exitCode, 0);
  ASSERT_TRUE(waitFor(
      [&] {
        return kubectl(*cloud_, {"get", "pod", "victim", "-o", "jsonpath={.status.phase}"}).out ==
               "Running";
      },
      90s, 500ms));
  auto kubelet = consumerKubelet();
  ASSERT_TRUE(kubelet) << diagnostics();
  // Forged: the provider's namespace as is, and the consumer's demo namespace with a Pod
  // name that exists only in the provider's default namespace.
  for (const std::string& ns : {std::string("default"), std::string("demo")}) {
    auto call = kubelet->portForward();
    ASSERT_TRUE(call.ok());
    v1::PortForwardFrame start;
    start.mutable_start()->set_namespace_(ns);
    start.mutable_start()->set_pod("victim");
    start.mutable_start()->set_port(8080);
    (*call)->write(start);
    (*call)->writesDone();
    v1::PortForwardFrame f;
    EXPECT_FALSE((*call)->read(&f)) << "the provider opened " << ns << "/victim";
    kube::Status end = (*call)->finish();
    ASSERT_FALSE(end.ok()) << ns;
    EXPECT_EQ(end.error().code, kube::Code::NotFound) << end.error().message;
    EXPECT_NE(end.error().message.find("pods \"victim\" not found"), std::string::npos)
        << end.error().message;
  }
}

}  // namespace
}  // namespace strait::e2e

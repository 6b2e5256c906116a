// The machine's real kubectl (1.32, picked by /usr/bin/kubectl from the server's /version)
// against a minicluster process: one TEST per kubectl acceptance item.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <sstream>

#include "e2e/cluster_fixture.h"

// tests/CMakeLists globs only tests/e2e/*_test.cpp into e2e_tests; the fixture's
// implementation is compiled here, once, until the glob also picks up support files.

namespace strait::e2e {
namespace {

using ::testing::_;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::UnorderedElementsAre;
using json = nlohmann::json;

std::vector<std::string> splitLines(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    if (!line.empty()) {
      lines.push_back(line);
    }
  }
  return lines;
}

std::vector<std::string> fields(const std::string& line) {
  std::vector<std::string> out;
  std::istringstream in(line);
  for (std::string f; in >> f;) {
    out.push_back(f);
  }
  return out;
}

// The whitespace-separated fields of the row whose column `col` is `value`.
std::vector<std::string> rowWhere(const std::string& table, size_t col, const std::string& value) {
  for (const auto& line : splitLines(table)) {
    auto f = fields(line);
    if (f.size() > col && f[col] == value) {
      return f;
    }
  }
  return {};
}

// Output of `-o name` as a list ("pod/a", ...).
std::vector<std::string> names(const CommandResult& r) { return splitLines(r.out); }

json parseJson(const std::string& text) {
  json j = json::parse(text, nullptr, /*allow_exceptions=*/false);
  return j;
}

class KubectlTest : public ClusterTest {
 public:
  // These tests make their own Node objects with no kubelet behind them: a scheduler would
  // bind pods there and graceful deletes would then wait for a kubelet that never comes.
  static void SetUpTestSuite() { SetUpTestSuiteWithArgs({"--no-scheduler"}); }

 protected:
  // kubectl ARGS that must succeed; fails the test (non-fatally) otherwise.
  CommandResult mustKubectl(const std::vector<std::string>& args,
                            const std::string& stdinData = {}) {
    CommandResult r = kubectl(args, stdinData);
    EXPECT_EQ(r.exitCode, 0) << "kubectl " << joined(args) << "\n" << r.describe();
    return r;
  }
  static std::string joined(const std::vector<std::string>& args) {
    std::string s;
    for (const auto& a : args) {
      s += (s.empty() ? "" : " ") + a;
    }
    return s;
  }
  // Setup helpers create objects with `kubectl create -f` (JSON through the dynamic
  // client); TypedCreateCommands covers `kubectl create namespace|configmap|...`.
  void createNamespace(const std::string& ns) {
    ASSERT_EQ(mustKubectl({"create", "-f", "-"},
                          R"({"apiVersion":"v1","kind":"Namespace","metadata":{"name":")" + ns +
                              R"("}})")
                  .exitCode,
              0);
  }
  void createConfigMap(const std::string& ns, const std::string& name) {
    ASSERT_EQ(mustKubectl({"create", "-f", "-"},
                          R"({"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":")" + name +
                              R"(","namespace":")" + ns + R"("},"data":{"k":"v"}})")
                  .exitCode,
              0);
  }
  void createPod(const std::string& ns, const std::string& name,
                 const std::string& labels = "{}") {
    std::string manifest = R"({"apiVersion":"v1","kind":"Pod","metadata":{"name":")" + name +
                           R"(","namespace":")" + ns + R"(","labels":)" + labels +
                           R"(},"spec":{"containers":[{"name":"c","image":"busybox:1.36"}]}})";
    ASSERT_EQ(mustKubectl({"create", "-f", "-"}, manifest).exitCode, 0);
  }
  // Sets status.phase through the status subresource.
  void setPodPhase(const std::string& ns, const std::string& name, const std::string& phase) {
    ASSERT_EQ(mustKubectl({"patch", "pod", name, "-n", ns, "--subresource=status", "--type=merge",
                           "-p", R"({"status":{"phase":")" + phase + R"("}})"})
                  .exitCode,
              0);
  }
  std::string nodeManifest(const std::string& name) {
    return R"(
apiVersion: v1
kind: Node
metadata:
  name: )" + name + R"(
  labels:
    kubernetes.io/hostname: )" + name + R"(
    node-role.kubernetes.io/worker: ""
status:
  conditions:
  - type: Ready
    status: "True"
    reason: KubeletReady
    message: kubelet is posting ready status
    lastHeartbeatTime: "2025-01-01T00:00:00Z"
    lastTransitionTime: "2025-01-01T00:00:00Z"
  addresses:
  - type: InternalIP
    address: 10.0.0.7
  - type: Hostname
    address: )" + name + R"(
  capacity:
    cpu: "4"
    memory: 8Gi
    pods: "110"
  allocatable:
    cpu: "4"
    memory: 8Gi
    pods: "110"
  nodeInfo:
    architecture: amd64
    bootID: b
    containerRuntimeVersion: containerd://1.7.0
    kernelVersion: 6.1.0
    kubeProxyVersion: v1.32.0
    kubeletVersion: v1.32.0
    machineID: m
    operatingSystem: linux
    osImage: Debian GNU/Linux 12
    systemUUID: u
)";
  }
};

TEST_F(KubectlTest, GetNodesPrintsUpstreamColumns) {
  ASSERT_EQ(mustKubectl({"apply", "-f", "-"}, nodeManifest("node-columns")).exitCode, 0);
  CommandResult r = mustKubectl({"get", "nodes"});
  auto lines = splitLines(r.out);
  ASSERT_FALSE(lines.empty()) << r.describe();
  EXPECT_THAT(fields(lines[0]), ElementsAre("NAME", "STATUS", "ROLES", "AGE", "VERSION"))
      << r.describe();
  auto row = rowWhere(r.out, 0, "node-columns");
  ASSERT_EQ(row.size(), 5u) << r.describe();
  EXPECT_EQ(row[1], "Ready");
  EXPECT_EQ(row[2], "worker");
  EXPECT_EQ(row[4], "v1.32.0");

  // -o wide adds the priority-1 columns.
  r = mustKubectl({"get", "nodes", "-o", "wide"});
  lines = splitLines(r.out);
  ASSERT_FALSE(lines.empty()) << r.describe();
  EXPECT_THAT(lines[0], HasSubstr("INTERNAL-IP")) << r.describe();
  EXPECT_THAT(rowWhere(r.out, 0, "node-columns"), ::testing::Contains("10.0.0.7"))
      << r.describe();
}

TEST_F(KubectlTest, GetPodsAllNamespacesWidePrintsUpstreamColumns) {
  createNamespace("wide-pods");
  createPod("wide-pods", "wide-pod");
  CommandResult r = mustKubectl({"get", "pods", "-A", "-o", "wide"});
  auto lines = splitLines(r.out);
  ASSERT_FALSE(lines.empty()) << r.describe();
  EXPECT_THAT(fields(lines[0]),
              ElementsAre("NAMESPACE", "NAME", "READY", "STATUS", "RESTARTS", "AGE", "IP", "NODE",
                          "NOMINATED", "NODE", "READINESS", "GATES"))
      << r.describe();
  auto row = rowWhere(r.out, 1, "wide-pod");
  ASSERT_GE(row.size(), 5u) << r.describe();
  EXPECT_EQ(row[0], "wide-pods") << "NAMESPACE column\n" << r.describe();
  EXPECT_EQ(row[2], "0/1") << "READY column\n" << r.describe();
  EXPECT_EQ(row[3], "Pending") << "STATUS column\n" << r.describe();
  EXPECT_EQ(row[4], "0") << "RESTARTS column\n" << r.describe();
}

TEST_F(KubectlTest, ApplyDeploymentTwiceKeepsTheOtherContainer) {
  auto deployment = [](const std::string& webImage) {
    return R"(
apiVersion: apps/v1
kind: Deployment
metadata:
  name: two-containers
  namespace: default
  labels:
    app: two
spec:
  replicas: 1
  selector:
    matchLabels:
      app: two
  template:
    metadata:
      labels:
        app: two
    spec:
      containers:
      - name: web
        image: )" + webImage + R"(
        ports:
        - containerPort: 80
      - name: sidecar
        image: busybox:1.36
        command: ["sleep", "infinity"]
)";
  };
  CommandResult r = mustKubectl({"apply", "-f", "-"}, deployment("nginx:1.25"));
  EXPECT_THAT(r.out, HasSubstr("deployment.apps/two-containers created")) << r.describe();
  r = mustKubectl({"apply", "-f", "-"}, deployment("nginx:1.26"));
  EXPECT_THAT(r.out, HasSubstr("deployment.apps/two-containers configured")) << r.describe();

  r = mustKubectl({"get", "deploy", "two-containers", "-o", "json"});
  json d = parseJson(r.out);
  ASSERT_TRUE(d.is_object()) << r.describe();
  const json& containers = d["spec"]["template"]["spec"]["containers"];
  ASSERT_TRUE(containers.is_array()) << d.dump(2);
  ASSERT_EQ(containers.size(), 2u) << "re-apply must merge containers by name\n" << d.dump(2);
  EXPECT_EQ(containers[0].value("name", ""), "web");
  EXPECT_EQ(containers[0].value("image", ""), "nginx:1.26");
  EXPECT_EQ(containers[1].value("name", ""), "sidecar");
  EXPECT_EQ(containers[1].value("image", ""), "busybox:1.36");
  EXPECT_EQ(containers[1]["command"], json({"sleep", "infinity"})) << d.dump(2);
  EXPECT_TRUE(d["metadata"]["annotations"].contains(
      "kubectl.kubernetes.io/last-applied-configuration"))
      << d.dump(2);
}

TEST_F(KubectlTest, ServerSideApplyConfigMapTwice) {
  auto configMap = [](const std::string& data) {
    return R"({"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"ssa-cm","namespace":"default"},"data":)" +
           data + "}";
  };
  CommandResult r =
      mustKubectl({"apply", "--server-side", "-f", "-"}, configMap(R"({"a":"1","b":"2"})"));
  EXPECT_THAT(r.out, HasSubstr("configmap/ssa-cm serverside-applied")) << r.describe();
  r = mustKubectl({"get", "configmap", "ssa-cm", "-o", "json"});
  EXPECT_EQ(parseJson(r.out)["data"], json({{"a", "1"}, {"b", "2"}})) << r.describe();

  r = mustKubectl({"apply", "--server-side", "-f", "-"}, configMap(R"({"a":"3","c":"4"})"));
  EXPECT_THAT(r.out, HasSubstr("configmap/ssa-cm serverside-applied")) << r.describe();
  r = mustKubectl({"get", "configmap", "ssa-cm", "-o", "json"});
  json cm = parseJson(r.out);
  EXPECT_EQ(cm["data"].value("a", ""), "3") << r.describe();
  EXPECT_EQ(cm["data"].value("c", ""), "4") << r.describe();
  // The same manager no longer applies "b": upstream removes the field it owned.
  EXPECT_FALSE(cm["data"].contains("b"))
      << "field dropped from the applied config must be removed\n"
      << r.describe();
}

TEST_F(KubectlTest, DeleteReturnsOnceTheObjectIsGone) {
  createPod("default", "doomed-pod");
  CommandResult r = mustKubectl({"delete", "pod", "doomed-pod"});
  EXPECT_THAT(r.out, HasSubstr("pod \"doomed-pod\" deleted")) << r.describe();
  r = kubectl({"get", "pod", "doomed-pod"});
  EXPECT_NE(r.exitCode, 0) << r.describe();
  EXPECT_THAT(r.err, HasSubstr(R"(Error from server (NotFound): pods "doomed-pod" not found)"))
      << r.describe();

  createConfigMap("default", "doomed-cm");
  r = mustKubectl({"delete", "configmap", "doomed-cm"});
  EXPECT_THAT(r.out, HasSubstr("configmap \"doomed-cm\" deleted")) << r.describe();
  r = kubectl({"get", "configmap", "doomed-cm"});
  EXPECT_NE(r.exitCode, 0) << r.describe();
  EXPECT_THAT(r.err,
              HasSubstr(R"(Error from server (NotFound): configmaps "doomed-cm" not found)"))
      << r.describe();
}

TEST_F(KubectlTest, WatchPrintsChangesMadeByAnotherClient) {
  createNamespace("watched");
  createConfigMap("watched", "before-watch");
  auto watcher = kubectlBackground({"get", "configmaps", "-n", "watched", "-w"});
  // The initial list shows the existing object: the watch is established after it.
  bool listed = waitFor(
      [&] { return watcher->stdoutText().find("before-watch") != std::string::npos; }, 30s);
  ASSERT_TRUE(listed) << "stdout:\n"
                      << watcher->stdoutText() << "\nstderr:\n"
                      << watcher->stderrText();

  createConfigMap("watched", "made-elsewhere");
  bool seen = waitFor(
      [&] { return watcher->stdoutText().find("made-elsewhere") != std::string::npos; }, 30s);
  EXPECT_TRUE(seen) << "watch did not print the new configmap\nstdout:\n"
                    << watcher->stdoutText() << "\nstderr:\n"
                    << watcher->stderrText();
  EXPECT_TRUE(watcher->running()) << "kubectl -w exited early\n" << watcher->stderrText();
  // The watch prints table rows, with the DATA column.
  auto row = rowWhere(watcher->stdoutText(), 0, "made-elsewhere");
  ASSERT_EQ(row.size(), 3u) << watcher->stdoutText();
  EXPECT_EQ(row[1], "1");
  watcher->stop();
}

TEST_F(KubectlTest, DescribeNodePrintsSections) {
  ASSERT_EQ(mustKubectl({"apply", "-f", "-"}, nodeManifest("node-described")).exitCode, 0);
  CommandResult r = mustKubectl({"describe", "node", "node-described"});
  EXPECT_THAT(r.out, ::testing::ContainsRegex("Name: +node-described")) << r.describe();
  EXPECT_THAT(r.out, ::testing::ContainsRegex("Labels: +kubernetes.io/hostname=node-described"))
      << r.describe();
  EXPECT_THAT(r.out, HasSubstr("Conditions:")) << r.describe();
  EXPECT_THAT(r.out, ::testing::ContainsRegex("Ready +True")) << r.describe();
  EXPECT_THAT(r.out, HasSubstr("InternalIP:  10.0.0.7")) << r.describe();
  EXPECT_THAT(r.out, HasSubstr("Capacity:")) << r.describe();
  EXPECT_THAT(r.err, ::testing::Not(HasSubstr("Error"))) << r.describe();
}

TEST_F(KubectlTest, CustomResourceDefinitionsNamespacedAndClusterScoped) {
  const std::string widgetsCrd = R"(
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: widgets.example.com
spec:
  group: example.com
  scope: Namespaced
  names:
    plural: widgets
    singular: widget
    kind: Widget
    shortNames: [wd]
  versions:
  - name: v1
    served: true
    storage: true
    subresources:
      status: {}
    additionalPrinterColumns:
    - name: Color
      type: string
      jsonPath: .spec.color
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            properties:
              color: {type: string}
          status:
            type: object
            properties:
              phase: {type: string}
)";
  const std::string gadgetsCrd = R"(
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: gadgets.example.com
spec:
  group: example.com
  scope: Cluster
  names:
    plural: gadgets
    singular: gadget
    kind: Gadget
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        x-kubernetes-preserve-unknown-fields: true
)";
  mustKubectl({"apply", "-f", "-"}, widgetsCrd);
  mustKubectl({"apply", "-f", "-"}, gadgetsCrd);
  CommandResult r = mustKubectl({"wait", "--for", "condition=Established", "--timeout=30s",
                                 "crd/widgets.example.com", "crd/gadgets.example.com"});

  r = mustKubectl({"apply", "-f", "-"}, R"(
apiVersion: example.com/v1
kind: Widget
metadata:
  name: w1
  namespace: default
spec:
  color: blue
)");
  EXPECT_THAT(r.out, HasSubstr("widget.example.com/w1 created")) << r.describe();

  r = mustKubectl({"get", "widgets"});
  auto lines = splitLines(r.out);
  ASSERT_FALSE(lines.empty()) << r.describe();
  // With additionalPrinterColumns the table has exactly those after NAME (no implicit AGE).
  EXPECT_THAT(fields(lines[0]), ElementsAre("NAME", "COLOR")) << r.describe();
  auto row = rowWhere(r.out, 0, "w1");
  ASSERT_EQ(row.size(), 2u) << r.describe();
  EXPECT_EQ(row[1], "blue");

  r = mustKubectl({"get", "widgets", "-o", "json"});
  json list = parseJson(r.out);
  ASSERT_TRUE(list["items"].is_array()) << r.describe();
  ASSERT_EQ(list["items"].size(), 1u) << r.describe();
  EXPECT_EQ(list["items"][0]["kind"], "Widget");
  EXPECT_EQ(list["items"][0]["metadata"]["name"], "w1");
  EXPECT_EQ(list["items"][0]["metadata"]["namespace"], "default");
  EXPECT_EQ(list["items"][0]["spec"]["color"], "blue");

  // Status subresource: status goes through /status only.
  mustKubectl({"patch", "widget", "w1", "--subresource=status", "--type=merge", "-p",
               R"({"status":{"phase":"Polished"}})"});
  mustKubectl({"patch", "widget", "w1", "--type=merge", "-p",
               R"({"spec":{"color":"red"},"status":{"phase":"Ignored"}})"});
  r = mustKubectl({"get", "wd", "w1", "-o", "json"});
  json w = parseJson(r.out);
  EXPECT_EQ(w["spec"]["color"], "red") << r.describe();
  EXPECT_EQ(w["status"]["phase"], "Polished")
      << "a write to the main resource must keep the old status\n"
      << r.describe();

  r = mustKubectl({"apply", "-f", "-"}, R"(
apiVersion: example.com/v1
kind: Gadget
metadata:
  name: g1
size: 3
)");
  EXPECT_THAT(r.out, HasSubstr("gadget.example.com/g1 created")) << r.describe();
  r = mustKubectl({"get", "gadgets"});
  EXPECT_EQ(rowWhere(r.out, 0, "g1").size(), 2u) << r.describe();
  r = mustKubectl({"get", "gadget", "g1", "-o", "json"});
  json g = parseJson(r.out);
  EXPECT_EQ(g["size"], 3) << r.describe();
  EXPECT_FALSE(g["metadata"].contains("namespace")) << "cluster-scoped\n" << r.describe();
}

TEST_F(KubectlTest, LabelAndFieldSelectors) {
  createNamespace("selectors");
  createPod("selectors", "a", R"({"tier":"web"})");
  createPod("selectors", "b", R"({"tier":"db"})");
  createPod("selectors", "c", R"({"tier":"web","env":"prod"})");
  setPodPhase("selectors", "c", "Running");

  auto get = [&](const std::vector<std::string>& selector) {
    std::vector<std::string> args{"get", "pods", "-n", "selectors", "-o", "name"};
    args.insert(args.end(), selector.begin(), selector.end());
    return names(mustKubectl(args));
  };
  EXPECT_THAT(get({"-l", "tier=web"}), UnorderedElementsAre("pod/a", "pod/c"));
  EXPECT_THAT(get({"-l", "tier!=web"}), UnorderedElementsAre("pod/b"));
  EXPECT_THAT(get({"-l", "tier in (web)"}), UnorderedElementsAre("pod/a", "pod/c"));
  EXPECT_THAT(get({"-l", "tier notin (web),!env"}), UnorderedElementsAre("pod/b"));
  EXPECT_THAT(get({"-l", "tier=web,env"}), UnorderedElementsAre("pod/c"));
  EXPECT_THAT(get({"--field-selector", "metadata.name=b"}), UnorderedElementsAre("pod/b"));
  EXPECT_THAT(get({"--field-selector", "status.phase!=Running"}),
              UnorderedElementsAre("pod/a", "pod/b"));
  EXPECT_THAT(get({"--field-selector", "status.phase=Running", "-l", "tier=web"}),
              UnorderedElementsAre("pod/c"));
}

TEST_F(KubectlTest, MissingObjectIsNotFound) {
  CommandResult r = kubectl({"get", "pod", "nope"});
  EXPECT_NE(r.exitCode, 0) << r.describe();
  EXPECT_THAT(r.err, HasSubstr(R"(Error from server (NotFound): pods "nope" not found)"))
      << r.describe();
}

// A status patch carrying the Pod's uid, as the kubelet (and the consumer agent) writes it:
// applied when the uid is the Pod's, refused 422 (metadata.uid immutable) when it names
// another incarnation, in both patch formats.
TEST_F(KubectlTest, PodStatusPatchWithTheUidAsPrecondition) {
  createPod("default", "uidpatch", R"({"app":"uidpatch"})");
  CommandResult r = mustKubectl({"get", "pod", "uidpatch", "-o", "jsonpath={.metadata.uid}"});
  const std::string uid = r.out;
  ASSERT_FALSE(uid.empty());
  mustKubectl({"patch", "pod", "uidpatch", "--subresource=status", "--type=merge", "-p",
               R"({"metadata":{"uid":")" + uid + R"("},"status":{"phase":"Running"}})"});
  const std::string other = "0b0b0b0b-0000-4000-8000-000000000000";
  for (const char* type : {"merge", "strategic"}) {
    r = kubectl({"patch", "pod", "uidpatch", "--subresource=status", std::string("--type=") + type,
                 "-p",
                 R"({"metadata":{"uid":")" + other + R"("},"status":{"phase":"Failed"}})"});
    EXPECT_NE(r.exitCode, 0) << r.describe();
    EXPECT_THAT(r.err, HasSubstr(R"(The Pod "uidpatch" is invalid: metadata.uid: Invalid value: ")" +
                                 other + R"(": field is immutable)"))
        << r.describe();
  }
  r = mustKubectl({"get", "pod", "uidpatch", "-o", "jsonpath={.metadata.uid} {.status.phase}"});
  EXPECT_EQ(r.out, uid + " Running");
}

TEST_F(KubectlTest, NamespaceLifecycle) {
  CommandResult r = mustKubectl({"get", "ns"});
  auto lines = splitLines(r.out);
  ASSERT_FALSE(lines.empty()) << r.describe();
  EXPECT_THAT(fields(lines[0]), ElementsAre("NAME", "STATUS", "AGE")) << r.describe();
  auto row = rowWhere(r.out, 0, "default");
  ASSERT_EQ(row.size(), 3u) << r.describe();
  EXPECT_EQ(row[1], "Active");

  // `kubectl create ns` itself is covered by TypedCreateCommands.
  createNamespace("short-lived");
  createConfigMap("short-lived", "inside");
  createPod("short-lived", "inside-pod");
  r = mustKubectl({"get", "ns", "short-lived"});
  EXPECT_THAT(rowWhere(r.out, 0, "short-lived"), ElementsAre("short-lived", "Active", _))
      << r.describe();

  // kubectl delete waits until the namespace is gone (termination finished).
  r = mustKubectl({"delete", "ns", "short-lived"});
  EXPECT_THAT(r.out, HasSubstr("namespace \"short-lived\" deleted")) << r.describe();
  r = kubectl({"get", "ns", "short-lived"});
  EXPECT_NE(r.exitCode, 0) << r.describe();
  EXPECT_THAT(r.err,
              HasSubstr(R"(Error from server (NotFound): namespaces "short-lived" not found)"))
      << r.describe();
  r = kubectl({"get", "configmap", "inside", "-n", "short-lived"});
  EXPECT_NE(r.exitCode, 0) << r.describe();
  EXPECT_THAT(r.err, HasSubstr("NotFound")) << r.describe();
  r = mustKubectl({"get", "pods", "-A", "-o", "name", "--field-selector",
                   "metadata.namespace=short-lived"});
  EXPECT_TRUE(splitLines(r.out).empty()) << "pods of a deleted namespace remain\n" << r.describe();
}

// kubectl's typed create commands send the body as application/vnd.kubernetes.protobuf.
TEST_F(KubectlTest, TypedCreateCommands) {
  mustKubectl({"create", "namespace", "typed"});
  mustKubectl({"create", "configmap", "typed-cm", "-n", "typed", "--from-literal=k=v"});
  mustKubectl({"create", "secret", "generic", "typed-secret", "-n", "typed",
               "--from-literal=password=hunter2"});
  mustKubectl({"create", "deployment", "typed-deploy", "-n", "typed", "--image=nginx:1.25"});
  CommandResult r = mustKubectl({"get", "configmap", "typed-cm", "-n", "typed", "-o", "json"});
  EXPECT_EQ(parseJson(r.out)["data"], json({{"k", "v"}})) << r.describe();
  r = mustKubectl({"get", "secret", "typed-secret", "-n", "typed", "-o", "json"});
  EXPECT_EQ(parseJson(r.out)["data"]["password"], "aHVudGVyMg==") << r.describe();
  r = mustKubectl({"get", "deployment", "typed-deploy", "-n", "typed", "-o", "json"});
  EXPECT_EQ(parseJson(r.out)["spec"]["template"]["spec"]["containers"][0]["image"], "nginx:1.25")
      << r.describe();
}

TEST_F(KubectlTest, ApiResourcesListsBuiltinKinds) {
  CommandResult r = mustKubectl({"api-resources"});
  std::vector<std::string> resources;
  for (const auto& line : splitLines(r.out)) {
    auto f = fields(line);
    if (!f.empty()) {
      resources.push_back(f[0]);
    }
  }
  for (const char* want : {"pods", "deployments", "leases", "endpointslices",
                           "certificatesigningrequests", "customresourcedefinitions",
                           "namespaces", "nodes", "configmaps"}) {
    EXPECT_THAT(resources, ::testing::Contains(want)) << r.describe();
  }
}

}  // namespace
}  // namespace strait::e2e

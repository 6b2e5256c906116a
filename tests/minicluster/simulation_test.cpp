#include "minicluster/simulation.h"

#include <gtest/gtest.h>

#include "minicluster/exec_commands.h"
#include "minicluster/kubelet_api.h"
#include "minicluster/kubelet_status.h"

namespace strait::minicluster {
namespace {

TEST(NodePools, ParsesPoolsWithDefaultsLabelsAndTaints) {
  auto pools = parseNodePools(R"(
pools:
- name: gpu
  count: 2
  capacity: {cpu: 8, memory: 32Gi, nvidia.com/gpu: "4"}
  labels: {accelerator: a100}
  taints: [{key: gpu, value: "true", effect: NoSchedule}]
- name: small
  count: 3
)",
                              "pools.yaml");
  ASSERT_TRUE(pools.ok()) << pools.error().message;
  ASSERT_EQ(pools->size(), 2u);
  const NodePool& gpu = (*pools)[0];
  EXPECT_EQ(gpu.namePrefix, "gpu");
  EXPECT_EQ(gpu.count, 2);
  EXPECT_EQ(gpu.capacity.at("cpu").toString(), "8");
  EXPECT_EQ(gpu.capacity.at("nvidia.com/gpu").toString(), "4");
  EXPECT_EQ(gpu.capacity.at("pods").toString(), "110");
  EXPECT_EQ(gpu.labels.at("accelerator"), "a100");
  EXPECT_EQ(gpu.taints[0]["effect"], "NoSchedule");
  EXPECT_EQ((*pools)[1].capacity.at("memory").toString(), "8Gi");
}

TEST(NodePools, ErrorsNameFileIndexAndField) {
  auto bad = parseNodePools("pools:\n- name: a\n  count: 1\n  capacity: {cpu: lots}\n", "p.yaml");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message.find("p.yaml: pools[0].capacity.cpu"), std::string::npos);
  auto taint = parseNodePools("pools:\n- name: a\n  count: 1\n  taints: [{key: k, effect: Never}]\n", "p.yaml");
  ASSERT_FALSE(taint.ok());
  EXPECT_NE(taint.error().message.find("taints[0].effect"), std::string::npos);
  EXPECT_FALSE(parseNodePools("nodes: []", "p.yaml").ok());
  EXPECT_FALSE(parseNodePools("pools:\n- count: 1\n", "p.yaml").ok());
  EXPECT_FALSE(parseNodePools("pools:\n- name: a\n  count: -1\n", "p.yaml").ok());
}

TEST(PodCidr, SplitsIntoNodeRangesAndRefusesTooMany) {
  auto r = splitPodCidr("10.244.0.0/16", 24, 3);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(*r, (std::vector<std::string>{"10.244.0.0/24", "10.244.1.0/24", "10.244.2.0/24"}));
  auto big = splitPodCidr("10.0.0.0/8", 24, 1000);
  ASSERT_TRUE(big.ok());
  EXPECT_EQ(big->back(), "10.3.231.0/24");
  auto tooMany = splitPodCidr("10.244.0.0/16", 24, 257);
  ASSERT_FALSE(tooMany.ok());
  EXPECT_NE(tooMany.error().message.find("holds 256 /24 node ranges"), std::string::npos);
  EXPECT_FALSE(splitPodCidr("10.244.0.0", 24, 1).ok());
  EXPECT_FALSE(splitPodCidr("300.1.1.1/16", 24, 1).ok());
  EXPECT_EQ(splitPodCidr("10.244.7.9/16", 24, 1)->front(), "10.244.0.0/24");
}

TEST(Durations, GoStyle) {
  EXPECT_EQ(parseDuration("500ms")->count(), 500);
  EXPECT_EQ(parseDuration("2s")->count(), 2000);
  EXPECT_EQ(parseDuration("1m30s")->count(), 90000);
  EXPECT_EQ(parseDuration("1.5s")->count(), 1500);
  EXPECT_FALSE(parseDuration("soon").ok());
  EXPECT_FALSE(parseDuration("5").ok());
  EXPECT_FALSE(parseDuration("").ok());
}

TEST(ExecCommands, BuiltinsShellAndExitCodes) {
  ExecContext ctx;
  ctx.hostname = "web-0";
  ctx.env = {{"A", "1"}, {"B", "two words"}};
  ctx.readFile = [](const std::string& p) -> std::optional<std::string> {
    if (p == "/etc/cfg/k") return std::string("v\n");
    return std::nullopt;
  };
  EXPECT_EQ(runCommand({"echo", "hi"}, ctx, "").out, "hi\n");
  EXPECT_EQ(runCommand({"hostname"}, ctx, "").out, "web-0\n");
  EXPECT_EQ(runCommand({"env"}, ctx, "").out, "A=1\nB=two words\n");
  EXPECT_EQ(runCommand({"cat", "/etc/cfg/k"}, ctx, "").out, "v\n");
  auto missing = runCommand({"cat", "/nope"}, ctx, "");
  EXPECT_EQ(missing.exitCode, 1);
  EXPECT_NE(missing.err.find("No such file"), std::string::npos);
  EXPECT_EQ(runCommand({"cat"}, ctx, "in").out, "in");
  EXPECT_EQ(runCommand({"sh", "-c", "exit 3"}, ctx, "").exitCode, 3);
  EXPECT_EQ(runCommand({"sh", "-c", "echo \"$B\" ${A}; false || echo fallback"}, ctx, "").out,
            "two words 1\nfallback\n");
  EXPECT_EQ(runCommand({"sh", "-c", "true && echo yes; false && echo no"}, ctx, "").out, "yes\n");
  EXPECT_EQ(runCommand({"sh", "-c", "echo piped | cat"}, ctx, "").out, "piped\n");
  auto unknown = runCommand({"frobnicate"}, ctx, "");
  EXPECT_EQ(unknown.exitCode, 127);
  EXPECT_NE(unknown.err.find("frobnicate"), std::string::npos);
  EXPECT_EQ(runCommand({"sh", "-c", "frobnicate"}, ctx, "").exitCode, 127);
  EXPECT_EQ(runCommand({"sh", "-c", "echo 'unterminated"}, ctx, "").exitCode, 2);
  EXPECT_EQ(runCommand({"sh", "-c", "echo > /tmp/x"}, ctx, "").exitCode, 2);
  EXPECT_TRUE(commandReadsStdin({"cat"}));
  EXPECT_FALSE(commandReadsStdin({"cat", "/etc/cfg/k"}));
  EXPECT_TRUE(commandReadsStdin({"sh", "-c", "cat | cat"}));
  EXPECT_FALSE(commandReadsStdin({"sh", "-c", "echo concat"}));
}

TEST(KubeletStatus, ImagesAndPodStatus) {
  EXPECT_EQ(normalizeImage("nginx"), "docker.io/library/nginx:latest");
  EXPECT_EQ(normalizeImage("bitnami/redis:7"), "docker.io/bitnami/redis:7");
  EXPECT_EQ(normalizeImage("ghcr.io/a/b"), "ghcr.io/a/b:latest");
  EXPECT_EQ(imageIdFor("nginx").rfind("docker.io/library/nginx@sha256:", 0), 0u);
  SimPod p;
  p.uid = "u";
  p.podIP = "10.244.0.2";
  p.hostIP = "127.0.0.1";
  SimContainer c;
  c.name = "c";
  c.image = "nginx";
  p.containers.push_back(c);
  auto now = std::chrono::system_clock::now();
  json old = {{"qosClass", "BestEffort"},
              {"conditions", json::array({{{"type", "PodScheduled"}, {"status", "True"}}})}};
  json creating = buildPodStatus(p, old, now);
  EXPECT_EQ(creating["phase"], "Pending");
  EXPECT_EQ(creating["containerStatuses"][0]["state"]["waiting"]["reason"], "ContainerCreating");
  EXPECT_FALSE(creating.contains("podIP"));
  EXPECT_EQ(creating["qosClass"], "BestEffort");
  p.stage = PodStage::Running;
  p.containers[0].startedAt = now;
  json running = buildPodStatus(p, creating, now);
  EXPECT_EQ(running["phase"], "Running");
  EXPECT_EQ(running["podIP"], "10.244.0.2");
  EXPECT_TRUE(running["containerStatuses"][0]["ready"].get<bool>());
  int scheduled = 0;
  for (const auto& cond : running["conditions"]) {
    if (cond["type"] == "Ready") EXPECT_EQ(cond["status"], "True");
    if (cond["type"] == "PodScheduled") ++scheduled;
  }
  EXPECT_EQ(scheduled, 1);
  p.stage = PodStage::Finished;
  p.containers[0].finishedAt = now;
  p.containers[0].exitCode = 2;
  EXPECT_EQ(buildPodStatus(p, running, now)["phase"], "Failed");
}

TEST(KubeletLogs, TailSinceTimestampsAndLimit) {
  PodRuntime pod;
  pod.ns = "default";
  pod.name = "web";
  pod.node = "node-0";
  ContainerRuntime c;
  c.name = "c";
  c.image = "nginx";
  auto start = std::chrono::system_clock::time_point(std::chrono::seconds(1700000000));
  c.startedAt = start;
  auto lines = syntheticLogLines(pod, c, false, start + std::chrono::milliseconds(3500));
  ASSERT_EQ(lines.size(), 4u);  // start + heartbeats 1..3
  EXPECT_EQ(lines[3].second, "[strait] default/web/c heartbeat 3");
  LogOptions o;
  o.tailLines = 2;
  EXPECT_EQ(renderLogLines(lines, o),
            "[strait] default/web/c heartbeat 2\n[strait] default/web/c heartbeat 3\n");
  o.tailLines.reset();
  o.since = start + std::chrono::seconds(3);
  o.timestamps = true;
  EXPECT_EQ(renderLogLines(lines, o), "2023-11-14T22:13:23.000000000Z [strait] default/web/c heartbeat 3\n");
  o = LogOptions{};
  o.limitBytes = 5;
  EXPECT_EQ(renderLogLines(lines, o), "[stra");
  EXPECT_TRUE(syntheticLogLines(pod, c, true, start).empty());
}

}  // namespace
}  // namespace strait::minicluster

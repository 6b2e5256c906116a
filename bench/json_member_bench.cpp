// jsonMember (minicluster/json_scan.cpp, rapidjson's SAX reader) against the hand-written
// scanner it replaced and against parsing the whole object with nlohmann::json, in one process
// over the same 10,000 stored-form Pod JSONs (compact, as the store keeps them).
//
//   json_member_bench [--pods N] [--rounds N]
//
// For each lookup the API server makes (metadata then its resourceVersion: Rest's preseal
// and the garbage collector; spec: the scheduler's digest and the informer's node index;
// apiVersion + kind + metadata: the informer's object head; status, the last member: the
// longest scan) it prints ns per Pod for both scanners, the median of the rounds, and the
// ratio new / old and new / whole parse. The two scanners' spans are compared for every Pod:
// any difference exits 1. A program that prints figures, not a test.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "minicluster/json_scan.h"

namespace {

using nlohmann::json;

// The scanner jsonMember had before it used rapidjson, kept here as the measure only.
namespace handwritten {

bool isSpace(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

size_t skipSpace(std::string_view s, size_t i) {
  while (i < s.size() && isSpace(s[i])) ++i;
  return i;
}

size_t skipString(std::string_view s, size_t i) {
  for (++i; i < s.size(); ++i) {
    if (s[i] == '\\') {
      ++i;
    } else if (s[i] == '"') {
      return i + 1;
    }
  }
  return std::string_view::npos;
}

size_t skipValue(std::string_view s, size_t i) {
  if (i >= s.size()) return std::string_view::npos;
  if (s[i] == '"') return skipString(s, i);
  if (s[i] == '{' || s[i] == '[') {
    int depth = 0;
    while (i < s.size()) {
      char c = s[i];
      if (c == '"') {
        i = skipString(s, i);
        if (i == std::string_view::npos) return i;
        continue;
      }
      if (c == '{' || c == '[') {
        ++depth;
      } else if (c == '}' || c == ']') {
        if (--depth == 0) return i + 1;
      }
      ++i;
    }
    return std::string_view::npos;
  }
  size_t start = i;
  while (i < s.size() && s[i] != ',' && s[i] != '}' && s[i] != ']' && !isSpace(s[i])) ++i;
  return i == start ? std::string_view::npos : i;
}

std::optional<std::string_view> jsonMember(std::string_view text, std::string_view key) {
  constexpr size_t npos = std::string_view::npos;
  size_t i = skipSpace(text, 0);
  if (i >= text.size() || text[i] != '{') return std::nullopt;
  i = skipSpace(text, i + 1);
  if (i < text.size() && text[i] == '}') return std::nullopt;
  while (i < text.size()) {
    if (text[i] != '"') return std::nullopt;
    size_t keyEnd = skipString(text, i);
    if (keyEnd == npos) return std::nullopt;
    std::string_view k = text.substr(i + 1, keyEnd - i - 2);
    i = skipSpace(text, keyEnd);
    if (i >= text.size() || text[i] != ':') return std::nullopt;
    i = skipSpace(text, i + 1);
    size_t valueEnd = skipValue(text, i);
    if (valueEnd == npos) return std::nullopt;
    if (k == key) return text.substr(i, valueEnd - i);
    i = skipSpace(text, valueEnd);
    if (i >= text.size() || text[i] != ',') return std::nullopt;
    i = skipSpace(text, i + 1);
  }
  return std::nullopt;
}

}  // namespace handwritten

// A Deployment-made Pod as the store holds it once scheduled and running: the manifest of
// bench/apiserver_bench.cpp with the fields the server and the kubelet add.
const char* kStoredPod = R"({
 "apiVersion": "v1", "kind": "Pod",
 "metadata": {"name": "checkout-7d4b9c8f6d-x2x9k", "generateName": "checkout-7d4b9c8f6d-",
  "namespace": "default", "uid": "00000000-0000-0000-0000-000000000000",
  "resourceVersion": "0", "creationTimestamp": "2026-12-02T08:19:04Z",
  "labels": {"app": "checkout", "tier": "backend", "release": "stable",
   "pod-template-hash": "7d4b9c8f6d", "bench-shard": "3"},
  "annotations": {"prometheus.io/scrape": "true", "prometheus.io/port": "9090",
   "kubectl.kubernetes.io/default-container": "app"},
  "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet",
   "name": "checkout-7d4b9c8f6d", "uid": "5b0c2a8e-3f1d-4c7a-9e2b-8d6f4a1c0e37",
   "controller": true, "blockOwnerDeletion": true}]},
 "spec": {"containers": [
   {"name": "app", "image": "registry.example.com/shop/checkout:1.14.2",
    "imagePullPolicy": "IfNotPresent", "command": ["/usr/local/bin/checkout"],
    "args": ["--port=8080", "--metrics-port=9090", "--log-level=info"],
    "ports": [{"name": "http", "containerPort": 8080, "protocol": "TCP"},
              {"name": "metrics", "containerPort": 9090, "protocol": "TCP"}],
    "env": [{"name": "POD_NAME", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
            {"name": "DB_HOST", "value": "postgres.shop.svc.cluster.local"},
            {"name": "CACHE_TTL_SECONDS", "value": "300"},
            {"name": "FEATURE_FLAGS", "value": "new-cart,fast-search"}],
    "resources": {"requests": {"cpu": "250m", "memory": "256Mi"},
                  "limits": {"cpu": "1", "memory": "512Mi"}},
    "readinessProbe": {"httpGet": {"path": "/healthz", "port": 8080},
                       "initialDelaySeconds": 5, "periodSeconds": 10},
    "volumeMounts": [{"name": "config", "mountPath": "/etc/checkout", "readOnly": true},
                     {"name": "varlog", "mountPath": "/var/log/checkout"}],
    "terminationMessagePath": "/dev/termination-log", "terminationMessagePolicy": "File"},
   {"name": "log-shipper", "image": "fluent/fluent-bit:2.2.0",
    "resources": {"requests": {"cpu": "50m", "memory": "64Mi"}, "limits": {"memory": "128Mi"}},
    "volumeMounts": [{"name": "varlog", "mountPath": "/var/log/checkout", "readOnly": true}],
    "terminationMessagePath": "/dev/termination-log", "terminationMessagePolicy": "File",
    "imagePullPolicy": "IfNotPresent"}],
  "volumes": [{"name": "config", "configMap": {"name": "checkout-config", "defaultMode": 420}},
              {"name": "varlog", "emptyDir": {}}],
  "restartPolicy": "Always", "terminationGracePeriodSeconds": 30, "dnsPolicy": "ClusterFirst",
  "serviceAccountName": "default", "nodeName": "node-0042", "schedulerName": "default-scheduler",
  "nodeSelector": {"kubernetes.io/os": "linux"}, "enableServiceLinks": true,
  "preemptionPolicy": "PreemptLowerPriority", "priority": 0,
  "tolerations": [{"key": "node.kubernetes.io/not-ready", "operator": "Exists",
                   "effect": "NoExecute", "tolerationSeconds": 300}]},
 "status": {"phase": "Running", "hostIP": "10.0.0.42", "podIP": "10.244.42.17",
  "podIPs": [{"ip": "10.244.42.17"}], "startTime": "2026-12-02T08:19:05Z", "qosClass": "Burstable",
  "conditions": [{"type": "Initialized", "status": "True", "lastTransitionTime": "2026-12-02T08:19:05Z"},
   {"type": "Ready", "status": "True", "lastTransitionTime": "2026-12-02T08:19:11Z"},
   {"type": "ContainersReady", "status": "True", "lastTransitionTime": "2026-12-02T08:19:11Z"},
   {"type": "PodScheduled", "status": "True", "lastTransitionTime": "2026-12-02T08:19:04Z"}],
  "containerStatuses": [
   {"name": "app", "ready": true, "restartCount": 0, "started": true,
    "image": "registry.example.com/shop/checkout:1.14.2",
    "imageID": "registry.example.com/shop/checkout@sha256:4f53cda18c2baa0c0354bb5f9a3ecbe5ed12ab4d8e11ba873c2f11161202b945",
    "containerID": "containerd://2c6f1d5ab4b0e1f3a9d8c7e6f5a4b3c2d1e0f9a8b7c6d5e4f3a2b1c0d9e8f7a6",
    "state": {"running": {"startedAt": "2026-12-02T08:19:06Z"}}},
   {"name": "log-shipper", "ready": true, "restartCount": 0, "started": true,
    "image": "fluent/fluent-bit:2.2.0",
    "imageID": "docker.io/fluent/fluent-bit@sha256:9d0c1e5b4f6a7e8d9c0b1a2f3e4d5c6b7a8f9e0d1c2b3a4f5e6d7c8b9a0f1e2d",
    "containerID": "containerd://7e8f9a0b1c2d3e4f5a6b7c8d9e0f1a2b3c4d5e6f7a8b9c0d1e2f3a4b5c6d7e8f",
    "state": {"running": {"startedAt": "2026-12-02T08:19:06Z"}}}]}
})";

std::vector<std::string> storedPods(int n) {
  const json base = json::parse(kStoredPod);
  static const char* apps[] = {"checkout", "catalog", "payments", "frontend", "search"};
  std::vector<std::string> out;
  out.reserve(n);
  for (int i = 0; i < n; ++i) {
    json pod = base;
    char name[64];
    std::snprintf(name, sizeof name, "%s-7d4b9c8f6d-%05d", apps[i % 5], i);
    char uid[40];
    std::snprintf(uid, sizeof uid, "%08x-7c1e-4b2a-9d3f-%012x", i * 2654435761u, i);
    pod["metadata"]["name"] = name;
    pod["metadata"]["uid"] = uid;
    pod["metadata"]["resourceVersion"] = std::to_string(1000 + 3 * i);
    pod["metadata"]["labels"]["app"] = apps[i % 5];
    pod["metadata"]["labels"]["bench-shard"] = std::to_string(i % 16);
    pod["spec"]["nodeName"] = "node-" + std::to_string(i % 1000);
    pod["status"]["podIP"] =
        "10.244." + std::to_string(i / 250 % 256) + "." + std::to_string(i % 250 + 1);
    out.push_back(pod.dump());
  }
  return out;
}

using Lookup = std::function<size_t(std::string_view)>;

// The lookups, each on one scanner; returns the bytes of the spans found (kept live).
template <typename Scan>
std::vector<std::pair<const char*, Lookup>> lookups(Scan scan) {
  return {
      {"metadata.resourceVersion",
       [scan](std::string_view t) {
         auto meta = scan(t, "metadata");
         auto rv = meta ? scan(*meta, "resourceVersion") : std::nullopt;
         return rv ? rv->size() : 0;
       }},
      {"spec",
       [scan](std::string_view t) {
         auto s = scan(t, "spec");
         return s ? s->size() : 0;
       }},
      {"apiVersion+kind+metadata",
       [scan](std::string_view t) {
         size_t n = 0;
         for (const char* m : {"apiVersion", "kind", "metadata"}) {
           auto s = scan(t, m);
           n += s ? s->size() : 0;
         }
         return n;
       }},
      {"status",
       [scan](std::string_view t) {
         auto s = scan(t, "status");
         return s ? s->size() : 0;
       }},
  };
}

// ns per Pod of one pass of `f` over `pods`; `sink` keeps the results live.
double nsPerPod(const std::vector<std::string>& pods, const Lookup& f, size_t& sink) {
  auto t0 = std::chrono::steady_clock::now();
  for (const auto& p : pods) sink += f(p);
  auto t1 = std::chrono::steady_clock::now();
  return std::chrono::duration<double, std::nano>(t1 - t0).count() / pods.size();
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

double load1() {
  double l[1] = {0};
  return getloadavg(l, 1) == 1 ? l[0] : -1;
}

}  // namespace

int main(int argc, char** argv) {
  int n = 10000;
  int rounds = 7;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if ((a == "--pods" || a == "--rounds") && i + 1 < argc) {
      int v = std::atoi(argv[++i]);
      if (v <= 0) {
        std::fprintf(stderr, "json_member_bench: %s needs a positive number\n", a.c_str());
        return 2;
      }
      (a == "--pods" ? n : rounds) = v;
    } else {
      std::fprintf(stderr, "json_member_bench: unknown argument %s (--pods N, --rounds N)\n",
                   a.c_str());
      return 2;
    }
  }
  const double loadStart = load1();
  const auto pods = storedPods(n);
  size_t bytes = 0;
  for (const auto& p : pods) bytes += p.size();

  // Both scanners must give the same spans on every Pod.
  for (const auto& p : pods) {
    for (const char* key : {"apiVersion", "kind", "metadata", "spec", "status", "absent"}) {
      auto a = handwritten::jsonMember(p, key);
      auto b = strait::minicluster::jsonMember(p, key);
      if (a != b || (a && a->data() != b->data())) {
        std::fprintf(stderr, "json_member_bench: the scanners differ on member %s\n", key);
        return 1;
      }
    }
  }

  auto oldScan =
      lookups([](std::string_view t, std::string_view k) { return handwritten::jsonMember(t, k); });
  auto newScan = lookups(
      [](std::string_view t, std::string_view k) { return strait::minicluster::jsonMember(t, k); });
  const Lookup wholeParse = [](std::string_view t) { return json::parse(t).size(); };

  size_t sink = 0;
  std::vector<std::vector<double>> oldNs(oldScan.size()), newNs(newScan.size());
  std::vector<double> parseNs;
  for (int r = 0; r < rounds; ++r) {
    // Which scanner goes first alternates, so neither always runs on caches the other left.
    for (size_t i = 0; i < oldScan.size(); ++i) {
      if (r % 2 == 0) {
        oldNs[i].push_back(nsPerPod(pods, oldScan[i].second, sink));
        newNs[i].push_back(nsPerPod(pods, newScan[i].second, sink));
      } else {
        newNs[i].push_back(nsPerPod(pods, newScan[i].second, sink));
        oldNs[i].push_back(nsPerPod(pods, oldScan[i].second, sink));
      }
    }
    parseNs.push_back(nsPerPod(pods, wholeParse, sink));
  }
  const double parse = median(parseNs);
  std::printf(
      "# json_member_bench: %d stored Pods, %zu B of JSON each on average, %d rounds "
      "(medians); load average %.2f at the start, %.2f at the end\n",
      n, bytes / n, rounds, loadStart, load1());
  std::printf("%-26s %12s %12s %10s %14s\n", "lookup", "old ns/Pod", "new ns/Pod", "new/old",
              "new/parse");
  for (size_t i = 0; i < oldScan.size(); ++i) {
    const double o = median(oldNs[i]);
    const double m = median(newNs[i]);
    std::printf("%-26s %12.0f %12.0f %10.2f %14.3f\n", oldScan[i].first, o, m, m / o, m / parse);
  }
  std::printf("%-26s %12s %12.0f\n", "nlohmann::json::parse", "", parse);
  std::printf("# (checksum %zu)\n", sink);
  return 0;
}

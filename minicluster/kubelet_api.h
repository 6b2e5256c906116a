#pragma once
// The kubelet API of the simulated nodes, served by one HTTPS server for all of them (client
// certificates from the cluster CA required), with a real kubelet's paths:
//   GET /healthz                                  "ok"
//   GET /pods                                     PodList of the pods on simulated nodes
//   GET /stats/summary                            stats/v1alpha1 Summary of the node the
//                                                 request reached (process runtime only:
//                                                 stats_summary.h; 404 for simulated Pods)
//   GET /containerLogs/{ns}/{pod}/{container}     synthetic output; follow, tailLines,
//                                                 timestamps, sinceSeconds, sinceTime,
//                                                 limitBytes, previous
//   GET /exec/{ns}/{pod}/{container}?command=..   WebSocket (v5/v4.channel.k8s.io) running
//                                                 the built-in commands of exec_commands.h
//   GET /attach/{ns}/{pod}/{container}            process runtime only (kubelet_attach.h):
//                                                 the container's output from now on, stdin
//                                                 to it; refused on simulated Pods
//
// Synthetic log: one line when a container starts ("[strait] container C of pod NS/P started
// on node N (image I)"), then "[strait] NS/P/C heartbeat K" every second while it runs, and
// "[strait] container C exited with code X" when it stops.
//
// Thread-safe: handle() runs on connection threads.

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "kube/http_server.h"
#include "minicluster/kubelet_sim.h"
#include "minicluster/registry.h"
#include "minicluster/rest.h"

namespace strait::minicluster {

struct LogOptions {
  bool follow = false;
  bool timestamps = false;
  bool previous = false;
  std::optional<int64_t> tailLines, limitBytes;
  std::optional<std::chrono::system_clock::time_point> since;  // sinceSeconds / sinceTime
};

// The synthetic log lines of one container instance (previous or current) up to `now`, each
// with its time. Empty if that instance never started. Pure.
std::vector<std::pair<std::chrono::system_clock::time_point, std::string>> syntheticLogLines(
    const PodRuntime& pod, const ContainerRuntime& c, bool previous,
    std::chrono::system_clock::time_point now);

// Renders lines for a log request: since/tail filtering, timestamps prefix
// ("2026-11-30T04:30:17.000000000Z "), limitBytes truncation. Pure.
std::string renderLogLines(
    const std::vector<std::pair<std::chrono::system_clock::time_point, std::string>>& lines,
    const LogOptions& opts);

// The kubelet API handler. `kubelets` and `rest` must outlive it.
std::unique_ptr<kube::Handler> newKubeletApiHandler(SimulatedKubelets& kubelets, Registry& registry,
                                              Rest& rest);

}  // namespace strait::minicluster

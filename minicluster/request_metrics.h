#pragma once
// The API server's request metrics, as kube-apiserver names them: every request is counted in
// apiserver_request_total{verb,resource,code}, its duration observed in
// apiserver_request_duration_seconds{verb,resource} (long-running requests — watches and
// upgraded connections — excluded), and open watches are apiserver_longrunning_requests
// {verb="WATCH",resource}. Verbs are upstream's: GET, LIST, WATCH, POST, PUT, PATCH, DELETE,
// CONNECT (upgrades); resource is "" outside resource paths. docs/metrics.md lists them.
//
// Thread-safe: handle() runs on the server's connection threads.

#include <memory>

#include "kube/http_server.h"
#include "metrics/registry.h"

namespace strait::minicluster {

// Wraps `next` (borrowed, must outlive the result) and counts into `registry` (borrowed).
std::unique_ptr<kube::Handler> newRequestMetricsHandler(metrics::Registry& registry,
                                                        kube::Handler& next);

// The upstream verb of a request (pure; exposed for tests).
std::string requestVerb(const kube::HttpRequest& req);

}  // namespace strait::minicluster

#pragma once
// The HTTPS server moved down to kube/http_server.h (the virtual node's kubelet API serves
// with it too); minicluster code keeps using the unqualified names through these aliases.

#include "kube/http_server.h"

namespace strait::minicluster {

using kube::Handler;
using kube::HttpRequest;
using kube::HttpResponse;
using kube::HttpServer;
using kube::HttpServerOptions;
using kube::newHttpServer;
using kube::proxyGet;
using kube::Responder;
using kube::TlsConfig;
using kube::UpstreamTarget;
using kube::WebSocket;

}  // namespace strait::minicluster

// pods/exec (and pods/attach) WebSocket client (see exec_client.h). The connection itself
// is api_websocket.h's: an io_context thread per WebSocket, so stdin and stdout flow at the
// same time.
#include "kube/exec_client.h"

#include <spdlog/spdlog.h>

#include "kube/api_websocket.h"
#include "kube/client.h"

namespace strait::kube {
namespace {

std::string execTarget(const ExecRequest& r) {
  std::string t = resourcePath(resources::kPods, r.ns, r.pod, r.subresource);
  char sep = '?';
  auto add = [&](std::string_view k, std::string_view v) {
    t += sep;
    sep = '&';
    t += std::string(k) + "=" + pctEncode(v);
  };
  if (!r.container.empty()) add("container", r.container);
  for (const std::string& c : r.command) add("command", c);
  if (r.stdin) add("stdin", "true");
  if (r.stdout) add("stdout", "true");
  if (r.stderr) add("stderr", "true");
  if (r.tty) add("tty", "true");
  return t;
}

}  // namespace

Result<std::unique_ptr<WebSocket>> openExec(const RestConfig& cfg, const ExecRequest& req) {
  auto ws = detail::openApiWebSocket(
      cfg, execTarget(req), {std::string(kExecProtocolV5), std::string(kExecProtocolV4)},
      req.subresource + " " + req.ns + "/" + req.pod);
  if (!ws) return ws.error();
  spdlog::debug("event=exec_open pod={}/{} protocol={}", req.ns, req.pod, (*ws)->subprotocol());
  return ws;
}

}  // namespace strait::kube

#pragma once
// pods/exec as a client: a WebSocket to the API server speaking the Kubernetes stream
// protocol v5.channel.k8s.io (falling back to v4.channel.k8s.io when the server does not
// offer v5), with the RestConfig's credentials (CA or insecure, tls-server-name, client
// certificate, bearer token / token file / exec plugin). Beast stays in exec_client.cpp.
//
// Channel framing (first byte of every binary message): 0 stdin, 1 stdout, 2 stderr,
// 3 status (a metav1.Status JSON when the command ends), 4 resize ({"Width":W,"Height":H}),
// 255 close (v5 only: "\xff\x00" says the client's stdin is done).

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "kube/http_server.h"
#include "kube/kubeconfig.h"
#include "kube/status.h"

namespace strait::kube {

inline constexpr std::string_view kExecProtocolV5 = "v5.channel.k8s.io";
inline constexpr std::string_view kExecProtocolV4 = "v4.channel.k8s.io";

// Stream channels of the exec protocol.
enum class ExecChannel : unsigned char {
  Stdin = 0,
  Stdout = 1,
  Stderr = 2,
  Status = 3,
  Resize = 4,
  Close = 255,
};

struct ExecRequest {
  std::string ns, pod, container;  // container "" = the only one
  std::vector<std::string> command;
  bool stdin = false, stdout = true, stderr = true, tty = false;
  // "exec", or "attach" (pods/attach: the same stream protocol, no command).
  std::string subresource = "exec";
};

// Opens the exec WebSocket. Blocks for the handshake (bounded by cfg.timeout). The returned
// WebSocket is full duplex (http_server.h) and its subprotocol() is the one the server chose.
// Errors: the API server's refusal as its Status (NotFound, BadRequest, Forbidden...),
// Unavailable when unreachable or the TLS handshake fails, Invalid for a bad config.
// Thread-safe (no shared state).
Result<std::unique_ptr<WebSocket>> openExec(const RestConfig& cfg, const ExecRequest& req);

}  // namespace strait::kube

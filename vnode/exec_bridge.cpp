// Threads of one exec: the connection thread reads the API server's WebSocket and writes
// frames to the provider; a second thread reads the provider's frames and writes them to the
// WebSocket (the WebSocket is full duplex, kube/http_server.h; the gRPC stream allows one
// reader and one writer). Whichever side ends first ends the other: the provider's exit
// frame closes the WebSocket, the API server hanging up cancels the call.
#include "vnode/exec_bridge.h"

#include <spdlog/spdlog.h>

#include <nlohmann/json.hpp>
#include <thread>

#include "kube/exec_client.h"

namespace strait::vnode {
namespace {

using nlohmann::json;

bool flag(const kube::HttpRequest& req, const char* a, const char* b) {
  for (const char* k : {a, b}) {
    std::string v = req.queryParam(k);
    if (v == "1" || v == "true" || v == "True" || v == "TRUE") return true;
  }
  return false;
}

void plain(kube::Responder& out, int code, const std::string& msg) {
  kube::HttpResponse r;
  r.status = code;
  r.headers["Content-Type"] = "text/plain; charset=utf-8";
  r.body = msg;
  out.respond(std::move(r));
}

// A metav1.Status Failure for channel 3, from a refusal or a transport error.
std::string failure(const kube::Error& e) {
  return json{{"kind", "Status"},
              {"apiVersion", "v1"},
              {"metadata", json::object()},
              {"status", "Failure"},
              {"message", e.message},
              {"reason", kube::reasonOf(e.code)},
              {"code", kube::httpCode(e.code)}}
      .dump();
}

char channelByte(kube::ExecChannel c) { return static_cast<char>(c); }

// The negotiated stream subprotocol, or "" after answering 400.
std::string negotiate(const kube::HttpRequest& req, kube::Responder& out) {
  const std::string offered = req.header("sec-websocket-protocol");
  for (std::string_view p : {kube::kExecProtocolV5, kube::kExecProtocolV4}) {
    if (!req.header("upgrade").empty() && offered.find(p) != std::string::npos) {
      return std::string(p);
    }
  }
  plain(out, 400,
        "unable to upgrade connection: this kubelet speaks WebSocket with "
        "v5.channel.k8s.io or v4.channel.k8s.io only");
  return "";
}

// Relays one exec or attach (`argv` empty) between the API server's WebSocket and the
// provider.
void relay(const kube::HttpRequest& req, kube::Responder& out, peering::KubeletClient& provider,
           const std::string& ns, const std::string& pod, const std::string& container,
           const std::vector<std::string>& argv, const std::string& proto) {
  const bool attach = argv.empty();
  auto ws = out.acceptWebSocket(proto);
  if (!ws) return;

  auto opened = attach ? provider.attach() : provider.exec();
  if (!opened) {
    ws->write(channelByte(kube::ExecChannel::Status) + failure(opened.error()));
    ws->close();
    return;
  }
  peering::ExecStream& call = **opened;
  v1::ExecFrame start;
  v1::ExecStart* s = start.mutable_start();
  s->set_namespace_(ns);
  s->set_pod(pod);
  s->set_container(container);
  for (const std::string& a : argv) s->add_command(a);
  s->set_stdin(flag(req, "input", "stdin"));
  s->set_stdout(flag(req, "output", "stdout"));
  s->set_stderr(flag(req, "error", "stderr"));
  s->set_tty(flag(req, "tty", "tty"));
  spdlog::info("event={} pod={}/{} container={} command={} protocol={}",
               attach ? "attach" : "exec", ns, pod, container, attach ? "" : argv.front(), proto);
  call.write(start);

  // Provider -> API server.
  std::atomic<bool> providerDone{false};
  std::thread output([&] {
    v1::ExecFrame f;
    bool gotExit = false;
    while (call.read(&f)) {
      bool ok = true;
      if (f.has_stdout()) {
        ok = ws->write(channelByte(kube::ExecChannel::Stdout) + f.stdout());
      } else if (f.has_stderr()) {
        ok = ws->write(channelByte(kube::ExecChannel::Stderr) + f.stderr());
      } else if (f.has_exit_status()) {
        ws->write(channelByte(kube::ExecChannel::Status) + f.exit_status());
        gotExit = true;
        break;
      }
      if (!ok) break;
    }
    if (!gotExit) {
      kube::Status end = call.finish();
      if (!end.ok()) ws->write(channelByte(kube::ExecChannel::Status) + failure(end.error()));
    }
    providerDone = true;
    ws->close();  // makes the reader below return
  });

  // API server -> provider.
  std::string msg;
  while (ws->read(msg)) {
    if (msg.empty()) continue;
    v1::ExecFrame f;
    switch (static_cast<kube::ExecChannel>(static_cast<unsigned char>(msg[0]))) {
      case kube::ExecChannel::Stdin: f.set_stdin(msg.substr(1)); break;
      case kube::ExecChannel::Close:
        if (msg.size() >= 2 && msg[1] == channelByte(kube::ExecChannel::Stdin)) {
          f.set_stdin_close(true);
        }
        break;
      case kube::ExecChannel::Resize: {
        json size = json::parse(msg.substr(1), nullptr, false);
        if (!size.is_object()) continue;
        f.mutable_resize()->set_width(size.value("Width", 0u));
        f.mutable_resize()->set_height(size.value("Height", 0u));
        break;
      }
      default: continue;
    }
    if (f.frame_case() != v1::ExecFrame::FRAME_NOT_SET) call.write(f);
  }
  if (providerDone) {
    call.writesDone();
  } else {
    call.cancel();  // the API server hung up first
  }
  output.join();
}

}  // namespace

void serveExec(const kube::HttpRequest& req, kube::Responder& out,
               peering::KubeletClient& provider, const std::string& ns, const std::string& pod,
               const std::string& container) {
  std::vector<std::string> argv = req.queryAll("command");
  if (argv.empty()) return plain(out, 400, "you must specify at least one command for the container");
  const std::string proto = negotiate(req, out);
  if (proto.empty()) return;
  relay(req, out, provider, ns, pod, container, argv, proto);
}

void serveAttach(const kube::HttpRequest& req, kube::Responder& out,
                 peering::KubeletClient& provider, const std::string& ns,
                 const std::string& pod, const std::string& container) {
  const std::string proto = negotiate(req, out);
  if (proto.empty()) return;
  relay(req, out, provider, ns, pod, container, {}, proto);
}

}  // namespace strait::vnode

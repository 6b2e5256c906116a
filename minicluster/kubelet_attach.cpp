// /attach for process-runtime Pods (see kubelet_attach.h). Threads of one session: the
// connection thread follows the container's log file (polling it, as logs -f does) and
// writes to the WebSocket; a reader thread takes the client's messages (stdin, its close,
// terminal resizes) to the container's input.
#include "minicluster/kubelet_attach.h"

#include <spdlog/spdlog.h>
#include <sys/stat.h>

#include <algorithm>
#include <atomic>
#include <fstream>
#include <nlohmann/json.hpp>
#include <thread>

#include "minicluster/container_stdin.h"
#include "minicluster/kubelet_exec.h"

namespace strait::minicluster {
namespace {

using kube::HttpRequest;
using kube::HttpResponse;
using kube::Responder;
using nlohmann::json;
using namespace std::chrono_literals;

constexpr char kStdin = 0, kStdout = 1, kStderr = 2, kStatus = 3, kResize = 4,
               kClose = static_cast<char>(255);

void text(Responder& out, int code, const std::string& body) {
  HttpResponse r;
  r.status = code;
  r.headers["Content-Type"] = "text/plain; charset=utf-8";
  r.body = body + "\n";
  out.respond(std::move(r));
}

uint64_t sizeOf(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 ? static_cast<uint64_t>(st.st_size) : 0;
}

// What `path` holds past `*offset` (at most 1 MiB), advancing the offset.
std::string readMore(const std::string& path, uint64_t* offset) {
  const uint64_t size = sizeOf(path);
  if (size <= *offset) return {};
  std::ifstream in(path, std::ios::binary);
  if (!in) return {};
  in.seekg(static_cast<std::streamoff>(*offset));
  std::string buf(std::min<uint64_t>(size - *offset, 1 << 20), '\0');
  in.read(buf.data(), static_cast<std::streamsize>(buf.size()));
  buf.resize(static_cast<size_t>(in.gcount()));
  *offset += buf.size();
  return buf;
}

// The container instance that started at `startedAt` still runs.
bool stillRunning(SimulatedKubelets& kubelets, const PodRuntime& pod, const std::string& name,
                  const std::optional<std::chrono::system_clock::time_point>& startedAt) {
  auto cur = kubelets.pod(pod.ns, pod.name);
  if (!cur || cur->uid != pod.uid) return false;
  for (const auto& c : cur->containers) {
    if (c.name == name) return c.startedAt == startedAt && !c.finishedAt;
  }
  return false;
}

}  // namespace

void serveProcessAttach(const HttpRequest& req, Responder& out, const PodRuntime& pod,
                        const std::string& container, SimulatedKubelets& kubelets,
                        const ContainerProcesses& processes) {
  const std::string proto = kubeletStreamProtocol(req);
  if (proto.empty()) return text(out, 400, kKubeletStreamUpgradeError);
  std::optional<std::chrono::system_clock::time_point> startedAt;
  for (const auto& c : pod.containers) {
    if (c.name == container && !c.finishedAt) startedAt = c.startedAt;
  }
  auto sb = processes.sandbox(pod.ns, pod.name, container);
  if (!sb || sb->logPath.empty() || !startedAt) {
    return text(out, 400, "container " + container + " is not running");
  }
  const std::string logPath = sb->logPath;
  std::shared_ptr<ContainerStdin> input = sb->input;
  const bool tty = input && input->tty();
  const bool wantIn = kubeletQueryFlag(req, "input", "stdin") && input && input->acceptsInput();
  const bool wantOut = kubeletQueryFlag(req, "output", "stdout");
  const bool wantErr = kubeletQueryFlag(req, "error", "stderr");
  const char outChannel = wantOut || tty ? kStdout : kStderr;
  const bool sendOutput = wantOut || wantErr || tty;

  uint64_t offset = sizeOf(logPath);  // from now on
  auto ws = out.acceptWebSocket(proto);
  if (!ws) return;
  spdlog::info("event=attach pod={}/{} container={} stdin={} tty={} protocol={}", pod.ns,
               pod.name, container, wantIn, tty, proto);

  std::atomic<bool> clientGone{false};
  std::thread reader([&] {
    std::string msg;
    bool inputEnded = false;
    while (ws->read(msg)) {
      if (msg.empty() || !wantIn) continue;
      if (msg[0] == kStdin && !inputEnded) {
        input->write(std::string_view(msg).substr(1));
      } else if (msg[0] == kClose && msg.size() >= 2 && msg[1] == kStdin && !inputEnded) {
        inputEnded = true;
        input->sessionEnded();
      } else if (msg[0] == kResize) {
        json size = json::parse(msg.substr(1), nullptr, false);
        if (size.is_object()) input->resize(size.value("Width", 80u), size.value("Height", 24u));
      }
    }
    if (wantIn && !inputEnded) input->sessionEnded();  // detached
    clientGone = true;
  });

  bool ended = false;
  while (!clientGone) {
    // Whether the instance ended is read before the file, so its last output is still sent.
    ended = !stillRunning(kubelets, pod, container, startedAt);
    std::string chunk = readMore(logPath, &offset);
    if (!chunk.empty() && sendOutput && !ws->write(std::string(1, outChannel) + chunk)) break;
    if (ended) break;
    if (chunk.empty()) std::this_thread::sleep_for(100ms);
  }
  if (ended) {
    ws->write(std::string(1, kStatus) + json{{"metadata", json::object()}, {"status", "Success"}}.dump());
  }
  ws->close();  // makes the reader return
  reader.join();
}

}  // namespace strait::minicluster

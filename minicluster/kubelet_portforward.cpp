// Port-forward into process-runtime Pods (see kubelet_portforward.h).
#include "minicluster/kubelet_portforward.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <spdlog/spdlog.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "kube/portforward.h"
#include "minicluster/netns.h"

namespace strait::minicluster {
namespace {

// Connects to localhost:`port` from inside the network namespace at `netnsPath`: the socket
// is created on a thread that joined the namespace and stays there. The error text is
// errno's ("connection refused").
kube::Result<int> dialInNetns(const std::string& netnsPath, uint16_t port) {
  int fd = -1;
  std::string failure = "cannot enter the network namespace";
  bool entered = runInNetns(netnsPath, [&] {
    auto attempt = [&](int family) {
      int s = ::socket(family, SOCK_STREAM | SOCK_CLOEXEC, 0);
      if (s < 0) {
        failure = std::strerror(errno);
        return false;
      }
      int rc;
      if (family == AF_INET) {
        sockaddr_in a{};
        a.sin_family = AF_INET;
        a.sin_port = htons(port);
        a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        rc = ::connect(s, reinterpret_cast<sockaddr*>(&a), sizeof(a));
      } else {
        sockaddr_in6 a{};
        a.sin6_family = AF_INET6;
        a.sin6_port = htons(port);
        a.sin6_addr = in6addr_loopback;
        rc = ::connect(s, reinterpret_cast<sockaddr*>(&a), sizeof(a));
      }
      if (rc == 0) {
        fd = s;
        return true;
      }
      if (family == AF_INET) failure = std::strerror(errno);  // IPv4's error is the one shown
      ::close(s);
      return false;
    };
    if (!attempt(AF_INET)) attempt(AF_INET6);
  });
  if (!entered) failure = "cannot enter the network namespace " + netnsPath;
  if (fd < 0) {
    for (char& c : failure) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return kube::makeError(kube::Code::Unavailable, failure);
  }
  return fd;
}

}  // namespace

void servePodPortForward(const kube::HttpRequest& req, kube::Responder& out, const PodRuntime& pod,
                         ContainerProcesses* procs) {
  const std::string who = "pod " + pod.name + ", uid " + pod.uid;
  kube::PortDialer dial = [&](uint16_t port) -> kube::Result<std::unique_ptr<kube::ByteStream>> {
    const std::string prefix = "error forwarding port " + std::to_string(port) + " to " + who + ": ";
    if (!procs) {
      return kube::makeError(kube::Code::BadRequest,
                             prefix + "port-forward needs the process runtime: the simulated "
                                      "runtime's Pods are not processes and listen on no port "
                                      "(start the minicluster with --runtime process)");
    }
    std::optional<ContainerSandbox> sandbox;
    for (const auto& c : pod.containers) {
      if ((sandbox = procs->sandbox(pod.ns, pod.name, c.name))) break;
    }
    if (!sandbox || sandbox->netnsPath.empty()) {
      return kube::makeError(kube::Code::Unavailable,
                             prefix + "the pod has no running sandbox (network namespace)");
    }
    auto fd = dialInNetns(sandbox->netnsPath, port);
    if (!fd) {
      spdlog::debug("event=portforward_dial_failed pod={}/{} port={} error=\"{}\"", pod.ns,
                    pod.name, port, fd.error().message);
      return kube::makeError(fd.error().code,
                             prefix + "failed to connect to localhost:" + std::to_string(port) +
                                 " inside the network namespace of the pod: " +
                                 fd.error().message);
    }
    spdlog::debug("event=portforward_dial pod={}/{} port={}", pod.ns, pod.name, port);
    return kube::socketByteStream(*fd);
  };
  kube::servePortForward(req, out, dial);
}

}  // namespace strait::minicluster

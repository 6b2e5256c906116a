#pragma once
// The process runtime (private to minicluster/): kubelets whose Pods really run. Each node
// is a network namespace (netns.h), each Pod a namespace of its own with a veth to its
// node's bridge, each container a process started in the Pod's namespace (and a UTS
// namespace whose hostname is the Pod's name) with the environment a kubelet builds;
// stdout/stderr go to a log file per container instance that the kubelet API serves;
// exit codes drive restartPolicy and CrashLoopBackOff; deletion sends SIGTERM, waits the
// grace period, then SIGKILL. Every node serves the kubelet API inside its own namespace,
// on its InternalIP. ClusterIP Services work in every node namespace (service_proxy.h),
// cluster DNS through dnsmasq (cluster_dns.h): each container sees the resolv.conf and
// /etc/hosts a kubelet writes, bind-mounted in a mount namespace of its own.
//
// What a container runs: its command + args; with no command, an image
// registry.k8s.io/e2e-test-images/agnhost:* runs `strait agnhost ARGS...`, any other image
// `strait agnhost netexec --http-port=<first containerPort, else 80>` (containerArgv()).
// A local image (ProcessRuntimeOptions::localImages, `strait minicluster --local-image
// REPO[:TAG]=BINARY`) stands for an image holding one program: its containers run BINARY
// with the container's command after its first word, then its args (the command's first
// word is the program's path inside the image, which the host does not have).
// No user namespaces: every container runs as root whatever its securityContext says.
//
// One minicluster per cluster name on a machine: a lock file under /run/strait keeps a
// second one from starting, and start() sweeps what a killed predecessor left behind.
//
// Thread-safe (same contract as SimulatedKubelets). Constructor does no I/O.

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "kube/http_server.h"
#include "minicluster/kubelet_sim.h"
#include "minicluster/netns.h"
#include "minicluster/runtime_process_launch.h"

namespace strait::minicluster {

class ContainerStdin;  // container_stdin.h

struct ProcessRuntimeOptions {
  std::string clusterName = "minicluster";
  std::string straitBinary;     // what containers without a command run; "" = /proc/self/exe
  kube::TlsConfig kubeletTls;   // serving certificate of every node's kubelet API
  uint16_t kubeletPort = 10250;
  // PEM private key that signs the ServiceAccount tokens of projected volumes; "" = none
  // (such volumes then fail to mount).
  std::string serviceAccountKeyPem;
  // Image reference -> host binary (see the top of this file). A key without a tag or
  // digest ("strait") matches every tag of that repository; one with a tag only that tag.
  std::map<std::string, std::string> localImages;
};

// Where one container of a Pod runs and writes, for the kubelet API.
struct ContainerSandbox {
  std::string netnsPath;        // the Pod's network namespace (its node's for hostNetwork)
  std::string hostname;         // the Pod's hostname; the node's name for hostNetwork
  std::string workingDir;       // container workingDir; "" = "/"
  std::string logPath;          // current instance's log; "" before it first starts
  std::string previousLogPath;  // the instance before the last restart; "" if none
  // The environment the current instance started with (empty for init containers).
  std::vector<std::pair<std::string, std::string>> env;
  // resolv.conf and hosts of the Pod, bind-mounted (source, target); empty for hostNetwork.
  std::vector<std::pair<std::string, std::string>> bindFiles;
  // The container's volumeMounts (runtime_process_volumes.h).
  std::vector<BindMount> mounts;
  // The current instance's stdin pipe or terminal (container_stdin.h); null when its spec
  // asks for neither stdin nor tty.
  std::shared_ptr<ContainerStdin> input;
};

// The optional capability of a runtime whose containers really run: the kubelet API asks
// it where a container lives instead of serving synthetic logs and built-in exec commands.
class ContainerProcesses {
 public:
  virtual ~ContainerProcesses() = default;
  // The sandbox of `container` (regular or init) of pod ns/name, or nullopt. Any thread.
  virtual std::optional<ContainerSandbox> sandbox(const std::string& ns, const std::string& name,
                                                  const std::string& container) const = 0;
  // The kubelet stats Summary (stats_summary.h) of the node whose kubelet API listens on
  // `nodeAddress` (its InternalIP; "" with a single node): real CPU and memory of its running
  // containers. NotFound for an address no node has. May block about half a second (the
  // first CPU rate of a container needs two samples). Any thread.
  virtual kube::Result<nlohmann::json> statsSummary(const std::string& nodeAddress) = 0;
};

class ProcessKubelets : public SimulatedKubelets, public ContainerProcesses {
 public:
  // The handler every node's kubelet API serves. Call once, before start(); it must
  // outlive stop().
  virtual void setKubeletApi(kube::Handler& handler) = 0;
  // The host's address on the cluster's underlay, which every Pod can reach (the API server
  // listens there for Pods); "" before start(). Any thread after start().
  virtual std::string hostAddress() const = 0;
};

// `store`, `registry` and `rest` must outlive the result. start(port) ignores `port` (each
// node listens on opts.kubeletPort in its own namespace) and fails, having created nothing
// that outlives the call, when the lock is held, the network cannot be built or a Node
// cannot be written. stop() kills every container, removes the network and the logs.
std::unique_ptr<ProcessKubelets> newProcessKubelets(Store& store, Registry& registry, Rest& rest,
                                                    SimulationOptions sim,
                                                    ProcessRuntimeOptions opts);

// `strait minicluster --cleanup NAME`: removes what a killed process-runtime minicluster
// named `clusterName` left (processes, namespaces, links, logs). Error (Conflict) while a
// minicluster of that name runs.
kube::Result<SweepReport> cleanupProcessRuntime(const std::string& clusterName);

// The argv a container runs (see the top of this file). `container` is a core/v1 Container.
std::vector<std::string> containerArgv(
    const nlohmann::json& container, const std::string& straitBinary,
    const std::map<std::string, std::string>& localImages = {});
// The binary a local image maps `image` to (exact reference first, then its repository
// without tag or digest); "" when none does.
std::string localImageBinary(const std::string& image,
                             const std::map<std::string, std::string>& localImages);
// Parses `REPO[:TAG]=/path/to/binary` (--local-image); error (Invalid) naming what is wrong:
// no '=', an empty reference, a relative path, a binary that is not an executable file.
kube::Result<std::pair<std::string, std::string>> parseLocalImage(const std::string& text);

// Kubelet API for process-runtime Pods (runtime_process_api.cpp).
// GET /containerLogs: the container's log file; follow, previous, tailLines, limitBytes.
void serveProcessLogs(const kube::HttpRequest& req, kube::Responder& out, const PodRuntime& pod,
                      const std::string& container, SimulatedKubelets& kubelets,
                      const ContainerProcesses& processes);
// /exec over WebSocket (v5/v4.channel.k8s.io): runs the command in the Pod's namespaces with
// the container's environment, streaming stdin/stdout/stderr (a pseudo-terminal with tty).
void serveProcessExec(const kube::HttpRequest& req, kube::Responder& out, const PodRuntime& pod,
                      const std::string& container, const ContainerProcesses& processes,
                      Registry& registry, Rest& rest);

}  // namespace strait::minicluster

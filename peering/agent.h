#pragma once
// The per-cluster daemon (`strait agent`): loads or creates the cluster identity (Secret
// strait-system/strait-identity, reused after restarts), installs the ForeignCluster CRD,
// serves the Peering and Reflection gRPC services over TLS with a server certificate from its
// own CA, publishes its endpoint in ConfigMap strait-system/strait-agent, and runs the
// provider and consumer control loops.
//
// The virtual kubelets (consumer side) and the reflection stream (provider side) run next
// to ConsumerController and ProviderService.
//
// Thread-safety: start() and stop() from one thread; the consumer loop and the provider loop
// run on a thread each; gRPC calls on gRPC's threads.

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "base/thread_annotations.h"
#include "kube/client.h"
#include "kube/informer.h"
#include "peering/consumer.h"
#include "peering/identity.h"
#include "peering/link.h"
#include "peering/network.h"
#include "peering/provider.h"
#include "peering/pull.h"
#include "peering/transport.h"

namespace strait::peering {

struct AgentConfig {
  std::string clusterName;
  std::string listen = "127.0.0.1:0";
  std::string advertise;  // host:port others dial; default: the listen host with the bound port
  // Pull mode: the port provider agents dial (default: the listen host, any port) and the
  // address published for it (default: the advertised host with the bound port).
  std::string linkListen;
  std::string linkAdvertise;
  LinkTiming linkTiming;
  ProviderConfig provider;
  ConsumerConfig consumer;
  // The tunnel of every peering (network.h); gateway off by default.
  NetworkConfig network;
  // The provider loop's period; the consumer loop runs when a pass is due (consumer.h) and
  // polls at this period only while a pull-mode peering waits for its link.
  std::chrono::milliseconds loopInterval{100};
  // How often the endpoint ConfigMap and the CRD are checked and restored if they drifted.
  std::chrono::milliseconds ownedResyncInterval{2000};
  // metadata.ownerReferences of the endpoint ConfigMap (an array; null = none), e.g. the
  // chart's ServiceAccount, so that uninstalling the chart garbage-collects it.
  nlohmann::json ownerReferences;
  // The same owner owns the identity Secret too (deleted with it: a reinstall is then a new
  // cluster to its peers). False: an owner reference of exactly these is taken off it.
  bool ownerOwnsIdentity = false;
  // Builds the reflection stream handler (provider side; reflection/stream_server.h) once
  // the ProviderService exists, before the server starts. Both references outlive the
  // handler. Optional: without it the stream is refused (MethodNotAllowed).
  std::function<ProviderService::StreamHandler(ProviderService&, kube::Client&)>
      streamHandlerFactory;
};

class Agent {
 public:
  // Validates the config (Invalid naming the field). Takes the client. No I/O.
  static kube::Result<std::unique_ptr<Agent>> create(AgentConfig config,
                                                     std::unique_ptr<kube::Client> client);
  ~Agent();

  // Identity, CRD, server, endpoint ConfigMap, loop. Error if any step fails (the agent is
  // then not running). Call once.
  kube::Status start();
  // Stops the loop and the server. Idempotent.
  void stop();

  // Serves RemoteKubelet (kubelet_transport.h) with `handler` (borrowed; must outlive the
  // agent). Call before start().
  void setKubeletHandler(KubeletHandler* handler) { kubelet_ = handler; }
  // OK when `caller` has an active peering with this cluster as provider; Unavailable before
  // start(). Thread-safe.
  kube::Status authorizeConsumer(const Caller& caller);

  const ClusterIdentity& identity() const { return identity_; }
  const std::string& endpoint() const { return endpoint_; }
  const std::string& linkEndpoint() const { return linkEndpoint_; }
  // The tunnel's control plane (null before start()): its NetworkState translates pod IPs
  // between the clusters' views (network_state.h).
  NetworkController* network() { return network_.get(); }

 private:
  Agent(AgentConfig config, std::unique_ptr<kube::Client> client);
  // Puts config_.ownerReferences on the identity Secret, or takes them off, as
  // ownerOwnsIdentity says.
  kube::Status ownIdentity(const nlohmann::json& secret);
  kube::Status loadOrCreateIdentity();
  kube::Status installCrd();
  kube::Status publishEndpoint();
  // Restores the CRD and the endpoint ConfigMap if deleted or changed by someone else.
  void reconcileOwned();
  kube::Status startPull(const kube::KeyPair& chain);
  void loop();          // the consumer side
  void providerLoop();  // the provider side, pull dialers, owned objects

  AgentConfig config_;
  std::unique_ptr<kube::Client> client_;
  ClusterIdentity identity_;
  std::string endpoint_;
  std::string linkEndpoint_;
  std::unique_ptr<LinkListener> links_;   // consumer side of pull mode
  std::unique_ptr<PullDialers> dialers_;  // provider side of pull mode
  std::unique_ptr<NetworkController> network_;
  std::unique_ptr<ProviderService> provider_;
  std::unique_ptr<ConsumerController> consumer_;
  // ForeignClusters, watched: the consumer reads them from this cache instead of listing
  // every pass, and a new or deleted one wakes the loop at once.
  std::unique_ptr<kube::Informer> foreignClusters_;
  KubeletHandler* kubelet_ = nullptr;
  std::unique_ptr<RpcServer> server_;
  std::thread thread_;
  std::thread providerThread_;
  std::chrono::system_clock::time_point lastOwnedResync_;  // providerLoop only
  base::Mutex mu_;
  std::condition_variable_any cv_;
  bool stopping_ GUARDED_BY(mu_) = false;
  bool wake_ GUARDED_BY(mu_) = false;  // run the next pass now
};

}  // namespace strait::peering

#pragma once
// The agent-to-agent transport: gRPC over TLS, kept behind this small interface so that only
// grpc_server.cpp and grpc_client.cpp include gRPC headers.
//
// Server: TLS with the agent's certificate (DNS SAN agentServerName(clusterId)); a client
// certificate is requested and, when presented, verified against the cluster CA: one from
// another CA fails the handshake. Every method except Peering.Join requires a verified client
// certificate; its CommonName (the peer's cluster ID) is handed to the handler as the Caller.
// Join alone may be called without one (the caller proves itself with a token instead).

#include <chrono>
#include <memory>
#include <string>

#include "kube/pki.h"
#include "kube/status.h"
#include "proto/strait/peering.pb.h"

namespace strait::peering {

class KubeletClient;  // kubelet_transport.h
class KubeletHandler;  // kubelet_transport.h

// Who is calling: the verified certificate CommonName (empty on an unauthenticated Join).
struct Caller {
  std::string clusterId;
  std::string address;  // peer address as gRPC reports it ("ipv4:127.0.0.1:5555")
};

// One end of the bidirectional reflection stream (Reflection.Stream). read() from one
// thread at a time; write() from any thread (serialized inside); cancel() from any thread,
// any number of times, unblocks read() and write() (they return false from then on).
// Destroy an end only once no thread is inside read() or write().
class EventStream {
 public:
  virtual ~EventStream() = default;
  // Blocks for the next message; false at the end of the stream or on failure.
  virtual bool read(v1::ReflectionEvent* e) = 0;
  // Sends one message (blocking under flow control); false when the stream is broken.
  virtual bool write(const v1::ReflectionEvent& e) = 0;
  virtual void cancel() = 0;
  // Why the stream ended, once read() has returned false (OK while it has not, or when the
  // remote end closed it normally). A refused stream reports the refusal here (e.g.
  // Forbidden for a revoked peering, Unavailable when the remote cannot be reached).
  virtual kube::Status status() { return kube::Status::OK(); }
};

// Implemented by the provider side of an agent. Called from gRPC's thread pool, possibly
// concurrently: implementations must be thread-safe. Return a non-OK Status to fail the call;
// its code maps to a gRPC code and its message reaches the caller unchanged.
class PeeringHandler {
 public:
  virtual ~PeeringHandler() = default;
  virtual kube::Status join(const Caller& caller, const v1::JoinRequest& req,
                            v1::JoinResponse* resp) = 0;
  virtual kube::Status renewCertificate(const Caller& caller, const v1::RenewRequest& req,
                                        v1::RenewResponse* resp) = 0;
  virtual kube::Status heartbeat(const Caller& caller, const v1::HeartbeatRequest& req,
                                 v1::HeartbeatResponse* resp) = 0;
  virtual kube::Status unpeer(const Caller& caller, const v1::UnpeerRequest& req,
                              v1::UnpeerResponse* resp) = 0;
  // The tunnel negotiation of an authenticated caller (peering/network.h). A handler that
  // negotiates no tunnels (an agent without --gateway) answers MethodNotAllowed, which the
  // caller reads as "this side has no gateway".
  virtual kube::Status network(const Caller& caller, const v1::NetworkRequest& req,
                               v1::NetworkResponse* resp);
  // The reflection stream of an authenticated caller: runs for the stream's whole life on a
  // gRPC thread and returns when it ends (the returned Status ends the call). `s` is valid
  // until this returns. Default: MethodNotAllowed (Unimplemented).
  virtual kube::Status stream(const Caller& caller, EventStream& s);
};

struct ServerConfig {
  std::string listen;            // "127.0.0.1:0", "0.0.0.0:7443", "[::]:7443"
  kube::KeyPair serverCert;      // certPem may hold the chain (leaf, then CA)
  std::string clientCaPem;       // client certificates must chain to this CA
  KubeletHandler* kubelet = nullptr;  // serves RemoteKubelet when set (borrowed)
};

// A running gRPC server. Thread-safe; shutdown() may be called from any thread, once or more.
class RpcServer {
 public:
  virtual ~RpcServer() = default;
  // The bound port (useful with port 0).
  virtual int port() const = 0;
  // Stops accepting calls and waits up to `grace` for running ones.
  virtual void shutdown(std::chrono::milliseconds grace) = 0;
};

// Starts serving Peering and Reflection with `handler` (borrowed; must outlive the server).
// Error (Unavailable) if the address cannot be bound, (Invalid) if the credentials are bad.
kube::Result<std::unique_ptr<RpcServer>> startRpcServer(const ServerConfig& config,
                                                        PeeringHandler& handler);

struct ClientConfig {
  std::string endpoint;          // host:port
  std::string serverCaPem;       // the server's cluster CA (pinned)
  std::string serverName;        // expected DNS SAN of the server: agentServerName(id)
  kube::KeyPair clientCert;      // empty for the bootstrap Join
};

// A connection to one remote agent. Thread-safe (gRPC channels are). Each call blocks up to
// `timeout`; a transport failure returns Unavailable, a deadline ServerTimeout, and a
// refusal by the remote the code and message it sent.
class RpcClient {
 public:
  virtual ~RpcClient() = default;
  virtual kube::Status join(const v1::JoinRequest& req, v1::JoinResponse* resp,
                            std::chrono::milliseconds timeout) = 0;
  virtual kube::Status renewCertificate(const v1::RenewRequest& req, v1::RenewResponse* resp,
                                        std::chrono::milliseconds timeout) = 0;
  virtual kube::Status heartbeat(const v1::HeartbeatRequest& req, v1::HeartbeatResponse* resp,
                                 std::chrono::milliseconds timeout) = 0;
  virtual kube::Status unpeer(const v1::UnpeerRequest& req, v1::UnpeerResponse* resp,
                              std::chrono::milliseconds timeout) = 0;
  // The tunnel negotiation (Peering.Network). Default (test fakes): MethodNotAllowed.
  virtual kube::Status network(const v1::NetworkRequest& req, v1::NetworkResponse* resp,
                               std::chrono::milliseconds timeout);
  // Opens a reflection stream (mTLS; the client certificate names the caller). Does not wait
  // for the remote: a stream that cannot be established or is refused shows it as read()
  // returning false and status() giving the reason.
  virtual kube::Result<std::unique_ptr<EventStream>> openStream() = 0;
  // The RemoteKubelet calls on this client's channel (same TLS identity); shared, so it may
  // outlive this client. Null for clients without one (test fakes).
  virtual std::shared_ptr<KubeletClient> kubelet() { return nullptr; }
};

// Creates a client (no I/O yet: the connection is made by the first call).
kube::Result<std::unique_ptr<RpcClient>> makeRpcClient(const ClientConfig& config);

// Connects to `endpoint` with TLS, takes the certificate chain the server sends, and returns
// the PEM of the certificate in it whose SHA-256 fingerprint is `fingerprint` (the CA a
// token pins), after checking that the server's leaf is signed by it. Like kubeadm's
// discovery-token-ca-cert-hash. Error (Unavailable) if unreachable within `timeout`,
// (Unauthorized) if no certificate in the chain matches.
kube::Result<std::string> fetchPinnedCa(const std::string& endpoint,
                                        const std::string& fingerprint,
                                        std::chrono::milliseconds timeout);

}  // namespace strait::peering

#pragma once
// Pull mode's reverse link: the provider agent (behind NAT) dials the consumer agent, and the
// consumer's gRPC calls then travel back over connections the provider opened. Nothing above
// the transport changes: the consumer's RpcClient is an ordinary mutual-TLS gRPC channel to
// a local forwarder address, and the provider's gRPC server sees an ordinary mutual-TLS
// client, so the caller identity still comes from the consumer's verified client
// certificate, end to end.
//
//   consumer RpcClient --TCP--> forwarder (consumer agent, one per provider)
//        ==[standby link connection, TLS, dialed by the provider]==>
//   provider agent --TCP--> its own gRPC server
//
// Link connections: the provider keeps `standby` idle TLS connections open to the
// consumer's link port. Each side presents its agent certificate chain and pins the other's
// CA (see link_io.h): the provider pins the consumer CA fingerprint it was given with the
// token and, satisfied, sends "LINK\n"; the consumer pins the CA of the provider the peering
// names (before Join: the fingerprint in the token; after: the CA in its credential) and
// answers "OK\n" or "ERR <why>\n". Idle connections exchange "P" keepalives both ways. When a local client
// connects to the forwarder, the consumer takes a standby connection and sends "G"; the
// provider connects to its gRPC server, answers "A", and both relay bytes until either end
// closes; the provider then dials a replacement. With no standby connection (link down) the
// forwarder closes new connections at once, so calls fail Unavailable as in push mode.

#include <chrono>
#include <functional>
#include <memory>
#include <set>
#include <string>

#include "kube/pki.h"
#include "kube/status.h"

namespace strait::peering {

struct LinkTiming {
  std::chrono::milliseconds keepalive{1000};   // idle connections send "P" this often
  std::chrono::milliseconds lostAfter{4000};   // an idle connection silent this long is dropped
  std::chrono::milliseconds ioTimeout{5000};   // connect, handshake, first line
};

// Consumer side: the link port and one forwarder per pull-mode provider.
// Thread-safe; callbacks run on link threads.
class LinkListener {
 public:
  struct Options {
    std::string listen;        // host:port of the link port (port 0: any)
    std::string forwardHost = "127.0.0.1";  // where forwarders bind
    kube::KeyPair chain;       // this agent's certificate (leaf then CA) and key
    // The SHA-256 fingerprint of the CA a provider dialing in as `providerId` must present,
    // or the refusal (its message is sent to the provider).
    std::function<kube::Result<std::string>(const std::string& providerId)> expectedCa;
    // A link was refused (provider ID as its certificate claims it, reason). May be empty.
    std::function<void(const std::string& providerId, const std::string& reason)> onRefused;
    LinkTiming timing;
    std::chrono::milliseconds waitForStandby{1000};  // a forwarded connection waits this long
  };
  // Binds the link port and starts accepting. Error (Unavailable) if it cannot bind.
  static kube::Result<std::unique_ptr<LinkListener>> start(Options options);
  ~LinkListener();

  int port() const;
  // host:port of the forwarder for `providerId` (made on first call, kept until retain()
  // drops it). Error (Unavailable) if it cannot bind.
  kube::Result<std::string> forwardEndpoint(const std::string& providerId);
  // True while at least one standby connection from `providerId` is open.
  bool linked(const std::string& providerId) const;
  // Closes forwarders and standby connections of providers not in `providerIds`
  // (connections already relaying finish on their own).
  void retain(const std::set<std::string>& providerIds);
  // Stops everything and joins the threads. Idempotent.
  void stop();

  struct Impl;

 private:
  explicit LinkListener(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// Provider side: keeps `standby` connections open to one consumer agent, relays taken ones
// to this agent's gRPC server, redials with backoff. Thread-safe.
class LinkDialer {
 public:
  struct Options {
    std::string consumerEndpoint;       // the consumer agent's link port, host:port
    std::string consumerCaFingerprint;  // pinned
    std::string consumerId;             // expected cluster ID ("" = learn it from the certificate)
    kube::KeyPair chain;                // this agent's certificate (leaf then CA) and key
    std::string localTarget;            // this agent's gRPC server, host:port
    LinkTiming timing;
    int standby = 2;
    std::chrono::milliseconds minBackoff{100};
    std::chrono::milliseconds maxBackoff{2000};
  };
  // Starts dialing. Error (Invalid) if the certificate or key is unusable.
  static kube::Result<std::unique_ptr<LinkDialer>> start(Options options);
  ~LinkDialer();

  // True while at least one standby connection is accepted by the consumer.
  bool linked() const;
  // The consumer's cluster ID as its certificate proved it ("" before the first link).
  std::string consumerId() const;
  // Why the last attempt failed ("" after a success).
  std::string lastError() const;
  // Stops dialing, closes idle connections, gives relaying ones `grace` to finish, joins.
  void stop(std::chrono::milliseconds grace = std::chrono::seconds(2));

  struct Impl;

 private:
  explicit LinkDialer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace strait::peering

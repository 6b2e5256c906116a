#pragma once
// Socket and TLS primitives of the pull-mode link (link_listener.cpp, link_dialer.cpp);
// internal to peering/. Every socket here is non-blocking; the functions wait with poll()
// up to the timeout they are given, so no call can hang.
//
// Identity on the link: each side presents its agent certificate chain (leaf with DNS SAN
// agent.<cluster-id>.strait, then its cluster CA) and verifies the other side's by hand:
// the presented chain must contain a CA with the pinned SHA-256 fingerprint, the leaf must
// be signed by it and unexpired, and the cluster ID is read from the leaf's SAN. The TLS
// handshake itself proves possession of the leaf's key.
//
// A Conn is used by one thread at a time (OpenSSL objects are not thread-safe).

#include <openssl/ssl.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <list>
#include <memory>
#include <mutex>
#include <thread>
#include <string>
#include <string_view>

#include "base/thread_annotations.h"
#include "kube/pki.h"
#include "kube/status.h"

namespace strait::peering::linkio {

using Ctx = std::shared_ptr<SSL_CTX>;

// One TLS connection (owns the socket and the SSL object).
class Conn {
 public:
  Conn(int fd, SSL* ssl) : fd_(fd), ssl_(ssl) {}
  ~Conn();
  Conn(const Conn&) = delete;
  Conn& operator=(const Conn&) = delete;
  int fd() const { return fd_; }
  SSL* ssl() const { return ssl_; }
  // Wakes any thread polling this connection (shutdown(2)); safe from any thread.
  void abort();

 private:
  int fd_;
  SSL* ssl_;
};

// A TLS context presenting `chain` (leaf then CA, PEM) with its key, asking the peer for its
// certificate (server side) and accepting any chain: callers verify with verifyPeer().
kube::Result<Ctx> makeContext(bool server, const kube::KeyPair& chain);

// "host:port" / "[v6]:port" split. False if malformed.
bool splitEndpoint(const std::string& endpoint, std::string* host, std::string* port);
// A non-blocking listening socket; *port gets the bound port. -1 and *error on failure.
int listenOn(const std::string& hostPort, int* port, std::string* error);
// A non-blocking connected socket, or -1 and *error.
int connectTo(const std::string& endpoint, std::chrono::milliseconds timeout, std::string* error);
// accept4() non-blocking; -1 if none is pending.
int acceptOn(int listenFd);
// Waits until `fd` is readable or `timeout`; true if readable (or closed).
bool waitReadable(int fd, std::chrono::milliseconds timeout);

// TLS handshake on connected socket `fd` (taken over: closed on failure).
kube::Result<std::unique_ptr<Conn>> handshake(const Ctx& ctx, int fd, bool server,
                                              std::chrono::milliseconds timeout);

// The verified peer: its cluster ID and the PEM of its CA.
struct PeerIdentity {
  std::string clusterId;
  std::string caPem;
  std::string caFingerprint;
};
// Verifies the peer of `conn` against the CA fingerprint `pinned` (see the file comment).
// Unauthorized with a message saying what did not match.
kube::Result<PeerIdentity> verifyPeer(const Conn& conn, const std::string& pinned);
// PEM text of a certificate ("" on failure).
std::string pemOf(X509* cert);
// The cluster ID in the peer leaf's SAN (unverified; for messages), or "".
std::string claimedClusterId(const Conn& conn);

// Writes all of `data` within `timeout`. False on error or timeout.
bool writeAll(Conn& c, std::string_view data, std::chrono::milliseconds timeout);
// Reads what is available within `timeout`: >0 bytes, 0 at end or error, -1 on timeout.
int readSome(Conn& c, char* buf, int len, std::chrono::milliseconds timeout);
// Reads one '\n'-terminated line (without it) of at most 1024 bytes.
bool readLine(Conn& c, std::string* line, std::chrono::milliseconds timeout);

// Copies bytes both ways between `link` and the plain socket `fd` until either side ends,
// fails, or `stop` becomes true (checked at least every 200 ms). Closes neither.
void splice(Conn& link, int fd, const std::atomic<bool>& stop);

// Threads that end on their own (connection handlers). spawn() joins the finished ones
// first, so they do not pile up; joinAll() waits for the rest. Thread-safe.
class ThreadSet {
 public:
  ~ThreadSet() { joinAll(); }
  void spawn(std::function<void()> fn);
  void joinAll();

 private:
  struct Entry {
    std::thread thread;
    std::shared_ptr<std::atomic<bool>> done;
  };
  base::Mutex mu_;
  std::list<Entry> entries_ GUARDED_BY(mu_);
};

}  // namespace strait::peering::linkio

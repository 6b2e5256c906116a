#pragma once
// Ready follows the health of the reflection stream, with a grace, so it does not flap: a
// partition shorter than the grace keeps everything running.
//
//   never connected                    -> NotReady  ReflectionStreamNotConnected
//   connected, a message within grace  -> Ready     KubeletReady
//   disconnected (or silent) < grace   -> Ready     KubeletReady (message says since when)
//   disconnected (or silent) >= grace  -> NotReady  ReflectionStreamDown
// The messages of the last two say since when (wall clock), and stay the same while the
// outage lasts, so the Node is written at the transitions only.
//
// "Silent" covers half-open connections: a connected stream that has carried nothing (not
// even a keepalive) for `grace` counts as down. The clock is injected so tests need no sleeps.
// Thread-safe: the stream's reader thread reports, the node controller asks.

#include <chrono>
#include <functional>
#include <mutex>
#include <optional>
#include <string>

#include "base/thread_annotations.h"
#include "vnode/node_builder.h"

namespace strait::vnode {

class StreamHealth {
 public:
  using Clock = std::function<std::chrono::steady_clock::time_point()>;

  // `grace` > 0. `clock` defaults to steady_clock::now.
  explicit StreamHealth(std::chrono::milliseconds grace, Clock clock = {});

  // The stream is up (after the handshake).
  void onConnected();
  // Anything arrived on the stream (events, keepalives).
  void onMessage();
  // The stream ended or failed.
  void onDisconnected();

  // The readiness now.
  Readiness readiness() const;
  // True once it has been connected at least once.
  bool everConnected() const;
  std::chrono::milliseconds grace() const { return grace_; }

 private:
  std::chrono::steady_clock::time_point now() const;

  const std::chrono::milliseconds grace_;
  const Clock clock_;

  mutable base::Mutex mu_;
  bool connected_ GUARDED_BY(mu_) = false;
  // The last proof of life (connect or message while connected).
  std::optional<std::chrono::steady_clock::time_point> lastAlive_ GUARDED_BY(mu_);
  // Its wall-clock time for messages, computed once per lastAlive_ value.
  mutable std::chrono::steady_clock::time_point sinceFor_ GUARDED_BY(mu_){};
  mutable std::string since_ GUARDED_BY(mu_);
};

}  // namespace strait::vnode

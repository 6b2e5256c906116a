#include "vnode/stream_health.h"

#include <fmt/format.h>

#include "kube/object.h"

namespace strait::vnode {

using std::chrono::milliseconds;
using std::chrono::steady_clock;

StreamHealth::StreamHealth(milliseconds grace, Clock clock)
    : grace_(grace.count() > 0 ? grace : milliseconds(1)), clock_(std::move(clock)) {}

steady_clock::time_point StreamHealth::now() const {
  return clock_ ? clock_() : steady_clock::now();
}

void StreamHealth::onConnected() {
  base::MutexLock lock(mu_);
  connected_ = true;
  lastAlive_ = now();
}

void StreamHealth::onMessage() {
  base::MutexLock lock(mu_);
  if (connected_) lastAlive_ = now();
}

void StreamHealth::onDisconnected() {
  base::MutexLock lock(mu_);
  // Down since the last proof of life: a stream that went silent before it failed has been
  // down since it went silent.
  connected_ = false;
}

bool StreamHealth::everConnected() const {
  base::MutexLock lock(mu_);
  return lastAlive_.has_value();
}

Readiness StreamHealth::readiness() const {
  base::MutexLock lock(mu_);
  Readiness r;
  if (!lastAlive_) {
    r.reason = "ReflectionStreamNotConnected";
    r.message = "the reflection stream to the provider has not connected yet";
    return r;
  }
  const steady_clock::time_point t = now();
  auto down = std::chrono::duration_cast<milliseconds>(t - *lastAlive_);
  // The message names the wall-clock time of the last proof of life, fixed once per outage,
  // so that it (and the Node's condition) does not change at every node controller round.
  if (sinceFor_ != *lastAlive_) {
    sinceFor_ = *lastAlive_;
    since_ = kube::rfc3339(std::chrono::system_clock::now() -
                           std::chrono::duration_cast<std::chrono::system_clock::duration>(t - *lastAlive_));
  }
  if (down < grace_) {
    r.ready = true;
    r.reason = "KubeletReady";
    r.message = connected_ && down.count() * 2 < grace_.count()
                    ? "the reflection stream to the provider is healthy"
                    : fmt::format("the reflection stream has been {} since {} (grace {} ms)",
                                  connected_ ? "silent" : "down", since_, grace_.count());
    return r;
  }
  r.reason = "ReflectionStreamDown";
  r.message = fmt::format("the reflection stream to the provider has been {} since {} (grace {} ms)",
                          connected_ ? "silent" : "down", since_, grace_.count());
  return r;
}

}  // namespace strait::vnode

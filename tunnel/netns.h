#pragma once
// Private to tunnel/: running code inside another network namespace. A thread that has
// setns()'d into a namespace creates its sockets, TUN interfaces and threads there, and they
// keep that namespace for their whole life, whatever thread uses them later.

#include <functional>
#include <string>

#include "base/status.h"

namespace strait::tunnel {

// Runs `fn` on a new thread that has joined the network namespace at `netnsPath` (a path such
// as /run/netns/NAME or /proc/PID/ns/net) and returns what `fn` returned once the thread has
// ended. An empty path runs `fn` on the calling thread, in the caller's namespace. Error
// (Unavailable, naming the path) when the namespace cannot be opened or entered; `fn` is not
// run then. Blocks; may be called from any thread.
base::Status runInNetns(const std::string& netnsPath, const std::function<base::Status()>& fn);

}  // namespace strait::tunnel

#pragma once
// Child processes of `strait demo`: each is started in its own process group (so a Ctrl-C
// on the terminal reaches only the demo, which then stops its children itself, by pid) with
// PR_SET_PDEATHSIG so that none outlives a demo that is killed outright. stdout and stderr go
// to files in the demo folder.
//
// Not thread-safe: used from the demo's main thread only. The abort flag may be set from a
// signal handler.

#include <sys/types.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <string>
#include <vector>

namespace strait::cmd {

class ChildProcess {
 public:
  ChildProcess(std::string label, std::vector<std::string> argv, std::string logPath)
      : label_(std::move(label)), argv_(std::move(argv)), logPath_(std::move(logPath)) {}
  ~ChildProcess() { stop(); }
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;

  // fork + exec; stdout and stderr appended to logPath. "" or what failed. Call once.
  std::string start();
  // True while the child has not exited (reaps it when it has).
  bool running();
  // SIGTERM to the child, wait up to `grace`, then SIGKILL; reaps it. Idempotent.
  void stop(std::chrono::milliseconds grace = std::chrono::seconds(10));
  // Exit status once the child ended: its code, or 128+signal. -1 before.
  int exitCode() const { return exitCode_; }
  pid_t pid() const { return pid_; }
  const std::string& label() const { return label_; }
  const std::string& logPath() const { return logPath_; }
  // The last `maxLines` lines of the log, for error messages.
  std::string logTail(size_t maxLines = 15) const;

 private:
  std::string label_;
  std::vector<std::string> argv_;
  std::string logPath_;
  pid_t pid_ = -1;
  int exitCode_ = -1;
};

// Polls `ready` every 100 ms until it returns true (true), `deadline` passes or `abort` is
// set (false).
bool pollUntil(const std::function<bool()>& ready, std::chrono::milliseconds deadline,
               const std::atomic<bool>& abort);

// Runs the child to completion, polling every 100 ms; stops it when `abort` is set or
// `deadline` passes. Returns its exit code, or -1 if stopped early (its log says why).
int runToCompletion(ChildProcess& child, std::chrono::milliseconds deadline,
                    const std::atomic<bool>& abort);

// The path of the running strait binary (/proc/self/exe), so that children run the same
// build. "" if it cannot be read.
std::string selfExecutable();

}  // namespace strait::cmd

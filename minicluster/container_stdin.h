#pragma once
// A container's input (private to minicluster/): what the process runtime keeps for a
// container whose spec says `stdin: true` or `tty: true`, so that `kubectl attach` can reach
// it later.
//   - stdin without tty: a pipe; the child reads its read end, the runtime keeps the write end
//     open for the life of the container instance (a `cat` waits, it does not see end of
//     input), attach sessions write to it. `stdinOnce`: the write end is closed when the
//     first attach session that used stdin detaches (or ends its input), and stays closed.
//   - tty: a pseudo-terminal; the child's stdin, stdout and stderr are its terminal, and a
//     thread copies what the container writes to the terminal into the container's log file,
//     so logs and attach read the same file as for other containers. Input is written to the
//     terminal; ending the input sends ^D.
//
// Thread-safe: write(), endInput() and resize() from attach sessions while the runtime holds
// it. Created by the runtime's loop thread before the launch.

#include <atomic>
#include <memory>
#include <string>
#include <string_view>
#include <thread>

#include "base/thread_annotations.h"
#include "kube/status.h"

namespace strait::minicluster {

class ContainerStdin {
 public:
  // Opens the pipe or the terminal. `logFd` (tty only) is duplicated: the copy thread appends
  // the terminal's output to it. Unavailable when the pipe or terminal cannot be made.
  static kube::Result<std::shared_ptr<ContainerStdin>> open(bool stdin, bool stdinOnce, bool tty,
                                                            int logFd);
  ~ContainerStdin();
  ContainerStdin(const ContainerStdin&) = delete;
  ContainerStdin& operator=(const ContainerStdin&) = delete;

  // For the launch: the descriptor the child reads (LaunchSpec::stdinFd; -1 with a tty), and
  // the terminal it opens (LaunchSpec::ttyPath; "" without). Call releaseChildEnd() once the
  // child was started (or failed to start): the parent then holds only its own end.
  int childFd() const { return childFd_; }
  const std::string& ttyPath() const { return ttyPath_; }
  void releaseChildEnd();

  // Whether the container reads input at all (spec stdin), and whether it runs on a terminal.
  bool acceptsInput() const { return stdin_; }
  bool tty() const { return tty_; }
  bool once() const { return once_; }

  // Writes all of `data` to the container's input. False once the input is closed (stdinOnce
  // after the first session, or the container is gone).
  bool write(std::string_view data);
  // An attach session that used stdin ended its input or detached: closes the input when
  // stdinOnce (a terminal gets ^D instead), otherwise does nothing.
  void sessionEnded();
  // A terminal's new size (no-op without a tty).
  void resize(unsigned width, unsigned height);

 private:
  ContainerStdin(bool stdin, bool once, bool tty) : stdin_(stdin), once_(once), tty_(tty) {}
  void copyTerminalOutput();

  const bool stdin_, once_, tty_;
  int childFd_ = -1;
  std::string ttyPath_;
  int logFd_ = -1;  // tty: the log the copy thread appends to
  std::thread copier_;
  std::atomic<bool> stopping_{false};

  base::Mutex mu_;
  int inputFd_ GUARDED_BY(mu_) = -1;  // the pipe's write end, or the terminal's master
  bool closed_ GUARDED_BY(mu_) = false;
};

}  // namespace strait::minicluster

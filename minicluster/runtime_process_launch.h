#pragma once
// Starting a process inside a Pod's sandbox (private to minicluster/): the process runtime's
// containers and the kubelet API's exec sessions both enter the Pod this way.

#include <sys/types.h>

#include <string>
#include <utility>
#include <vector>

#include "kube/status.h"

namespace strait::minicluster {

// A directory or file bind-mounted into a container's mount namespace (a volumeMount).
struct BindMount {
  std::string source, target;
  bool readOnly = false;
};

struct LaunchSpec {
  std::vector<std::string> argv;                          // argv[0] searched in PATH
  std::vector<std::pair<std::string, std::string>> env;  // the whole environment
  std::string netnsPath;   // network namespace to join; "" = stay
  std::string hostname;    // a new UTS namespace with this hostname; "" = keep
  std::string workingDir;  // "" = "/"
  // stdin, stdout, stderr of the child (descriptors of the caller; -1 = /dev/null). The
  // child gets copies; the caller keeps and closes its own.
  int stdinFd = -1, stdoutFd = -1, stderrFd = -1;
  // Open this terminal as stdin/stdout/stderr and controlling terminal (exec -t); overrides
  // the three descriptors.
  std::string ttyPath;
  // Files bind-mounted over others (source, target) in a mount namespace of the process's
  // own (resolv.conf, hosts); empty = the host's mount namespace.
  std::vector<std::pair<std::string, std::string>> bindFiles;
  // Volumes bind-mounted (recursively) in that mount namespace after the files, in order;
  // a readOnly one is remounted read-only. A mount that fails fails the launch (exit 127).
  std::vector<BindMount> mounts;
  // cgroup.procs files the child joins (writes "0" to) before anything else; failing to
  // join one fails the launch (exit 127). See runtime_process_cgroup.h.
  std::vector<std::string> cgroupProcs;
  // argv[0] is a file of the host (a --local-image binary, strait itself for agnhost): it is
  // opened before the volumes are mounted and executed from that descriptor, so a volume
  // over its directory (an emptyDir at /tmp) does not hide it.
  bool hostExecutable = false;
};

// Forks and execs `spec` in a new session (so the whole process group can be signalled
// with kill(-pid, ...)); the child dies with the calling thread (PR_SET_PDEATHSIG). When
// exec fails the child writes why to its stderr and exits 127. Returns the child's pid, or
// an error when the namespace cannot be opened or fork fails. Never blocks on the child.
kube::Result<pid_t> launchInSandbox(const LaunchSpec& spec);

// The exit code of a wait status: the exit status, or 128 + signal.
int exitCodeOf(int waitStatus);

}  // namespace strait::minicluster

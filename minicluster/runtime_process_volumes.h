#pragma once
// Volumes of the process runtime (private to minicluster/), as a kubelet's volume plugins
// set them up: configMap, secret, projected (serviceAccountToken, configMap, secret,
// downwardAPI), downwardAPI and emptyDir volumes live in a directory per Pod under the
// runtime's run directory and are bind-mounted at each volumeMount's mountPath inside the
// container's own mount namespace (the host's mount namespace is not changed; a mount point
// the host lacks is created as an empty directory, or an empty file for a subPath file, and
// removed when the runtime stops). Contents are written as the kubelet's AtomicWriter
// writes them: a timestamped directory, a `..data` symlink to it swapped atomically on each
// change, and one symlink per top-level entry through `..data`, so a mounted (non-subPath)
// volume sees ConfigMap and Secret updates at once and never half-written.
//
// Not thread-safe: one owner (the runtime's loop thread) per PodVolumes.

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "kube/quantity.h"
#include "kube/status.h"
#include "minicluster/runtime_process_launch.h"

namespace strait::minicluster {

// What volume contents and downward values are read from.
struct VolumeSources {
  // A ConfigMap or Secret ("configmaps" or "secrets") of the Pod's namespace, or nullopt
  // when it does not exist.
  std::function<std::optional<nlohmann::json>(const std::string& resource,
                                              const std::string& name)>
      get;
  // The node's allocatable resources: what limits.cpu / limits.memory read when the
  // container sets no limit.
  std::map<std::string, kube::Quantity> allocatable;
  // The token of a serviceAccountToken projection for `audience` ("" = the API server's).
  std::function<std::string(const std::string& audience, int64_t expirationSeconds)> token;
};

// One file of a volume: path relative to the volume's root, contents, permission bits.
struct VolumeFile {
  std::string path, data;
  int mode = 0644;
};

// The value of a downward-API fieldRef `fieldPath` of `pod` (metadata.name, namespace, uid,
// labels, annotations, labels['k'], annotations['k'], spec.nodeName, spec.serviceAccountName,
// status.hostIP(s), status.podIP(s)), or an error naming an unsupported path. `labels` and
// `annotations` are the kubelet's `key="value"` lines, sorted by key.
kube::Result<std::string> downwardFieldValue(const nlohmann::json& pod, const std::string& fieldPath);

// The value of a resourceFieldRef (limits.cpu, requests.cpu, limits.memory,
// requests.memory, limits/requests.ephemeral-storage) for `container` (a core/v1 Container),
// divided by its divisor and rounded up as the kubelet does; a limit the container does not
// set reads the node's allocatable. Error for an unknown resource or a bad divisor.
kube::Result<std::string> resourceFieldValue(const nlohmann::json& ref, const nlohmann::json& container,
                                             const std::map<std::string, kube::Quantity>& allocatable);

// The files of a configMap, secret, projected or downwardAPI `volume` (a core/v1 Volume) of
// `pod`. Error (the message the kubelet's FailedMount event carries, e.g. `configmap "x" not
// found`) when a referenced object or key is missing and not optional.
kube::Result<std::vector<VolumeFile>> volumeFiles(const nlohmann::json& volume,
                                                  const nlohmann::json& pod,
                                                  const VolumeSources& sources);

// Writes `files` into `dir` as the kubelet's AtomicWriter: true when the contents changed
// (the `..data` link was swapped), false when they were already there. Error when a path is
// absolute or climbs out with "..", or the file system refuses.
kube::Result<bool> writeVolumeAtomically(const std::string& dir, const std::vector<VolumeFile>& files);

// Mount points made on the host are noted in this file (one path a line) so that whichever
// process-runtime minicluster stops, starts or cleans up last removes them.
inline constexpr const char* kMountPointsFile = "/run/strait/mountpoints";

// Removes the noted mount points that are still empty (deepest first) and forgets them, but
// only when no process-runtime minicluster other than the one holding `ownLockPath` runs
// (their lock files under /run/strait are held): a mount point may be in use by another
// cluster's containers. Returns how many were removed. Blocks on the file system only.
int sweepMountPoints(const std::string& ownLockPath);

// The volumes of one Pod, under `dir` (one subdirectory per volume).
class PodVolumes {
 public:
  PodVolumes() = default;
  explicit PodVolumes(std::string dir) : dir_(std::move(dir)) {}

  // Creates every volume of `pod` (emptyDir directories, a tmpfs for medium Memory, the
  // files of the others). Error with the FailedMount message of the first volume that cannot
  // be set up; call again to retry (what was set up stays).
  kube::Status setUp(const nlohmann::json& pod, const VolumeSources& sources);

  // Rewrites the files of configMap, secret, projected and downwardAPI volumes whose sources
  // changed; a serviceAccountToken is reused until 80% of its life, then renewed. A volume
  // whose source went missing keeps its last contents. Returns the names of the volumes that
  // changed.
  std::vector<std::string> refresh(const nlohmann::json& pod, const VolumeSources& sources);

  // The bind mounts of `container` (a core/v1 Container of the Pod passed to setUp), sorted
  // so that a mount point inside another comes after it. Creates the mount points the host
  // lacks (remembered in `createdMountPoints`). Error for a volumeMount naming no volume, a
  // subPath leaving the volume, or a mount point that cannot be created.
  kube::Result<std::vector<BindMount>> mountsFor(const nlohmann::json& pod,
                                                 const nlohmann::json& container,
                                                 std::vector<std::string>& createdMountPoints);

  // Unmounts tmpfs volumes and removes the Pod's volume directory. Idempotent.
  void tearDown();

  const std::string& dir() const { return dir_; }

 private:
  std::string dir_;
  std::vector<std::string> tmpfs_;  // mounted medium-Memory emptyDirs
  int subPathCopies_ = 0;
  // `sources` whose token() reuses this volume's last token until 80% of its life.
  VolumeSources withCachedToken(const std::string& volume, const VolumeSources& sources);
  struct CachedToken {
    std::string token;
    std::chrono::steady_clock::time_point renewAt;
  };
  std::map<std::string, CachedToken> tokens_;  // by volume and audience
};

}  // namespace strait::minicluster

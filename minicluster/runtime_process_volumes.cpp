// Volumes of the process runtime: what each volume type holds, the AtomicWriter layout, and
// the bind mounts of a container (see runtime_process_volumes.h).
#include "minicluster/runtime_process_volumes.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "kube/base64.h"

namespace strait::minicluster {
namespace {

using kube::Code;
using kube::makeError;
using nlohmann::json;
namespace fs = std::filesystem;

std::string str(const json& o, const char* k) {
  if (!o.is_object() || !o.contains(k) || !o[k].is_string()) return {};
  return o[k].get<std::string>();
}

const json& obj(const json& o, const char* k) {
  static const json empty = json::object();
  if (!o.is_object() || !o.contains(k) || !o[k].is_object()) return empty;
  return o[k];
}

const json& arr(const json& o, const char* k) {
  static const json empty = json::array();
  if (!o.is_object() || !o.contains(k) || !o[k].is_array()) return empty;
  return o[k];
}

int modeOf(const json& o, const char* k, int dflt) {
  if (o.is_object() && o.contains(k) && o[k].is_number_integer()) return o[k].get<int>() & 07777;
  return dflt;
}

// Go's %q of a string, as the kubelet writes label and annotation values.
std::string goQuote(const std::string& s) {
  std::string out = "\"";
  for (unsigned char c : s) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\t': out += "\\t"; break;
      case '\r': out += "\\r"; break;
      default:
        if (c < 0x20 || c == 0x7f) {
          char buf[8];
          std::snprintf(buf, sizeof(buf), "\\x%02x", c);
          out += buf;
        } else {
          out += static_cast<char>(c);
        }
    }
  }
  return out + "\"";
}

std::string mapLines(const json& m) {
  std::map<std::string, std::string> sorted;
  if (m.is_object()) {
    for (const auto& [k, v] : m.items()) {
      if (v.is_string()) sorted[k] = v.get<std::string>();
    }
  }
  std::string out;
  for (const auto& [k, v] : sorted) out += (out.empty() ? "" : "\n") + k + "=" + goQuote(v);
  return out;
}

// "metadata.labels['app']" -> ("metadata.labels", "app").
std::optional<std::pair<std::string, std::string>> subscript(const std::string& path) {
  auto open = path.find("['");
  if (open == std::string::npos || path.size() < open + 4 || path.compare(path.size() - 2, 2, "']") != 0) {
    return std::nullopt;
  }
  return std::make_pair(path.substr(0, open), path.substr(open + 2, path.size() - open - 4));
}

std::string ipsOf(const json& status, const char* list, const char* single) {
  std::string out;
  for (const auto& ip : arr(status, list)) {
    std::string a = str(ip, "ip");
    if (!a.empty()) out += (out.empty() ? "" : ",") + a;
  }
  return out.empty() ? str(status, single) : out;
}

// Key -> bytes of a ConfigMap (data and binaryData) or Secret (data, base64-decoded).
std::map<std::string, std::string> keysOf(const json& o, bool secret) {
  std::map<std::string, std::string> out;
  for (const auto& [k, v] : obj(o, "data").items()) {
    if (!v.is_string()) continue;
    if (secret) {
      out[k] = kube::base64Decode(v.get<std::string>()).value_or("");
    } else {
      out[k] = v.get<std::string>();
    }
  }
  if (!secret) {
    for (const auto& [k, v] : obj(o, "binaryData").items()) {
      if (v.is_string()) out[k] = kube::base64Decode(v.get<std::string>()).value_or("");
    }
  }
  return out;
}

// The files of a configMap or secret source (volume or projection); `projected` sources use
// `defaultMode` of the projected volume.
kube::Status keyFiles(const json& src, bool secret, int defaultMode, const VolumeSources& sources,
                      std::vector<VolumeFile>& out) {
  std::string name = str(src, secret ? "secretName" : "name");
  if (secret && name.empty()) name = str(src, "name");  // a projected secret names it "name"
  bool optional = src.is_object() && src.value("optional", false);
  std::optional<json> o = sources.get ? sources.get(secret ? "secrets" : "configmaps", name)
                                      : std::nullopt;
  const char* kind = secret ? "secret" : "configmap";
  if (!o) {
    if (optional) return kube::Status::OK();
    return makeError(Code::NotFound, std::string(kind) + " \"" + name + "\" not found");
  }
  auto keys = keysOf(*o, secret);
  const json& items = arr(src, "items");
  if (items.empty()) {
    for (const auto& [k, v] : keys) out.push_back({k, v, defaultMode});
    return kube::Status::OK();
  }
  for (const auto& it : items) {
    std::string key = str(it, "key");
    auto k = keys.find(key);
    if (k == keys.end()) {
      if (optional) continue;
      return makeError(Code::NotFound, std::string(kind) + " references non-existent " +
                                           (secret ? "secret" : "config") + " key: " + key);
    }
    out.push_back({str(it, "path"), k->second, modeOf(it, "mode", defaultMode)});
  }
  return kube::Status::OK();
}

const json* containerNamed(const json& pod, const std::string& name) {
  const json& spec = obj(pod, "spec");
  for (const char* list : {"containers", "initContainers"}) {
    for (const auto& c : arr(spec, list)) {
      if (str(c, "name") == name) return &c;
    }
  }
  return nullptr;
}

kube::Status downwardFiles(const json& src, const json& pod, int defaultMode,
                           const VolumeSources& sources, std::vector<VolumeFile>& out) {
  for (const auto& it : arr(src, "items")) {
    std::string path = str(it, "path");
    int mode = modeOf(it, "mode", defaultMode);
    if (it.contains("fieldRef")) {
      auto v = downwardFieldValue(pod, str(obj(it, "fieldRef"), "fieldPath"));
      if (!v) return v.error();
      out.push_back({path, *v, mode});
    } else if (it.contains("resourceFieldRef")) {
      const json& ref = obj(it, "resourceFieldRef");
      const json* c = containerNamed(pod, str(ref, "containerName"));
      if (!c) {
        return makeError(Code::Invalid, "resourceFieldRef names no container \"" +
                                            str(ref, "containerName") + "\"");
      }
      auto v = resourceFieldValue(ref, *c, sources.allocatable);
      if (!v) return v.error();
      out.push_back({path, *v, mode});
    }
  }
  return kube::Status::OK();
}

// A relative path inside a volume: not absolute, no "..", not empty.
bool safeRelative(const std::string& p) {
  if (p.empty() || p[0] == '/') return false;
  for (const auto& part : fs::path(p)) {
    if (part == "..") return false;
  }
  return true;
}

std::optional<std::string> readAll(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  if (!in) return std::nullopt;
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// path -> (data, mode) of every regular file under `dir`.
std::map<std::string, std::pair<std::string, int>> snapshotDir(const fs::path& dir) {
  std::map<std::string, std::pair<std::string, int>> out;
  std::error_code ec;
  for (auto it = fs::recursive_directory_iterator(dir, ec); !ec && it != fs::end(it); it.increment(ec)) {
    if (!it->is_regular_file()) continue;
    struct stat st {};
    if (::stat(it->path().c_str(), &st) != 0) continue;
    out[fs::relative(it->path(), dir).string()] = {readAll(it->path()).value_or(""),
                                                   static_cast<int>(st.st_mode & 07777)};
  }
  return out;
}

std::string timestampDirName() {
  auto now = std::chrono::system_clock::now();
  std::time_t t = std::chrono::system_clock::to_time_t(now);
  auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(now.time_since_epoch()).count() %
            1000000000;
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[64];
  std::snprintf(buf, sizeof(buf), "..%04d_%02d_%02d_%02d_%02d_%02d.%09lld", tm.tm_year + 1900,
                tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
                static_cast<long long>(ns));
  return buf;
}

bool isApiDataVolume(const json& v) {
  return v.contains("configMap") || v.contains("secret") || v.contains("projected") ||
         v.contains("downwardAPI");
}

// Appends `path` to kMountPointsFile (under an exclusive lock on it).
void recordMountPoint(const std::string& path) {
  int fd = ::open(kMountPointsFile, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
  if (fd < 0) return;
  ::flock(fd, LOCK_EX);
  std::string line = path + "\n";
  (void)!::write(fd, line.data(), line.size());
  ::close(fd);
}

// Creates `p` (a directory, or an empty file when `file`) and the parents it lacks, noting
// each path created in `created`.
kube::Status createMountPoint(const fs::path& p, bool file, std::vector<std::string>& created) {
  std::error_code ec;
  if (fs::exists(p, ec)) return kube::Status::OK();
  std::vector<fs::path> missing;
  for (fs::path cur = file ? p.parent_path() : p; !cur.empty() && !fs::exists(cur, ec);
       cur = cur.parent_path()) {
    missing.push_back(cur);
    if (cur == cur.parent_path()) break;
  }
  for (auto it = missing.rbegin(); it != missing.rend(); ++it) {
    if (!fs::create_directory(*it, ec) && ec) {
      return makeError(Code::Internal, "cannot create mount point " + it->string() + ": " + ec.message());
    }
    created.push_back(it->string());
    recordMountPoint(it->string());
  }
  if (file) {
    std::ofstream(p.string()).flush();
    if (!fs::exists(p, ec)) return makeError(Code::Internal, "cannot create mount point " + p.string());
    created.push_back(p.string());
    recordMountPoint(p.string());
  }
  return kube::Status::OK();
}

}  // namespace

int sweepMountPoints(const std::string& ownLockPath) {
  std::error_code ec;
  for (auto it = fs::directory_iterator("/run/strait", ec); !ec && it != fs::end(it); it.increment(ec)) {
    const fs::path& lock = it->path();
    if (lock.extension() != ".lock" || lock == fs::path(ownLockPath)) continue;
    int fd = ::open(lock.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) continue;
    bool held = ::flock(fd, LOCK_SH | LOCK_NB) != 0;
    ::close(fd);
    if (held) return 0;  // another cluster runs: its containers may use these mount points
  }
  int fd = ::open(kMountPointsFile, O_RDWR | O_CLOEXEC);
  if (fd < 0) return 0;
  ::flock(fd, LOCK_EX);
  std::string text = readAll(kMountPointsFile).value_or("");
  std::vector<std::string> paths;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    if (!line.empty() && line[0] == '/') paths.push_back(line);
  }
  // Deepest first; a path noted twice is removed once.
  std::sort(paths.begin(), paths.end(), [](const std::string& a, const std::string& b) {
    return std::count(a.begin(), a.end(), '/') > std::count(b.begin(), b.end(), '/');
  });
  paths.erase(std::unique(paths.begin(), paths.end()), paths.end());
  int removed = 0;
  for (const auto& p : paths) {
    bool empty = fs::is_directory(p, ec) ? fs::is_empty(p, ec) : (fs::exists(p, ec) && fs::file_size(p, ec) == 0);
    if (empty && fs::remove(p, ec)) ++removed;
  }
  if (::ftruncate(fd, 0) != 0) {
    // Left as is: the next sweep finds the same paths gone.
  }
  ::close(fd);
  return removed;
}

kube::Result<std::string> downwardFieldValue(const json& pod, const std::string& fieldPath) {
  const json& md = obj(pod, "metadata");
  const json& spec = obj(pod, "spec");
  const json& status = obj(pod, "status");
  if (auto sub = subscript(fieldPath)) {
    if (sub->first == "metadata.labels") return str(obj(md, "labels"), sub->second.c_str());
    if (sub->first == "metadata.annotations") return str(obj(md, "annotations"), sub->second.c_str());
  }
  if (fieldPath == "metadata.name") return str(md, "name");
  if (fieldPath == "metadata.namespace") return str(md, "namespace");
  if (fieldPath == "metadata.uid") return str(md, "uid");
  if (fieldPath == "metadata.labels") return mapLines(obj(md, "labels"));
  if (fieldPath == "metadata.annotations") return mapLines(obj(md, "annotations"));
  if (fieldPath == "spec.nodeName") return str(spec, "nodeName");
  if (fieldPath == "spec.serviceAccountName") return str(spec, "serviceAccountName");
  if (fieldPath == "status.hostIP") return str(status, "hostIP");
  if (fieldPath == "status.hostIPs") return ipsOf(status, "hostIPs", "hostIP");
  if (fieldPath == "status.podIP") return str(status, "podIP");
  if (fieldPath == "status.podIPs") return ipsOf(status, "podIPs", "podIP");
  return makeError(Code::Invalid, "unsupported fieldPath: " + fieldPath);
}

kube::Result<std::string> resourceFieldValue(const json& ref, const json& container,
                                             const std::map<std::string, kube::Quantity>& allocatable) {
  std::string resource = str(ref, "resource");
  auto dot = resource.find('.');
  if (dot == std::string::npos) return makeError(Code::Invalid, "unsupported container resource: " + resource);
  std::string kind = resource.substr(0, dot), name = resource.substr(dot + 1);
  if ((kind != "limits" && kind != "requests") ||
      (name != "cpu" && name != "memory" && name != "ephemeral-storage")) {
    return makeError(Code::Invalid, "unsupported container resource: " + resource);
  }
  kube::Quantity divisor = kube::Quantity::fromInt(1);
  if (ref.contains("divisor")) {
    const json& d = ref["divisor"];
    auto q = kube::Quantity::parse(d.is_string() ? d.get<std::string>() : d.dump());
    if (!q || q->isZero() || q->sign() < 0) {
      return makeError(Code::Invalid, "invalid divisor for " + resource);
    }
    divisor = *q;
  }
  const json& list = obj(obj(container, "resources"), kind.c_str());
  std::optional<kube::Quantity> value;
  if (list.contains(name)) {
    const json& v = list[name];
    auto q = kube::Quantity::parse(v.is_string() ? v.get<std::string>() : v.dump());
    if (q) value = *q;
  }
  if (!value && kind == "limits") {
    auto a = allocatable.find(name);
    if (a != allocatable.end()) value = a->second;
  }
  if (!value) value = kube::Quantity();
  // As the kubelet: cpu in millicores over the divisor's millicores, memory and storage in
  // bytes over the divisor, both rounded up.
  int64_t out;
  if (name == "cpu") {
    int64_t m = value->milliValue(), dm = divisor.milliValue();
    out = (m + dm - 1) / dm;
  } else {
    int64_t b = value->value(), db = divisor.value();
    if (db <= 0) db = 1;
    out = (b + db - 1) / db;
  }
  return std::to_string(out);
}

kube::Result<std::vector<VolumeFile>> volumeFiles(const json& volume, const json& pod,
                                                  const VolumeSources& sources) {
  std::vector<VolumeFile> out;
  kube::Status s = kube::Status::OK();
  if (volume.contains("configMap")) {
    const json& src = obj(volume, "configMap");
    s = keyFiles(src, false, modeOf(src, "defaultMode", 0644), sources, out);
  } else if (volume.contains("secret")) {
    const json& src = obj(volume, "secret");
    s = keyFiles(src, true, modeOf(src, "defaultMode", 0644), sources, out);
  } else if (volume.contains("downwardAPI")) {
    const json& src = obj(volume, "downwardAPI");
    s = downwardFiles(src, pod, modeOf(src, "defaultMode", 0644), sources, out);
  } else if (volume.contains("projected")) {
    const json& src = obj(volume, "projected");
    int mode = modeOf(src, "defaultMode", 0644);
    for (const auto& p : arr(src, "sources")) {
      if (!s) break;
      if (p.contains("configMap")) {
        s = keyFiles(obj(p, "configMap"), false, mode, sources, out);
      } else if (p.contains("secret")) {
        s = keyFiles(obj(p, "secret"), true, mode, sources, out);
      } else if (p.contains("downwardAPI")) {
        s = downwardFiles(obj(p, "downwardAPI"), pod, mode, sources, out);
      } else if (p.contains("serviceAccountToken")) {
        const json& t = obj(p, "serviceAccountToken");
        int64_t exp = t.value("expirationSeconds", int64_t{3600});
        std::string token = sources.token ? sources.token(str(t, "audience"), exp) : "";
        if (token.empty()) {
          s = makeError(Code::Unavailable, "failed to fetch token: no token issuer");
        } else {
          out.push_back({str(t, "path"), token, mode});
        }
      }
    }
  } else {
    return makeError(Code::Invalid, "not a configMap, secret, projected or downwardAPI volume");
  }
  if (!s) return s.error();
  for (const auto& f : out) {
    if (!safeRelative(f.path)) return makeError(Code::Invalid, "invalid path in volume: \"" + f.path + "\"");
  }
  return out;
}

kube::Result<bool> writeVolumeAtomically(const std::string& dirName, const std::vector<VolumeFile>& files) {
  fs::path dir(dirName);
  std::map<std::string, std::pair<std::string, int>> want;
  std::set<std::string> top;
  for (const auto& f : files) {
    if (!safeRelative(f.path)) return makeError(Code::Invalid, "invalid path in volume: \"" + f.path + "\"");
    std::string norm = fs::path(f.path).lexically_normal().string();
    want[norm] = {f.data, f.mode};
    top.insert(fs::path(norm).begin()->string());
  }
  std::error_code ec;
  fs::create_directories(dir, ec);
  ::chmod(dir.c_str(), 0755);
  fs::path data = dir / "..data";
  std::string old;
  if (fs::is_symlink(data, ec)) {
    old = fs::read_symlink(data, ec).string();
    if (!old.empty() && snapshotDir(dir / old) == want) return false;
  }
  std::string ts = timestampDirName();
  fs::path tsDir = dir / ts;
  if (!fs::create_directory(tsDir, ec)) {
    return makeError(Code::Internal, "cannot create " + tsDir.string() + ": " + ec.message());
  }
  ::chmod(tsDir.c_str(), 0755);
  for (const auto& [path, content] : want) {
    fs::path p = tsDir / path;
    fs::create_directories(p.parent_path(), ec);
    std::ofstream outFile(p, std::ios::binary | std::ios::trunc);
    outFile << content.first;
    outFile.close();
    if (!outFile) return makeError(Code::Internal, "cannot write " + p.string());
    ::chmod(p.c_str(), static_cast<mode_t>(content.second));
  }
  fs::path tmp = dir / "..data_tmp";
  fs::remove(tmp, ec);
  fs::create_symlink(ts, tmp, ec);
  if (ec) return makeError(Code::Internal, "cannot link " + tmp.string() + ": " + ec.message());
  fs::rename(tmp, data, ec);  // the atomic swap
  if (ec) return makeError(Code::Internal, "cannot swap " + data.string() + ": " + ec.message());
  // User-visible entries: one symlink per top-level name through ..data.
  for (const auto& name : top) {
    fs::path link = dir / name;
    if (!fs::is_symlink(link, ec)) {
      fs::remove_all(link, ec);
      fs::create_symlink(fs::path("..data") / name, link, ec);
    }
  }
  for (auto it = fs::directory_iterator(dir, ec); !ec && it != fs::end(it); it.increment(ec)) {
    std::string name = it->path().filename().string();
    if (name.rfind("..", 0) == 0) continue;
    if (!top.count(name)) fs::remove_all(it->path(), ec);
  }
  if (!old.empty() && old != ts) fs::remove_all(dir / old, ec);
  return true;
}

VolumeSources PodVolumes::withCachedToken(const std::string& volume, const VolumeSources& sources) {
  VolumeSources s = sources;
  if (!sources.token) return s;
  s.token = [this, volume, next = sources.token](const std::string& audience, int64_t exp) {
    // As the kubelet: a token is reused until 80% of its life, then renewed.
    auto now = std::chrono::steady_clock::now();
    CachedToken& c = tokens_[volume + "\n" + audience];
    if (c.token.empty() || now >= c.renewAt) {
      c.token = next(audience, exp);
      c.renewAt = now + std::chrono::seconds(std::max<int64_t>(exp, 600) * 8 / 10);
    }
    return c.token;
  };
  return s;
}

kube::Status PodVolumes::setUp(const json& pod, const VolumeSources& sources) {
  std::error_code ec;
  fs::create_directories(dir_, ec);
  for (const auto& v : arr(obj(pod, "spec"), "volumes")) {
    std::string name = str(v, "name");
    std::string path = dir_ + "/" + name;
    if (v.contains("emptyDir")) {
      if (fs::exists(path, ec)) continue;
      fs::create_directories(path, ec);
      ::chmod(path.c_str(), 0777);
      const json& ed = obj(v, "emptyDir");
      if (str(ed, "medium") == "Memory") {
        std::string opts = "mode=1777";
        if (ed.contains("sizeLimit")) {
          const json& l = ed["sizeLimit"];
          auto q = kube::Quantity::parse(l.is_string() ? l.get<std::string>() : l.dump());
          if (q && q->value() > 0) opts += ",size=" + std::to_string(q->value());
        }
        if (::mount("tmpfs", path.c_str(), "tmpfs", MS_NOSUID | MS_NODEV, opts.c_str()) != 0) {
          return makeError(Code::Internal, "MountVolume.SetUp failed for volume \"" + name +
                                               "\" : cannot mount tmpfs: " + std::strerror(errno));
        }
        tmpfs_.push_back(path);
      }
      continue;
    }
    if (!isApiDataVolume(v)) continue;
    auto files = volumeFiles(v, pod, withCachedToken(name, sources));
    if (!files) {
      return makeError(files.error().code, "MountVolume.SetUp failed for volume \"" + name +
                                               "\" : " + files.error().message);
    }
    auto w = writeVolumeAtomically(path, *files);
    if (!w) {
      return makeError(w.error().code, "MountVolume.SetUp failed for volume \"" + name +
                                           "\" : " + w.error().message);
    }
  }
  return kube::Status::OK();
}

std::vector<std::string> PodVolumes::refresh(const json& pod, const VolumeSources& sources) {
  std::vector<std::string> changed;
  for (const auto& v : arr(obj(pod, "spec"), "volumes")) {
    if (!isApiDataVolume(v)) continue;
    std::string name = str(v, "name");
    auto files = volumeFiles(v, pod, withCachedToken(name, sources));
    if (!files) continue;
    auto w = writeVolumeAtomically(dir_ + "/" + name, *files);
    if (w && *w) changed.push_back(name);
  }
  return changed;
}

kube::Result<std::vector<BindMount>> PodVolumes::mountsFor(const json& pod, const json& container,
                                                           std::vector<std::string>& created) {
  std::map<std::string, json> volumes;
  for (const auto& v : arr(obj(pod, "spec"), "volumes")) volumes[str(v, "name")] = v;
  std::vector<BindMount> out;
  for (const auto& m : arr(container, "volumeMounts")) {
    std::string name = str(m, "name");
    std::string target = str(m, "mountPath");
    auto v = volumes.find(name);
    if (v == volumes.end()) return makeError(Code::Invalid, "volumeMount names no volume \"" + name + "\"");
    if (target.empty() || target[0] != '/') {
      return makeError(Code::Invalid, "mountPath of volume \"" + name + "\" is not absolute");
    }
    BindMount b;
    b.target = target;
    b.readOnly = m.value("readOnly", false);
    bool create = false;  // a subPath the kubelet creates when missing
    if (v->second.contains("emptyDir")) {
      b.source = dir_ + "/" + name;
      create = true;
    } else if (v->second.contains("hostPath")) {
      const json& hp = obj(v->second, "hostPath");
      b.source = str(hp, "path");
      std::string type = str(hp, "type");
      std::error_code ec;
      if (type == "DirectoryOrCreate" && !fs::exists(b.source, ec)) {
        fs::create_directories(b.source, ec);
        ::chmod(b.source.c_str(), 0755);
      } else if (type == "FileOrCreate" && !fs::exists(b.source, ec)) {
        fs::create_directories(fs::path(b.source).parent_path(), ec);
        std::ofstream(b.source).flush();
      }
      if (!fs::exists(b.source, ec)) {
        return makeError(Code::NotFound, "hostPath type check failed: " + b.source + " does not exist");
      }
      create = true;
    } else if (isApiDataVolume(v->second)) {
      b.source = dir_ + "/" + name;
      b.readOnly = true;  // as the kubelet: API data volumes are always read-only
    } else {
      return makeError(Code::Invalid, "volume \"" + name + "\" is of a type the process runtime does not support");
    }
    std::string sub = str(m, "subPath");
    if (!sub.empty()) {
      if (!safeRelative(sub)) {
        return makeError(Code::Invalid, "subPath \"" + sub + "\" of volume \"" + name + "\" leaves the volume");
      }
      b.source += "/" + sub;
      std::error_code ec;
      if (!fs::exists(b.source, ec)) {
        if (!create) return makeError(Code::NotFound, "subPath \"" + sub + "\" not found in volume \"" + name + "\"");
        fs::create_directories(b.source, ec);
        ::chmod(b.source.c_str(), 0777);
      }
      if (isApiDataVolume(v->second)) {
        // As upstream, a subPath of a configMap/secret/projected/downwardAPI volume does not
        // follow updates: this instance gets a copy of the entry as it is now, which stays
        // when a later update removes the timestamped directory it came from.
        std::string copy = dir_ + "/..subpaths/" + std::to_string(++subPathCopies_);
        fs::create_directories(copy, ec);
        fs::path dst = fs::path(copy) / fs::path(sub).filename();
        fs::copy(fs::canonical(b.source, ec), dst,
                 fs::copy_options::recursive | fs::copy_options::copy_symlinks, ec);
        if (ec) return makeError(Code::Internal, "cannot copy subPath \"" + sub + "\": " + ec.message());
        b.source = dst.string();
      }
    }
    std::error_code ec;
    bool file = !fs::is_directory(b.source, ec);
    if (auto s = createMountPoint(b.target, file, created); !s) return s.error();
    out.push_back(std::move(b));
  }
  std::stable_sort(out.begin(), out.end(), [](const BindMount& a, const BindMount& b) {
    auto depth = [](const std::string& p) { return std::count(p.begin(), p.end(), '/'); };
    return depth(a.target) < depth(b.target);
  });
  return out;
}

void PodVolumes::tearDown() {
  for (const auto& p : tmpfs_) ::umount2(p.c_str(), MNT_DETACH);
  tmpfs_.clear();
  if (dir_.empty()) return;
  std::error_code ec;
  fs::remove_all(dir_, ec);
}

}  // namespace strait::minicluster

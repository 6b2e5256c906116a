// WAL and snapshot files: record framing, reading with torn-tail recovery, snapshot
// write/read, and the group-commit writer. Format and locking are described in wal.h.

#include "minicluster/wal.h"

#include <fcntl.h>
#include <spdlog/spdlog.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <bit>
#include <cerrno>
#include <cstdio>
#include <cstring>

#include "base/thread_annotations.h"

namespace strait::minicluster::wal {

static_assert(std::endian::native == std::endian::little, "the WAL format is little-endian");

namespace {

constexpr std::array<uint32_t, 256> makeCrcTable() {
  std::array<uint32_t, 256> t{};
  for (uint32_t i = 0; i < 256; ++i) {
    uint32_t c = i;
    for (int k = 0; k < 8; ++k) c = (c & 1) ? 0xEDB88320u ^ (c >> 1) : c >> 1;
    t[i] = c;
  }
  return t;
}
constexpr auto kCrcTable = makeCrcTable();

Error ioError(const std::string& what, const std::string& path) {
  return kube::makeError(kube::Code::Internal, what + " " + path + ": " + std::strerror(errno));
}

void putU32(std::string& out, uint32_t v) { out.append(reinterpret_cast<const char*>(&v), 4); }
void putU64(std::string& out, uint64_t v) { out.append(reinterpret_cast<const char*>(&v), 8); }
void putStr(std::string& out, std::string_view s) {
  putU32(out, static_cast<uint32_t>(s.size()));
  out.append(s);
}
template <typename Map>
void putMap(std::string& out, const Map& m) {
  putU32(out, static_cast<uint32_t>(m.size()));
  for (const auto& [k, v] : m) {
    putStr(out, k);
    putStr(out, v);
  }
}

uint32_t getU32(const char* p) {
  uint32_t v;
  std::memcpy(&v, p, 4);
  return v;
}

// Bounds-checked payload reader.
struct Cursor {
  std::string_view in;
  bool ok = true;
  uint32_t u32() {
    if (in.size() < 4) return fail();
    uint32_t v = getU32(in.data());
    in.remove_prefix(4);
    return v;
  }
  uint64_t u64() {
    if (in.size() < 8) return fail();
    uint64_t v;
    std::memcpy(&v, in.data(), 8);
    in.remove_prefix(8);
    return v;
  }
  std::string str() {
    uint32_t n = u32();
    if (!ok || in.size() < n) return fail(), std::string();
    std::string s(in.substr(0, n));
    in.remove_prefix(n);
    return s;
  }
  template <typename Map>
  void map(Map& m) {
    uint32_t n = u32();
    for (uint32_t i = 0; ok && i < n; ++i) {
      std::string k = str();
      std::string v = str();
      if (ok) m.emplace_hint(m.end(), std::move(k), std::move(v));
    }
  }
  uint32_t fail() {
    ok = false;
    return 0;
  }
};

bool readAll(const std::string& path, std::string& out) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    ::close(fd);
    return false;
  }
  out.resize(static_cast<size_t>(st.st_size));
  size_t got = 0;
  while (got < out.size()) {
    ssize_t n = ::read(fd, out.data() + got, out.size() - got);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    got += static_cast<size_t>(n);
  }
  out.resize(got);
  ::close(fd);
  return true;
}

bool writeAll(int fd, const char* p, size_t n) {
  while (n > 0) {
    ssize_t w = ::write(fd, p, n);
    if (w < 0 && errno == EINTR) continue;
    if (w < 0) return false;
    p += w;
    n -= static_cast<size_t>(w);
  }
  return true;
}

bool allZero(std::string_view s) {
  for (char c : s) {
    if (c != 0) return false;
  }
  return true;
}

std::string numbered(std::string_view prefix, uint64_t n, std::string_view suffix) {
  char digits[32];
  std::snprintf(digits, sizeof digits, "%020llu", static_cast<unsigned long long>(n));
  std::string s(prefix);
  s += digits;
  s += suffix;
  return s;
}

}  // namespace

uint32_t crc32(const void* data, size_t n, uint32_t crc) {
  const auto* p = static_cast<const unsigned char*>(data);
  crc = ~crc;
  for (size_t i = 0; i < n; ++i) crc = kCrcTable[(crc ^ p[i]) & 0xFF] ^ (crc >> 8);
  return ~crc;
}

void encode(Op op, uint64_t rv, std::string_view key, std::string_view json, const Labels& labels,
            const Fields& fields, std::string& out) {
  size_t start = out.size();
  out.append(kHeaderSize, '\0');
  out.push_back(static_cast<char>(op));
  putU64(out, rv);
  putStr(out, key);
  putStr(out, json);
  putMap(out, labels);
  putMap(out, fields);
  uint32_t len = static_cast<uint32_t>(out.size() - start - kHeaderSize);
  uint32_t crc = crc32(out.data() + start + kHeaderSize, len);
  std::memcpy(out.data() + start, &len, 4);
  std::memcpy(out.data() + start + 4, &crc, 4);
  uint32_t hcrc = crc32(out.data() + start, 8);
  std::memcpy(out.data() + start + 8, &hcrc, 4);
}

bool decodePayload(std::string_view payload, Record& out) {
  if (payload.empty()) return false;
  auto op = static_cast<uint8_t>(payload[0]);
  if (op < 1 || op > 4) return false;
  out.op = static_cast<Op>(op);
  Cursor c{payload.substr(1)};
  out.rv = c.u64();
  out.key = c.str();
  out.json = c.str();
  out.labels.clear();
  out.fields.clear();
  c.map(out.labels);
  c.map(out.fields);
  return c.ok && c.in.empty();
}

std::string segmentName(uint64_t firstRv) { return numbered("wal-", firstRv, ".log"); }
std::string snapshotName(uint64_t rv) { return numbered("snapshot-", rv, ".snap"); }

bool parseNumbered(std::string_view name, std::string_view prefix, std::string_view suffix,
                   uint64_t& number) {
  if (name.size() != prefix.size() + 20 + suffix.size() || !name.starts_with(prefix) ||
      !name.ends_with(suffix)) {
    return false;
  }
  uint64_t n = 0;
  for (char c : name.substr(prefix.size(), 20)) {
    if (c < '0' || c > '9') return false;
    n = n * 10 + static_cast<uint64_t>(c - '0');
  }
  number = n;
  return true;
}

Status readRecords(const std::string& path, bool tolerateTornTail,
                   const std::function<Status(Record&&)>& onRecord, uint64_t* truncatedBytes) {
  if (truncatedBytes) *truncatedBytes = 0;
  std::string data;
  if (!readAll(path, data)) return ioError("cannot read", path);
  const std::string_view all(data);
  size_t off = 0;
  Record rec;
  while (off < all.size()) {
    std::string_view rest = all.substr(off);
    const char* reason = nullptr;
    bool torn = false;
    uint32_t len = 0;
    if (rest.size() < kHeaderSize) {
      reason = "record header cut short";
      torn = true;
    } else if (crc32(rest.data(), 8) != getU32(rest.data() + 8)) {
      reason = "record header checksum mismatch";
      torn = allZero(rest);
    } else if ((len = getU32(rest.data())) > kMaxPayload) {
      reason = "record length too large";
    } else if (rest.size() - kHeaderSize < len) {
      reason = "record payload cut short";
      torn = true;
    } else if (crc32(rest.data() + kHeaderSize, len) != getU32(rest.data() + 4)) {
      reason = "record payload checksum mismatch";
      // The final record of the file, or followed only by zeros: written partially.
      torn = allZero(rest.substr(kHeaderSize + len));
    } else if (!decodePayload(rest.substr(kHeaderSize, len), rec)) {
      reason = "malformed record payload";
    }
    if (reason) {
      if (!tolerateTornTail || !torn) {
        return kube::makeError(kube::Code::Internal, "corrupt record in " + path + " at offset " +
                                                         std::to_string(off) + ": " + reason);
      }
      spdlog::warn("wal torn tail dropped file={} offset={} bytes={} reason=\"{}\"", path, off,
                   rest.size(), reason);
      int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC);
      if (fd < 0) return ioError("cannot open for truncation", path);
      bool ok = ::ftruncate(fd, static_cast<off_t>(off)) == 0 && ::fsync(fd) == 0;
      ::close(fd);
      if (!ok) return ioError("cannot truncate", path);
      if (truncatedBytes) *truncatedBytes = rest.size();
      return Status::OK();
    }
    Status s = onRecord(std::move(rec));
    if (!s.ok()) return s;
    rec = Record();
    off += kHeaderSize + len;
  }
  return Status::OK();
}

Status syncDir(const std::string& dir) {
  int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return ioError("cannot open directory", dir);
  bool ok = ::fsync(fd) == 0;
  ::close(fd);
  if (!ok) return ioError("cannot fsync directory", dir);
  return Status::OK();
}

Status writeSnapshot(const std::string& dir, uint64_t rv, const std::vector<ObjectPtr>& objects) {
  const std::string final = dir + "/" + snapshotName(rv);
  const std::string tmp = final + ".tmp";
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) return ioError("cannot create", tmp);
  std::string buf;
  buf.reserve(1 << 20);
  encode(Op::SnapshotBegin, rv, std::to_string(objects.size()), {}, {}, {}, buf);
  bool ok = true;
  for (const auto& o : objects) {
    encode(Op::Put, o->rv, o->key, o->json, o->labels, o->fields, buf);
    if (buf.size() >= (1 << 20)) {
      ok = ok && writeAll(fd, buf.data(), buf.size());
      buf.clear();
    }
  }
  encode(Op::SnapshotEnd, rv, {}, {}, {}, {}, buf);
  ok = ok && writeAll(fd, buf.data(), buf.size()) && ::fsync(fd) == 0;
  if (!ok) {
    Error e = ioError("cannot write", tmp);
    ::close(fd);
    ::unlink(tmp.c_str());
    return e;
  }
  ::close(fd);
  if (::rename(tmp.c_str(), final.c_str()) != 0) return ioError("cannot rename", tmp);
  return syncDir(dir);
}

Result<uint64_t> readSnapshot(const std::string& path,
                              const std::function<void(Record&&)>& onObject) {
  enum { Begin, Objects, End } state = Begin;
  uint64_t rv = 0;
  uint64_t expected = 0;
  uint64_t seen = 0;
  auto bad = [&](const std::string& why) {
    return Status(kube::makeError(kube::Code::Internal, "corrupt snapshot " + path + ": " + why));
  };
  Status s = readRecords(
      path, /*tolerateTornTail=*/false,
      [&](Record&& r) -> Status {
        switch (state) {
          case Begin:
            if (r.op != Op::SnapshotBegin) return bad("does not start with a header record");
            rv = r.rv;
            expected = std::strtoull(r.key.c_str(), nullptr, 10);
            state = Objects;
            return Status::OK();
          case Objects:
            if (r.op == Op::SnapshotEnd) {
              if (seen != expected) {
                return bad("has " + std::to_string(seen) + " objects, header says " +
                           std::to_string(expected));
              }
              state = End;
              return Status::OK();
            }
            if (r.op != Op::Put || r.rv > rv) return bad("unexpected record in object list");
            ++seen;
            onObject(std::move(r));
            return Status::OK();
          case End:
            return bad("data after the end record");
        }
        return Status::OK();
      },
      nullptr);
  if (!s.ok()) return s.error();
  if (state != End) return bad("missing end record (incomplete file)").error();
  return rv;
}

// ---- WalWriter ----

WalWriter::~WalWriter() {
  {
    base::MutexLock lk(mu_);
    stopping_ = true;
  }
  work_.notify_all();
  if (flusher_.joinable()) flusher_.join();
  if (fd_ >= 0) ::close(fd_);
}

Status WalWriter::openSegment(const std::string& path) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
  if (fd < 0) return ioError("cannot open WAL segment", path);
  if (::fsync(fd) != 0) {
    Error e = ioError("cannot fsync WAL segment", path);
    ::close(fd);
    return e;
  }
  Status s = syncDir(dir_);
  if (!s.ok()) {
    ::close(fd);
    return s;
  }
  if (fd_ >= 0) ::close(fd_);
  fd_ = fd;
  return Status::OK();
}

Status WalWriter::start(const std::string& dir, const std::string& path) {
  dir_ = dir;
  Status s = openSegment(path);
  if (!s.ok()) return s;
  flusher_ = std::thread([this] { flushLoop(); });
  return Status::OK();
}

uint64_t WalWriter::append(std::string_view bytes) {
  base::MutexLock lk(mu_);
  pending_.append(bytes);
  appended_ += bytes.size();
  ++pendingRecords_;
  uint64_t ticket = appended_;
  if (!flushing_) work_.notify_one();
  return ticket;
}

Status WalWriter::waitDurable(uint64_t ticket) {
  base::UniqueLock lk(mu_);
  while (durable_ < ticket && failure_.empty()) done_.wait(lk);
  if (durable_ >= ticket) return Status::OK();
  return kube::makeError(kube::Code::Unavailable, "write-ahead log failed: " + failure_);
}

Status WalWriter::rotate(const std::string& path) {
  base::UniqueLock lk(mu_);
  while (!((durable_ == appended_ && !flushing_) || !failure_.empty())) done_.wait(lk);
  if (!failure_.empty()) {
    return kube::makeError(kube::Code::Unavailable, "write-ahead log failed: " + failure_);
  }
  return openSegment(path);
}

bool WalWriter::failed() {
  base::MutexLock lk(mu_);
  return !failure_.empty();
}

WalWriter::Stats WalWriter::stats() {
  base::MutexLock lk(mu_);
  return stats_;
}

void WalWriter::flushLoop() {
  std::string batch;
  base::UniqueLock lk(mu_);
  for (;;) {
    while (pending_.empty() && !stopping_) work_.wait(lk);
    if (pending_.empty() && stopping_) return;
    if (!failure_.empty()) {
      pending_.clear();
      pendingRecords_ = 0;
      continue;
    }
    if (lastBatchRecords_ > 1 && pendingRecords_ < lastBatchRecords_ && !stopping_) {
      // Group forming: give the writers released by the last fsync a moment to come back.
      auto window =
          std::min<std::chrono::microseconds>(lastSyncTime_ / 4, std::chrono::microseconds(1000));
      const auto deadline = std::chrono::steady_clock::now() + window;
      while (pendingRecords_ < lastBatchRecords_ && !stopping_) {
        if (work_.wait_until(lk, deadline) == std::cv_status::timeout) break;
      }
    }
    batch.clear();
    batch.swap(pending_);
    uint64_t target = appended_;
    lastBatchRecords_ = pendingRecords_;
    pendingRecords_ = 0;
    flushing_ = true;
    lk.unlock();
    auto syncStart = std::chrono::steady_clock::now();
    std::string err;
    if (!writeAll(fd_, batch.data(), batch.size())) {
      err = std::string("write: ") + std::strerror(errno);
    } else if (::fdatasync(fd_) != 0) {
      err = std::string("fdatasync: ") + std::strerror(errno);
    }
    auto syncTime = std::chrono::duration_cast<std::chrono::microseconds>(
        std::chrono::steady_clock::now() - syncStart);
    lk.lock();
    lastSyncTime_ = syncTime;
    flushing_ = false;
    if (err.empty()) {
      durable_ = target;
      stats_.records += lastBatchRecords_;
      ++stats_.syncs;
    } else {
      spdlog::error("wal write failed error=\"{}\"", err);
      failure_ = err;
    }
    done_.notify_all();
  }
}

}  // namespace strait::minicluster::wal

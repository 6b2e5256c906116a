#pragma once
// Write-ahead log and snapshot files of the minicluster store (private to minicluster/).
//
// On-disk record framing, shared by WAL segments and snapshot files (little-endian):
//
//   u32 payloadLen | u32 crc32(payload) | u32 crc32(first 8 header bytes) | payload
//   payload = u8 op | u64 rv | str key | str json | u32 n | n x (str k, str v)   (labels)
//                                                 | u32 n | n x (str k, str v)   (fields)
//   str     = u32 len | bytes
//
// The header carries its own checksum so that a corrupt length in the middle of a file is
// detected as corruption instead of being mistaken for a record torn at the end.
//
// Files in a data directory:
//   wal-<20-digit first rv>.log     append-only segments; records have increasing rv
//   snapshot-<20-digit rv>.snap     all objects at revision rv: SnapshotBegin (rv, key =
//                                   object count), Put x count, SnapshotEnd
//   snapshot-<rv>.snap.tmp          a snapshot being written (deleted on open)
//
// Group commit (WalWriter): a writer appends its encoded record to an in-memory buffer
// (cheap, done under the store's write lock) and gets a ticket, its end position in the
// log's byte sequence; it then releases the store lock and blocks in waitDurable(ticket).
// One flusher thread repeatedly takes the whole buffer, write()s it and fdatasync()s, then
// wakes every writer whose ticket is covered. Writers arriving during an fsync share the
// next one. Because the writers released by one fsync come back at about the same time, the
// flusher waits briefly (at most a quarter of the last fsync's duration, capped at 1 ms) for
// as many records as the previous batch had before starting the next fsync; otherwise the
// first returning writer would get an fsync of its own and split the group in two.

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "base/thread_annotations.h"
#include "kube/status.h"
#include "minicluster/store.h"

namespace strait::minicluster::wal {

// ---- Format constants ----
inline constexpr size_t kHeaderSize = 12;
inline constexpr uint32_t kMaxPayload = 256u << 20;  // larger lengths are corruption

enum class Op : uint8_t { Put = 1, Delete = 2, SnapshotBegin = 3, SnapshotEnd = 4 };

struct Record {
  Op op = Op::Put;
  uint64_t rv = 0;
  std::string key;
  std::string json;  // Put only
  Labels labels;     // Put only
  Fields fields;     // Put only
};

// IEEE CRC-32 (the zlib polynomial), continuing from `crc` (0 to start).
uint32_t crc32(const void* data, size_t n, uint32_t crc = 0);

// Appends the framed encoding of a record to `out`.
void encode(Op op, uint64_t rv, std::string_view key, std::string_view json, const Labels& labels,
            const Fields& fields, std::string& out);
inline void encode(const Record& r, std::string& out) {
  encode(r.op, r.rv, r.key, r.json, r.labels, r.fields, out);
}

// Decodes one payload (without header). False if malformed.
bool decodePayload(std::string_view payload, Record& out);

// File names.
std::string segmentName(uint64_t firstRv);  // "wal-00000000000000000002.log"
std::string snapshotName(uint64_t rv);      // "snapshot-00000000000000000002.snap"
// Parses "<prefix><20 digits><suffix>"; false if `name` does not have that shape.
bool parseNumbered(std::string_view name, std::string_view prefix, std::string_view suffix,
                   uint64_t& number);

// Reads every record of the file at `path` and calls onRecord for each, in order.
// With tolerateTornTail (the last WAL segment), a record cut short at the end of the file, a
// final record with a bad checksum, or an all-zero tail is treated as a crash mid-write: the
// file is truncated to the last good record (and fsync'd), `truncatedBytes` says how much
// was dropped. Any other bad data is an error naming the file and offset. Errors from
// onRecord are returned as they are.
Status readRecords(const std::string& path, bool tolerateTornTail,
                   const std::function<Status(Record&&)>& onRecord, uint64_t* truncatedBytes);

// Writes a complete snapshot of `objects` (key order) at revision `rv` into dir: temp file,
// fsync, rename, fsync dir. Blocks on disk I/O.
Status writeSnapshot(const std::string& dir, uint64_t rv, const std::vector<ObjectPtr>& objects);

// Loads a snapshot written by writeSnapshot; calls onObject for each Put. Returns the
// snapshot's revision. Errors name the file and offset.
Result<uint64_t> readSnapshot(const std::string& path,
                              const std::function<void(Record&&)>& onObject);

// fsyncs a directory so that creates/renames/unlinks in it are durable.
Status syncDir(const std::string& dir);

// Append side of the log with group commit. Thread-safe: append/waitDurable/rotate from any
// thread (the store calls append and rotate under its write lock, so records and rotations
// are ordered by revision).
class WalWriter {
 public:
  WalWriter() = default;
  ~WalWriter();  // stops the flusher after flushing what was appended; closes the file
  WalWriter(const WalWriter&) = delete;
  WalWriter& operator=(const WalWriter&) = delete;

  // Opens (creating if needed) the segment at `path` for appending and starts the flusher.
  // Call once.
  Status start(const std::string& dir, const std::string& path);

  // Queues an encoded record (one or more framed records). Never blocks on I/O. Returns a
  // ticket for waitDurable.
  uint64_t append(std::string_view bytes);
  // Blocks until every byte up to `ticket` is written and fdatasync'd. Fails with
  // Unavailable once any write or fsync failed (the log is then unusable).
  Status waitDurable(uint64_t ticket);
  // Flushes everything appended so far, then continues in a new segment file at `path`
  // (created, directory fsync'd). Blocks for one fsync; the caller holds its write lock so
  // nothing is appended meanwhile.
  Status rotate(const std::string& path);
  // True once a write or fsync failed; every later waitDurable fails.
  bool failed();
  // Counters since start(), for tests and logs.
  struct Stats {
    uint64_t records = 0;  // append() calls made durable
    uint64_t syncs = 0;    // fdatasync calls
  };
  Stats stats();

 private:
  void flushLoop();
  Status openSegment(const std::string& path);

  std::string dir_;
  std::thread flusher_;

  base::Mutex mu_;
  std::condition_variable_any work_;  // flusher waits for pending bytes or stop
  std::condition_variable_any done_;  // writers wait for durable_ to advance
  std::string pending_ GUARDED_BY(mu_);        // appended, not yet handed to the flusher
  size_t pendingRecords_ GUARDED_BY(mu_) = 0;  // append() calls in pending_
  // append() calls covered by the previous fsync.
  size_t lastBatchRecords_ GUARDED_BY(mu_) = 0;
  std::chrono::microseconds lastSyncTime_ GUARDED_BY(mu_){0};
  Stats stats_ GUARDED_BY(mu_);
  uint64_t appended_ GUARDED_BY(mu_) = 0;  // total bytes ever appended (tickets)
  uint64_t durable_ GUARDED_BY(mu_) = 0;   // total bytes written and fsync'd
  bool flushing_ GUARDED_BY(mu_) = false;  // the flusher is doing I/O outside mu_
  bool stopping_ GUARDED_BY(mu_) = false;
  std::string failure_ GUARDED_BY(mu_);  // non-empty once I/O failed
  int fd_ = -1;          // current segment; I/O on it only by the flusher or by
                         // rotate() while !flushing_ and pending_ is empty
};

}  // namespace strait::minicluster::wal

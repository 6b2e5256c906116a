// The minicluster store: ordered in-memory map, revision counter, watch history and
// fan-out, optional durability through the WAL (wal.h) and snapshots.
//
// Write pipeline (create/update/remove), all steps 1-5 under the exclusive lock mu_:
//   1. look up the key, check existence;
//   2. call the user's callback with the current object and rv = revision + 1;
//   3. with a data directory, encode the WAL record and append it to the group-commit
//      buffer (no I/O here), getting a ticket;
//   4. apply to the map, bump the revision, append the event to the history;
//   5. fan the event out to matching watchers (one shared EventPtr), queueing only;
//   6. after unlocking, wake the watchers whose readers wait for it, then wait until the
//      flusher has fsync'd past the ticket; only then return.
// Consequence: a write is visible to readers and watchers slightly before it is durable (the
// fsync of its group). After a crash, writes that were in that window and never acknowledged
// may be lost (and their rvs reused); acknowledged ones never are.
//
// Revision numbering: a new empty store is at revision 1; the first write gets rv 2. rvs are
// strictly increasing, one per successful write (failed callbacks consume none), and after
// reopening a data directory continue from the highest rv found on disk.

#include "minicluster/store.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <atomic>
#include <deque>
#include <filesystem>
#include <mutex>
#include <set>
#include <shared_mutex>
#include <thread>

#include "minicluster/store_watch.h"
#include "minicluster/wal.h"

namespace strait::minicluster {

namespace fs = std::filesystem;
using kube::Code;
using kube::makeError;

namespace {

constexpr uint64_t kInitialRevision = 1;

}  // namespace

FieldName::FieldName(std::string_view name) {
  // Never destroyed: objects may outlive static destruction on threads still running at exit.
  static auto* mu = new std::shared_mutex;
  static auto* names = new std::set<std::string, std::less<>>;
  {
    std::shared_lock lk(*mu);
    auto it = names->find(name);
    if (it != names->end()) {
      name_ = &*it;
      return;
    }
  }
  std::unique_lock lk(*mu);
  name_ = &*names->emplace(name).first;
}

namespace {

enum class WriteKind { Create, Update, Remove };

class StoreImpl final : public Store {
 public:
  explicit StoreImpl(StoreOptions opts)
      : opts_(std::move(opts)), hub_(std::make_shared<WatchHub>()) {}
  ~StoreImpl() override;

  Status open() override;
  Result<ObjectPtr> get(const std::string& key) const override;
  ListResult list(const std::string& prefix,
                  const std::function<bool(const Object&)>& filter) const override;
  Result<ObjectPtr> create(const std::string& key, const UpdateFn& fn) override {
    return write(WriteKind::Create, key, fn);
  }
  Result<ObjectPtr> update(const std::string& key, const UpdateFn& fn) override {
    return write(WriteKind::Update, key, fn);
  }
  Result<ObjectPtr> remove(const std::string& key, const DeleteFn& fn) override {
    return write(WriteKind::Remove, key, fn);
  }
  uint64_t revision() const override;
  uint64_t compactedRevision() const override;
  void compact(uint64_t rv) override;
  Result<std::unique_ptr<Watch>> watch(const std::string& prefix, uint64_t fromRv) override;

 private:
  Result<ObjectPtr> write(WriteKind kind, const std::string& key,
                          const std::function<Result<NewObject>(const ObjectPtr&, uint64_t)>& fn);
  Status recover();
  void trimHistoryLocked();
  void maybeSnapshotLocked();
  void removeOldFiles(uint64_t snapshotRv);

  const StoreOptions opts_;
  const std::shared_ptr<WatchHub> hub_;
  std::unique_ptr<wal::WalWriter> wal_;  // set by open() with a data directory

  // State below is protected by mu_ (writes exclusive, reads shared).
  mutable std::shared_mutex mu_;
  std::map<std::string, ObjectPtr, std::less<>> objects_;
  uint64_t rev_ = kInitialRevision;
  uint64_t compacted_ = kInitialRevision;
  std::deque<EventPtr> history_;  // increasing rv, all > compacted_
  size_t walRecordsSinceSnapshot_ = 0;
  std::string encodeBuf_;  // scratch for WAL encoding
  bool opened_ = false;

  // Background snapshot writer; at most one at a time. snapshotThread_ is touched only under
  // the exclusive mu_ and in the destructor.
  std::thread snapshotThread_;
  std::atomic<bool> snapshotRunning_{false};
};

StoreImpl::~StoreImpl() {
  if (snapshotThread_.joinable()) snapshotThread_.join();
  wal_.reset();  // flushes and stops the flusher
  hub_->endAll();
}

Status StoreImpl::open() {
  std::unique_lock lk(mu_);
  if (opened_) return makeError(Code::Internal, "store: open() called twice");
  if (opts_.watcherQueueLimit == 0) {
    return makeError(Code::Invalid, "store options: watcherQueueLimit must be > 0");
  }
  if (opts_.dataDir && opts_.dataDir->empty()) {
    return makeError(Code::Invalid, "store options: dataDir is set but empty");
  }
  if (opts_.dataDir && opts_.snapshotEvery == 0) {
    return makeError(Code::Invalid, "store options: snapshotEvery must be > 0");
  }
  if (opts_.dataDir) {
    Status s = recover();
    if (!s.ok()) return s;
  }
  opened_ = true;
  return Status::OK();
}

// Loads the newest snapshot, replays the WAL segments and starts the WAL writer.
Status StoreImpl::recover() {
  const std::string& dir = *opts_.dataDir;
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec)
    return makeError(Code::Internal, "cannot create data directory " + dir + ": " + ec.message());
  std::vector<std::pair<uint64_t, std::string>> snapshots, segments;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    std::string name = entry.path().filename().string();
    uint64_t n = 0;
    if (name.ends_with(".snap.tmp")) {
      fs::remove(entry.path(), ec);  // a snapshot interrupted by a crash
    } else if (wal::parseNumbered(name, "snapshot-", ".snap", n)) {
      snapshots.emplace_back(n, entry.path().string());
    } else if (wal::parseNumbered(name, "wal-", ".log", n)) {
      segments.emplace_back(n, entry.path().string());
    }
  }
  if (ec)
    return makeError(Code::Internal, "cannot list data directory " + dir + ": " + ec.message());
  std::sort(snapshots.begin(), snapshots.end());
  std::sort(segments.begin(), segments.end());

  uint64_t snapshotRv = 0;
  if (!snapshots.empty()) {
    Result<uint64_t> r = wal::readSnapshot(snapshots.back().second, [&](wal::Record&& rec) {
      auto obj = std::make_shared<Object>();
      obj->key = std::move(rec.key);
      obj->rv = rec.rv;
      obj->json = std::move(rec.json);
      obj->labels = std::move(rec.labels);
      obj->fields = std::move(rec.fields);
      std::string key = obj->key;
      objects_.insert_or_assign(std::move(key), std::move(obj));
    });
    if (!r.ok()) return r.error();
    snapshotRv = *r;
    rev_ = std::max(rev_, snapshotRv);
  }

  uint64_t replayed = 0;
  uint64_t truncated = 0;
  for (size_t i = 0; i < segments.size(); ++i) {
    const std::string& path = segments[i].second;
    bool last = i + 1 == segments.size();
    Status s = wal::readRecords(
        path, /*tolerateTornTail=*/last,
        [&](wal::Record&& rec) -> Status {
          if (rec.rv <= snapshotRv) return Status::OK();  // already in the snapshot
          if (rec.rv <= rev_ || (rec.op != wal::Op::Put && rec.op != wal::Op::Delete)) {
            return makeError(Code::Internal, "corrupt WAL " + path + ": record with rv " +
                                                 std::to_string(rec.rv) + " after rv " +
                                                 std::to_string(rev_) + " or of wrong type");
          }
          rev_ = rec.rv;
          ++replayed;
          if (rec.op == wal::Op::Delete) {
            objects_.erase(rec.key);
            return Status::OK();
          }
          auto obj = std::make_shared<Object>();
          obj->key = rec.key;
          obj->rv = rec.rv;
          obj->json = std::move(rec.json);
          obj->labels = std::move(rec.labels);
          obj->fields = std::move(rec.fields);
          objects_.insert_or_assign(std::move(rec.key), std::move(obj));
          return Status::OK();
        },
        last ? &truncated : nullptr);
    if (!s.ok()) return s;
  }
  compacted_ = rev_;  // history is not persisted: watches resume from here on
  walRecordsSinceSnapshot_ = replayed;

  std::string current =
      segments.empty() ? dir + "/" + wal::segmentName(rev_ + 1) : segments.back().second;
  wal_ = std::make_unique<wal::WalWriter>();
  Status s = wal_->start(dir, current);
  if (!s.ok()) return s;
  spdlog::info(
      "store opened dir={} revision={} objects={} snapshot_rv={} segments={} "
      "replayed_records={} truncated_bytes={}",
      dir, rev_, objects_.size(), snapshotRv, segments.size(), replayed, truncated);
  return Status::OK();
}

Result<ObjectPtr> StoreImpl::get(const std::string& key) const {
  std::shared_lock lk(mu_);
  auto it = objects_.find(key);
  if (it == objects_.end()) return makeError(Code::NotFound, "key \"" + key + "\" not found");
  return it->second;
}

ListResult StoreImpl::list(const std::string& prefix,
                           const std::function<bool(const Object&)>& filter) const {
  ListResult out;
  std::shared_lock lk(mu_);
  out.rv = rev_;
  for (auto it = objects_.lower_bound(prefix);
       it != objects_.end() && it->first.starts_with(prefix); ++it) {
    if (!filter || filter(*it->second)) out.items.push_back(it->second);
  }
  return out;
}

uint64_t StoreImpl::revision() const {
  std::shared_lock lk(mu_);
  return rev_;
}

uint64_t StoreImpl::compactedRevision() const {
  std::shared_lock lk(mu_);
  return compacted_;
}

void StoreImpl::compact(uint64_t rv) {
  std::unique_lock lk(mu_);
  rv = std::min(rv, rev_);
  while (!history_.empty() && history_.front()->rv <= rv) history_.pop_front();
  compacted_ = std::max(compacted_, rv);
}

Result<std::unique_ptr<Watch>> StoreImpl::watch(const std::string& prefix, uint64_t fromRv) {
  // Shared lock: no write can happen between the history replay and the registration, so
  // the watcher sees every event after fromRv exactly once.
  std::shared_lock lk(mu_);
  if (fromRv != 0 && fromRv < compacted_) {
    return makeError(Code::Gone, "too old resource version: " + std::to_string(fromRv) + " (" +
                                     std::to_string(compacted_) + ")");
  }
  uint64_t after = fromRv == 0 ? rev_ : fromRv;
  auto q = std::make_shared<WatcherQueue>(prefix, after, opts_.watcherQueueLimit);
  if (fromRv != 0) {
    auto it = std::upper_bound(history_.begin(), history_.end(), fromRv,
                               [](uint64_t rv, const EventPtr& e) { return rv < e->rv; });
    for (; it != history_.end(); ++it) {
      if ((*it)->object->key.starts_with(prefix) && !q->push(*it)) break;
    }
  }
  hub_->add(q);
  return std::unique_ptr<Watch>(std::make_unique<HubWatch>(hub_, std::move(q)));
}

Result<ObjectPtr> StoreImpl::write(
    WriteKind kind, const std::string& key,
    const std::function<Result<NewObject>(const ObjectPtr&, uint64_t)>& fn) {
  uint64_t ticket = 0;
  ObjectPtr result;
  // Readers to wake once mu_ is released (a reader woken under it could preempt this writer
  // and stall every other one). Reused per thread: no allocation per write.
  thread_local std::vector<std::shared_ptr<WatcherQueue>> toWake;
  struct WakeAfterUnlock {
    std::vector<std::shared_ptr<WatcherQueue>>& queues;
    ~WakeAfterUnlock() {
      for (const auto& q : queues) q->wake();
      queues.clear();
    }
  };
  {
    WakeAfterUnlock wakeAfterUnlock{toWake};  // declared before lk: runs after it unlocks
    std::unique_lock lk(mu_);
    if (!opened_) return makeError(Code::Unavailable, "store: write before open()");
    if (wal_ && wal_->failed()) {
      return makeError(Code::Unavailable, "store: write-ahead log failed; writes refused");
    }
    auto it = objects_.find(key);
    if (kind == WriteKind::Create && it != objects_.end()) {
      return makeError(Code::AlreadyExists, "key \"" + key + "\" already exists");
    }
    if (kind != WriteKind::Create && it == objects_.end()) {
      return makeError(Code::NotFound, "key \"" + key + "\" not found");
    }
    ObjectPtr current = it == objects_.end() ? nullptr : it->second;
    const uint64_t newRv = rev_ + 1;
    std::optional<Result<NewObject>> made;
    try {
      made.emplace(fn(current, newRv));
    } catch (const std::exception& e) {
      return makeError(Code::Internal, std::string("store: write callback threw: ") + e.what());
    }
    if (!made->ok()) return made->error();
    NewObject& no = made->value();
    auto obj = std::make_shared<Object>();
    obj->key = key;
    obj->rv = newRv;
    obj->json = std::move(no.json);
    // Versions whose labels or fields did not change (status writes) share them.
    if (current && current->labels == no.labels) {
      obj->labels = current->labels;
    } else {
      obj->labels = std::move(no.labels);
    }
    if (current && current->fields == no.fields) {
      obj->fields = current->fields;
    } else {
      obj->fields = std::move(no.fields);
    }

    if (wal_) {
      encodeBuf_.clear();
      if (kind == WriteKind::Remove) {
        wal::encode(wal::Op::Delete, newRv, key, {}, {}, {}, encodeBuf_);
      } else {
        wal::encode(wal::Op::Put, newRv, key, obj->json, obj->labels, obj->fields, encodeBuf_);
      }
      ticket = wal_->append(encodeBuf_);
    }

    EventType type = EventType::Modified;
    if (kind == WriteKind::Create) {
      type = EventType::Added;
      objects_.emplace_hint(it, key, obj);
    } else if (kind == WriteKind::Update) {
      it->second = obj;
    } else {
      type = EventType::Deleted;
      objects_.erase(it);
    }
    rev_ = newRv;
    auto ev = std::make_shared<const Event>(Event{type, newRv, obj, std::move(current)});
    history_.push_back(ev);
    trimHistoryLocked();
    hub_->publish(key, ev, toWake);
    result = std::move(obj);
    if (wal_) {
      ++walRecordsSinceSnapshot_;
      maybeSnapshotLocked();
    }
  }
  if (wal_) {
    Status s = wal_->waitDurable(ticket);
    if (!s.ok()) return s.error();
  }
  return result;
}

void StoreImpl::trimHistoryLocked() {
  while (history_.size() > opts_.historyLimit) {
    compacted_ = history_.front()->rv;
    history_.pop_front();
  }
}

// Starts a background snapshot when enough WAL records accumulated: the WAL moves to a new
// segment at the current revision (so the snapshot plus the new segment hold everything) and
// a thread writes the snapshot, then deletes the older segments and snapshots.
void StoreImpl::maybeSnapshotLocked() {
  if (walRecordsSinceSnapshot_ < opts_.snapshotEvery || snapshotRunning_.load()) return;
  if (snapshotThread_.joinable()) snapshotThread_.join();  // finished: snapshotRunning_ false
  const std::string& dir = *opts_.dataDir;
  const uint64_t rv = rev_;
  Status s = wal_->rotate(dir + "/" + wal::segmentName(rv + 1));
  if (!s.ok()) {
    // Keep appending to the current segment; try again after the next write.
    spdlog::error("store snapshot skipped reason=\"wal rotation failed: {}\"", s.error().message);
    return;
  }
  walRecordsSinceSnapshot_ = 0;
  std::vector<ObjectPtr> objects;
  objects.reserve(objects_.size());
  for (const auto& [k, o] : objects_) objects.push_back(o);
  snapshotRunning_ = true;
  snapshotThread_ = std::thread([this, rv, objects = std::move(objects)] {
    auto start = std::chrono::steady_clock::now();
    Status st = wal::writeSnapshot(*opts_.dataDir, rv, objects);
    if (st.ok()) {
      removeOldFiles(rv);
      auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                    std::chrono::steady_clock::now() - start)
                    .count();
      spdlog::info("store snapshot written rv={} objects={} duration_ms={}", rv, objects.size(),
                   ms);
    } else {
      // The older segments are kept, so nothing is lost; the next snapshot retries.
      spdlog::error("store snapshot failed rv={} error=\"{}\"", rv, st.error().message);
    }
    snapshotRunning_ = false;
  });
}

// Deletes WAL segments whose records are all covered by the snapshot at `snapshotRv`
// (those starting at or before it: the current segment starts at snapshotRv + 1) and older
// snapshots.
void StoreImpl::removeOldFiles(uint64_t snapshotRv) {
  const std::string& dir = *opts_.dataDir;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    std::string name = entry.path().filename().string();
    uint64_t n = 0;
    if ((wal::parseNumbered(name, "wal-", ".log", n) && n <= snapshotRv) ||
        (wal::parseNumbered(name, "snapshot-", ".snap", n) && n < snapshotRv)) {
      std::error_code rmEc;
      fs::remove(entry.path(), rmEc);
      if (rmEc) spdlog::warn("store cannot remove file={} error=\"{}\"", name, rmEc.message());
    }
  }
  Status s = wal::syncDir(dir);
  if (!s.ok()) spdlog::warn("store {}", s.error().message);
}

}  // namespace

std::unique_ptr<Store> newStore(StoreOptions opts) {
  return std::make_unique<StoreImpl>(std::move(opts));
}

}  // namespace strait::minicluster

// Durability of the store: WAL format, reopen, snapshots, torn tails, corruption, group
// commit throughput, and acknowledged writes surviving SIGKILL of a writing process.

#include "minicluster/wal.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <thread>

#include "minicluster/store.h"

namespace strait::minicluster {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

std::string objJson(uint64_t rv, const std::string& v) {
  return R"({"metadata":{"resourceVersion":")" + std::to_string(rv) + R"("},"v":")" + v + "\"}";
}

UpdateFn setTo(const std::string& v) {
  return [v](const ObjectPtr&, uint64_t rv) -> Result<NewObject> {
    return NewObject{objJson(rv, v), {{"app", "x"}}, {{"metadata.name", v}}};
  };
}

class StoreWalTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/strait-wal-test-XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }
  StoreOptions options(size_t snapshotEvery = 50000) {
    StoreOptions o;
    o.dataDir = dir_;
    o.snapshotEvery = snapshotEvery;
    return o;
  }
  std::unique_ptr<Store> openOk(StoreOptions o) {
    auto s = newStore(std::move(o));
    Status st = s->open();
    EXPECT_TRUE(st.ok()) << (st.ok() ? "" : st.error().message);
    return st.ok() ? std::move(s) : nullptr;
  }
  std::vector<fs::path> files(const std::string& prefix) {
    std::vector<fs::path> out;
    for (const auto& e : fs::directory_iterator(dir_)) {
      if (e.path().filename().string().starts_with(prefix)) out.push_back(e.path());
    }
    std::sort(out.begin(), out.end());
    return out;
  }
  std::string dir_;
};

TEST(StoreWalFormat, Crc32MatchesZlib) {
  EXPECT_EQ(wal::crc32("123456789", 9), 0xCBF43926u);
  EXPECT_EQ(wal::crc32("", 0), 0u);
}

TEST(StoreWalFormat, RecordRoundTrip) {
  std::string buf;
  wal::encode(wal::Op::Put, 42, "/core/pods/ns/a", "{\"x\":1}", {{"app", "web"}},
              {{"metadata.name", "a"}, {"spec.nodeName", "n1"}}, buf);
  ASSERT_GT(buf.size(), wal::kHeaderSize);
  wal::Record r;
  ASSERT_TRUE(wal::decodePayload(std::string_view(buf).substr(wal::kHeaderSize), r));
  EXPECT_EQ(r.op, wal::Op::Put);
  EXPECT_EQ(r.rv, 42u);
  EXPECT_EQ(r.key, "/core/pods/ns/a");
  EXPECT_EQ(r.json, "{\"x\":1}");
  EXPECT_EQ(r.labels, (Labels{{"app", "web"}}));
  EXPECT_EQ(r.fields.at("spec.nodeName"), "n1");
  // Truncated payloads are rejected, not read out of bounds.
  for (size_t cut = wal::kHeaderSize; cut < buf.size(); ++cut) {
    EXPECT_FALSE(wal::decodePayload(
        std::string_view(buf).substr(wal::kHeaderSize, cut - wal::kHeaderSize), r));
  }
  uint64_t n = 0;
  EXPECT_TRUE(wal::parseNumbered(wal::segmentName(17), "wal-", ".log", n));
  EXPECT_EQ(n, 17u);
  EXPECT_FALSE(wal::parseNumbered("wal-17.log", "wal-", ".log", n));
}

TEST_F(StoreWalTest, ReopenRestoresObjectsAndContinuesRevisions) {
  {
    auto s = openOk(options());
    ASSERT_TRUE(s);
    ASSERT_TRUE(s->create("/k/a", setTo("a1")).ok());    // 2
    ASSERT_TRUE(s->create("/k/b", setTo("b1")).ok());    // 3
    ASSERT_TRUE(s->update("/k/a", setTo("a2")).ok());    // 4
    ASSERT_TRUE(s->remove("/k/b", setTo("gone")).ok());  // 5
    EXPECT_EQ(s->revision(), 5u);
  }
  auto s = openOk(options());
  ASSERT_TRUE(s);
  EXPECT_EQ(s->revision(), 5u);
  auto a = s->get("/k/a");
  ASSERT_TRUE(a.ok());
  EXPECT_EQ((*a)->rv, 4u);
  EXPECT_EQ((*a)->json, objJson(4, "a2"));
  EXPECT_EQ((*a)->labels.at("app"), "x");
  EXPECT_EQ((*a)->fields.at("metadata.name"), "a2");
  EXPECT_FALSE(s->get("/k/b").ok());
  // History restarts at the reopened revision.
  EXPECT_EQ(s->compactedRevision(), 5u);
  EXPECT_TRUE(kube::isGone(s->watch("/k/", 3).error()));
  auto w = s->watch("/k/", 5);
  ASSERT_TRUE(w.ok());
  auto c = s->create("/k/c", setTo("c"));
  ASSERT_TRUE(c.ok());
  EXPECT_EQ((*c)->rv, 6u);
  auto e = (*w)->next(1s);
  ASSERT_TRUE(e);
  EXPECT_EQ((*e)->rv, 6u);
}

TEST_F(StoreWalTest, SnapshotsRotateSegmentsAndReopen) {
  {
    auto s = openOk(options(/*snapshotEvery=*/10));
    ASSERT_TRUE(s);
    for (int i = 0; i < 95; ++i) {
      std::string key = "/k/" + std::to_string(i % 20);
      auto r = i < 20 ? s->create(key, setTo(std::to_string(i)))
                      : s->update(key, setTo(std::to_string(i)));
      ASSERT_TRUE(r.ok());
      if (i % 7 == 6) ASSERT_TRUE(s->create("/tmp/" + std::to_string(i), setTo("t")).ok());
      if (i % 7 == 6) ASSERT_TRUE(s->remove("/tmp/" + std::to_string(i), setTo("t")).ok());
    }
  }
  EXPECT_GE(files("snapshot-").size(), 1u);
  EXPECT_LE(files("snapshot-").size(), 2u);
  EXPECT_LE(files("wal-").size(), 3u);  // old segments are deleted after each snapshot
  auto s = openOk(options(10));
  ASSERT_TRUE(s);
  EXPECT_EQ(s->revision(), 1u + 95 + 2 * 13);
  auto items = s->list("/k/").items;
  ASSERT_EQ(items.size(), 20u);
  for (int i = 75; i < 95; ++i) {
    auto o = s->get("/k/" + std::to_string(i % 20));
    ASSERT_TRUE(o.ok());
    EXPECT_EQ((*o)->fields.at("metadata.name"), std::to_string(i));
  }
  EXPECT_TRUE(s->list("/tmp/").items.empty());
}

TEST_F(StoreWalTest, TornTailIsTruncatedAndWritesContinue) {
  {
    auto s = openOk(options());
    ASSERT_TRUE(s);
    for (int i = 0; i < 10; ++i) ASSERT_TRUE(s->create("/k/" + std::to_string(i), setTo("v")).ok());
  }
  auto segs = files("wal-");
  ASSERT_EQ(segs.size(), 1u);
  auto size = fs::file_size(segs[0]);
  fs::resize_file(segs[0], size - 5);  // the last record is cut mid-write
  {
    auto s = openOk(options());
    ASSERT_TRUE(s);
    EXPECT_EQ(s->revision(), 10u);  // rv 11 (/k/9) was torn off
    EXPECT_FALSE(s->get("/k/9").ok());
    EXPECT_TRUE(s->get("/k/8").ok());
    auto r = s->create("/k/9", setTo("again"));
    ASSERT_TRUE(r.ok());
    EXPECT_EQ((*r)->rv, 11u);
  }
  // Zeros appended at the end (a preallocated tail) are also a torn tail.
  {
    std::ofstream f(segs[0], std::ios::app | std::ios::binary);
    f << std::string(100, '\0');
  }
  auto s = openOk(options());
  ASSERT_TRUE(s);
  EXPECT_EQ(s->revision(), 11u);
  EXPECT_EQ((*s->get("/k/9"))->json, objJson(11, "again"));
}

TEST_F(StoreWalTest, GarbageInTheMiddleIsAnErrorNamingFileAndOffset) {
  {
    auto s = openOk(options());
    ASSERT_TRUE(s);
    for (int i = 0; i < 10; ++i) ASSERT_TRUE(s->create("/k/" + std::to_string(i), setTo("v")).ok());
  }
  auto seg = files("wal-").at(0);
  auto size = fs::file_size(seg);
  {
    std::fstream f(seg, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(static_cast<std::streamoff>(size / 2));
    f << "GARBAGE!";
  }
  auto s = newStore(options());
  Status st = s->open();
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.error().message.find(seg.string()), std::string::npos) << st.error().message;
  EXPECT_NE(st.error().message.find("at offset "), std::string::npos) << st.error().message;
  EXPECT_EQ(fs::file_size(seg), size);  // nothing truncated
}

TEST_F(StoreWalTest, CorruptSnapshotIsAnError) {
  {
    auto s = openOk(options(5));
    ASSERT_TRUE(s);
    for (int i = 0; i < 12; ++i) ASSERT_TRUE(s->create("/k/" + std::to_string(i), setTo("v")).ok());
  }
  auto snaps = files("snapshot-");
  ASSERT_FALSE(snaps.empty());
  fs::resize_file(snaps.back(), fs::file_size(snaps.back()) - 3);
  auto s = newStore(options(5));
  Status st = s->open();
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.error().message.find(snaps.back().string()), std::string::npos)
      << st.error().message;
}

TEST_F(StoreWalTest, GroupCommitThroughput) {
  auto s = openOk(options());
  ASSERT_TRUE(s);
  // Writes/s with `threads` concurrent writers over a fixed window (a rate needs a window).
  auto measure = [&](int threads, std::chrono::milliseconds window) {
    std::atomic<bool> stop{false};
    std::atomic<int> done{0};
    std::vector<std::thread> ths;
    for (int t = 0; t < threads; ++t) {
      ths.emplace_back([&, t] {
        for (int i = 0; !stop.load(); ++i) {
          std::string key = "/g/" + std::to_string(threads) + "/t" + std::to_string(t) + "/" +
                            std::to_string(i % 100);
          auto r = i < 100 ? s->create(key, setTo("v")) : s->update(key, setTo("v"));
          ASSERT_TRUE(r.ok());
          done.fetch_add(1);
        }
      });
    }
    std::this_thread::sleep_for(window);
    stop = true;
    for (auto& th : ths) th.join();
    double rate = done.load() / std::chrono::duration<double>(window).count();
    std::printf("fsync'd group commit: %2d writers, ~%.0f writes/s\n", threads, rate);
    return rate;
  };
  measure(1, 300ms);
  measure(4, 300ms);
  double rate16 = measure(16, 600ms);
  measure(64, 600ms);
  // Lenient floor for slow CI disks; on a disk with a ~1 ms fsync this is far above 2000/s.
  EXPECT_GT(rate16, 500.0);
}

TEST_F(StoreWalTest, ConcurrentWritersShareFsyncs) {
  wal::WalWriter w;
  ASSERT_TRUE(w.start(dir_, dir_ + "/" + wal::segmentName(2)).ok());
  constexpr int kThreads = 16;
  constexpr int kPerThread = 40;
  std::vector<std::thread> ths;
  for (int t = 0; t < kThreads; ++t) {
    ths.emplace_back([&, t] {
      for (int i = 0; i < kPerThread; ++i) {
        std::string rec;
        wal::encode(wal::Op::Put, 2 + t * kPerThread + i, "/k", "{}", {}, {}, rec);
        EXPECT_TRUE(w.waitDurable(w.append(rec)).ok());
      }
    });
  }
  for (auto& th : ths) th.join();
  auto st = w.stats();
  EXPECT_EQ(st.records, static_cast<uint64_t>(kThreads * kPerThread));
  std::printf("group commit: %llu records in %llu fsyncs\n",
              static_cast<unsigned long long>(st.records),
              static_cast<unsigned long long>(st.syncs));
  EXPECT_LT(st.syncs * 4, st.records);  // on average more than 4 writers per fsync
  size_t n = 0;
  ASSERT_TRUE(wal::readRecords(
                  dir_ + "/" + wal::segmentName(2), false,
                  [&](wal::Record&&) {
                    ++n;
                    return Status::OK();
                  },
                  nullptr)
                  .ok());
  EXPECT_EQ(n, static_cast<size_t>(kThreads * kPerThread));
}

// The durability test: a child process writes from several threads and reports each
// acknowledged write through a pipe; the parent SIGKILLs it mid-storm and checks that every
// acknowledged write survived.
TEST_F(StoreWalTest, AcknowledgedWritesSurviveSigkill) {
  constexpr int kThreads = 4;
  constexpr int kKeysPerThread = 16;
  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    ::close(fds[0]);
    auto s = newStore(options(/*snapshotEvery=*/1500));
    if (!s->open().ok()) ::_exit(2);
    std::vector<std::thread> ths;
    for (int t = 0; t < kThreads; ++t) {
      ths.emplace_back([&, t] {
        for (int n = 0;; ++n) {
          std::string key = "/s/t" + std::to_string(t) + "/k" + std::to_string(n % kKeysPerThread);
          std::string v = std::to_string(n);
          auto r = n < kKeysPerThread ? s->create(key, setTo(v)) : s->update(key, setTo(v));
          if (!r.ok()) ::_exit(3);
          std::string line = "P " + key + " " + v + " " + std::to_string((*r)->rv) + "\n";
          if (n % 5 == 4) {  // a create+delete pair; acknowledged after the delete
            std::string dkey = "/s/t" + std::to_string(t) + "/d" + std::to_string(n);
            if (!s->create(dkey, setTo(v)).ok()) ::_exit(4);
            auto d = s->remove(dkey, setTo(v));
            if (!d.ok()) ::_exit(5);
            line += "D " + dkey + " 0 " + std::to_string((*d)->rv) + "\n";
          }
          if (::write(fds[1], line.data(), line.size()) != static_cast<ssize_t>(line.size())) {
            ::_exit(6);
          }
        }
      });
    }
    std::this_thread::sleep_for(30s);  // the parent kills us long before
    ::_exit(7);
  }
  ::close(fds[1]);

  std::string acked;
  char buf[65536];
  auto start = std::chrono::steady_clock::now();
  size_t lines = 0;
  while ((std::chrono::steady_clock::now() - start < 1500ms || lines < 200) &&
         std::chrono::steady_clock::now() - start < 10s) {
    pollfd pfd{fds[0], POLLIN, 0};
    if (::poll(&pfd, 1, 100) <= 0) continue;  // a stuck child must fail the test, not hang it
    ssize_t n = ::read(fds[0], buf, sizeof buf);
    if (n <= 0) break;  // the child died on its own: checked below
    acked.append(buf, static_cast<size_t>(n));
    lines += static_cast<size_t>(std::count(buf, buf + n, '\n'));
  }
  ASSERT_EQ(::kill(pid, SIGKILL), 0);
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFSIGNALED(status)) << "child exited early with " << WEXITSTATUS(status);
  for (ssize_t n; (n = ::read(fds[0], buf, sizeof buf)) > 0;) acked.append(buf, n);
  ::close(fds[0]);

  // Only complete lines are acknowledgements.
  acked.resize(acked.rfind('\n') + 1);
  std::map<std::string, long> lastSeq;         // key -> last acknowledged value
  std::map<std::string, long> maxSeqOfThread;  // "/s/tN/" -> highest acknowledged value
  std::vector<std::string> deleted;
  uint64_t maxRv = 0;
  size_t count = 0;
  std::istringstream in(acked);
  std::string op, key;
  long seq = 0;
  uint64_t rv = 0;
  while (in >> op >> key >> seq >> rv) {
    ++count;
    maxRv = std::max(maxRv, rv);
    if (op == "P") {
      lastSeq[key] = seq;
      auto& m = maxSeqOfThread[key.substr(0, key.rfind('/') + 1)];
      m = std::max(m, seq);
    } else {
      deleted.push_back(key);
    }
  }
  ASSERT_GT(count, 100u) << "too few acknowledged writes to be meaningful";

  auto s = openOk(options(1500));
  ASSERT_TRUE(s);
  EXPECT_GE(s->revision(), maxRv);
  for (const auto& [k, want] : lastSeq) {
    auto o = s->get(k);
    ASSERT_TRUE(o.ok()) << "acknowledged key lost: " << k;
    long got = std::stol((*o)->fields.at("metadata.name"));
    // The stored value is the last acknowledged one, or the one write that was in flight.
    EXPECT_GE(got, want) << k;
    EXPECT_LE(got, maxSeqOfThread[k.substr(0, k.rfind('/') + 1)] + 1) << k;
  }
  for (const auto& k : deleted) EXPECT_FALSE(s->get(k).ok()) << "acknowledged delete lost: " << k;
  auto next = s->create("/after/restart", setTo("x"));
  ASSERT_TRUE(next.ok());
  EXPECT_GT((*next)->rv, maxRv);
  std::printf(
      "sigkill test: %zu acknowledged writes checked, max acked rv %llu, reopened at %llu\n", count,
      static_cast<unsigned long long>(maxRv), static_cast<unsigned long long>(s->revision()));
}

}  // namespace
}  // namespace strait::minicluster

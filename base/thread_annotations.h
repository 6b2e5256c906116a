#pragma once
// Clang thread-safety analysis (-Wthread-safety) for Strait's own locks: a Mutex that is a
// capability, a scoped MutexLock, and the attribute macros. Under GCC the macros expand to
// nothing and Mutex is a plain std::mutex wrapper. The clang check (scripts/check-thread-
// safety.sh, part of `make test`) turns every unguarded access to a GUARDED_BY field into an
// error.
//
//   class Cache {
//     mutable base::Mutex mu_;
//     std::map<std::string, Item> items_ GUARDED_BY(mu_);
//     void evictLocked() REQUIRES(mu_);
//   };
//   base::MutexLock l(mu_);  // scoped, like std::lock_guard
//
// Mutex is BasicLockable, so std::unique_lock<base::Mutex> and std::condition_variable_any
// work with it (the analysis does not follow those; prefer MutexLock, and UniqueLock below
// where a condition variable waits).

#include <mutex>

#if defined(__clang__)
#define STRAIT_TSA(x) __attribute__((x))
#else
#define STRAIT_TSA(x)
#endif

#define CAPABILITY(x) STRAIT_TSA(capability(x))
#define SCOPED_CAPABILITY STRAIT_TSA(scoped_lockable)
#define GUARDED_BY(x) STRAIT_TSA(guarded_by(x))
#define PT_GUARDED_BY(x) STRAIT_TSA(pt_guarded_by(x))
#define REQUIRES(...) STRAIT_TSA(requires_capability(__VA_ARGS__))
#define EXCLUDES(...) STRAIT_TSA(locks_excluded(__VA_ARGS__))
#define ACQUIRE(...) STRAIT_TSA(acquire_capability(__VA_ARGS__))
#define RELEASE(...) STRAIT_TSA(release_capability(__VA_ARGS__))
#define TRY_ACQUIRE(...) STRAIT_TSA(try_acquire_capability(__VA_ARGS__))
#define NO_THREAD_SAFETY_ANALYSIS STRAIT_TSA(no_thread_safety_analysis)

namespace strait::base {

// A std::mutex the analysis knows as a capability.
class CAPABILITY("mutex") Mutex {
 public:
  void lock() ACQUIRE() { mu_.lock(); }
  void unlock() RELEASE() { mu_.unlock(); }
  bool try_lock() TRY_ACQUIRE(true) { return mu_.try_lock(); }

 private:
  std::mutex mu_;
};

// Holds a Mutex for its scope.
class SCOPED_CAPABILITY MutexLock {
 public:
  explicit MutexLock(Mutex& mu) ACQUIRE(mu) : mu_(mu) { mu_.lock(); }
  ~MutexLock() RELEASE() { mu_.unlock(); }
  MutexLock(const MutexLock&) = delete;
  MutexLock& operator=(const MutexLock&) = delete;

 private:
  Mutex& mu_;
};

// Holds a Mutex for its scope, and can be released and re-taken around blocking work or be
// waited on by a std::condition_variable_any (it is BasicLockable itself).
class SCOPED_CAPABILITY UniqueLock {
 public:
  explicit UniqueLock(Mutex& mu) ACQUIRE(mu) : mu_(mu) { mu_.lock(); }
  ~UniqueLock() RELEASE() {
    if (held_) mu_.unlock();
  }
  UniqueLock(const UniqueLock&) = delete;
  UniqueLock& operator=(const UniqueLock&) = delete;
  void lock() ACQUIRE() {
    mu_.lock();
    held_ = true;
  }
  void unlock() RELEASE() {
    held_ = false;
    mu_.unlock();
  }

 private:
  Mutex& mu_;
  bool held_ = true;
};

}  // namespace strait::base

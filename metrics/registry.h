#pragma once
// Prometheus metrics of one process: a registry of counters, gauges and histograms, its text
// exposition (format 0.0.4) and a plain-HTTP `/metrics` endpoint for Prometheus to scrape.
//
// prometheus-cpp stays inside registry.cpp: a metric is a small handle here, so a component
// that counts something includes only this header.
//
// Thread-safety: every method of Registry, MetricsServer and the handles may be called from
// any thread.

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "base/status.h"

namespace strait::metrics {

using Labels = std::map<std::string, std::string>;

// A monotonic counter (names end in _total). A default-constructed handle counts nothing.
class Counter {
 public:
  Counter() = default;
  void inc(double v = 1) const;
  double value() const;

 private:
  friend class Registry;
  explicit Counter(void* m) : m_(m) {}
  void* m_ = nullptr;  // prometheus::Counter, owned by the registry
};

// A value that goes up and down. A default-constructed handle records nothing.
class Gauge {
 public:
  Gauge() = default;
  void set(double v) const;
  void inc(double v = 1) const;
  void dec(double v = 1) const;
  double value() const;

 private:
  friend class Registry;
  explicit Gauge(void* m) : m_(m) {}
  void* m_ = nullptr;  // prometheus::Gauge
};

// Observations counted into cumulative buckets (upper bounds ascending; +Inf is implied).
class Histogram {
 public:
  Histogram() = default;
  void observe(double v) const;

 private:
  friend class Registry;
  explicit Histogram(void* m) : m_(m) {}
  void* m_ = nullptr;  // prometheus::Histogram
};

// Bucket bounds in seconds for request and work durations: 1 ms to 10 s.
std::vector<double> durationBuckets();

class Registry {
 public:
  Registry();
  ~Registry();
  Registry(const Registry&) = delete;
  Registry& operator=(const Registry&) = delete;

  // The series of family `name` with `labels`, created on first use (later calls with the
  // same name and labels return the same series; `help` of the first call is kept). Names
  // and label names follow Prometheus' rules; a wrong one is a programming error (asserts;
  // without assertions the handle records nothing). The handle stays valid as long as the
  // registry.
  Counter counter(const std::string& name, const std::string& help, const Labels& labels = {});
  Gauge gauge(const std::string& name, const std::string& help, const Labels& labels = {});
  Histogram histogram(const std::string& name, const std::string& help,
                      const std::vector<double>& buckets, const Labels& labels = {});

  // Registers `fn`, run before every exposition on the exposing thread (serialized with the
  // other collect hooks) to set gauges from the current state of the process. `fn` must not
  // call text() and must stay callable as long as the registry.
  void onCollect(std::function<void()> fn);

  // Runs the collect hooks, then returns every family in the text format 0.0.4.
  std::string text() const;

  struct Impl;

 private:
  friend class MetricsServer;
  std::shared_ptr<Impl> impl_;  // shared with a MetricsServer's exposer (a weak reference)
};

// Serves GET /metrics of one registry over plain HTTP (what Prometheus scrapes by default).
class MetricsServer {
 public:
  // Binds `host`:`port` (port 0: any free port) and starts serving `registry`, which must
  // outlive the server. Unavailable (with the address) if the address cannot be bound.
  static base::Result<std::unique_ptr<MetricsServer>> start(const std::string& host,
                                                            uint16_t port, Registry& registry);
  ~MetricsServer();  // stops serving
  uint16_t port() const { return port_; }

 private:
  MetricsServer() = default;
  struct State;
  std::unique_ptr<State> state_;
  uint16_t port_ = 0;
};

}  // namespace strait::metrics

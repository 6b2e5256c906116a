// The metrics facade over prometheus-cpp's core (registry, families, text serializer) and
// pull (the civetweb exposer behind MetricsServer) libraries.
#include "metrics/registry.h"

#include <prometheus/collectable.h>
#include <prometheus/counter.h>
#include <prometheus/exposer.h>
#include <prometheus/gauge.h>
#include <prometheus/histogram.h>
#include <prometheus/registry.h>
#include <prometheus/text_serializer.h>

#include <cassert>
#include <mutex>

namespace strait::metrics {

void Counter::inc(double v) const {
  if (m_ != nullptr) static_cast<prometheus::Counter*>(m_)->Increment(v);
}
double Counter::value() const {
  return m_ != nullptr ? static_cast<prometheus::Counter*>(m_)->Value() : 0;
}
void Gauge::set(double v) const {
  if (m_ != nullptr) static_cast<prometheus::Gauge*>(m_)->Set(v);
}
void Gauge::inc(double v) const {
  if (m_ != nullptr) static_cast<prometheus::Gauge*>(m_)->Increment(v);
}
void Gauge::dec(double v) const {
  if (m_ != nullptr) static_cast<prometheus::Gauge*>(m_)->Decrement(v);
}
double Gauge::value() const {
  return m_ != nullptr ? static_cast<prometheus::Gauge*>(m_)->Value() : 0;
}
void Histogram::observe(double v) const {
  if (m_ != nullptr) static_cast<prometheus::Histogram*>(m_)->Observe(v);
}

std::vector<double> durationBuckets() {
  return {0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10};
}

// The registry plus the collect hooks; it is itself the Collectable the exposer reads, so a
// scrape runs the hooks before the families are read.
struct Registry::Impl : prometheus::Collectable {
  std::shared_ptr<prometheus::Registry> registry = std::make_shared<prometheus::Registry>();
  std::mutex mu;  // the family index below
  std::map<std::string, prometheus::Family<prometheus::Counter>*> counters;
  std::map<std::string, prometheus::Family<prometheus::Gauge>*> gauges;
  std::map<std::string, prometheus::Family<prometheus::Histogram>*> histograms;

  // Hooks run under their own mutex (one exposition at a time) and may create series.
  mutable std::mutex hooksMu;
  std::vector<std::function<void()>> hooks;

  std::vector<prometheus::MetricFamily> Collect() const override {
    std::lock_guard<std::mutex> lock(hooksMu);
    for (const auto& h : hooks) h();
    return registry->Collect();
  }
};

Registry::Registry() : impl_(std::make_shared<Impl>()) {}
Registry::~Registry() = default;

// prometheus-cpp throws std::invalid_argument for a malformed name or label: it stays here.
template <class Make>
auto guarded(Make make) -> decltype(make()) {
  try {
    return make();
  } catch (const std::exception& e) {
    assert(!"invalid metric name or label");
    return {};
  }
}

Counter Registry::counter(const std::string& name, const std::string& help, const Labels& labels) {
  std::lock_guard<std::mutex> lock(impl_->mu);
  return guarded([&] {
    auto& f = impl_->counters[name];
    if (f == nullptr) {
      f = &prometheus::BuildCounter().Name(name).Help(help).Register(*impl_->registry);
    }
    return Counter(&f->Add(labels));
  });
}

Gauge Registry::gauge(const std::string& name, const std::string& help, const Labels& labels) {
  std::lock_guard<std::mutex> lock(impl_->mu);
  return guarded([&] {
    auto& f = impl_->gauges[name];
    if (f == nullptr) {
      f = &prometheus::BuildGauge().Name(name).Help(help).Register(*impl_->registry);
    }
    return Gauge(&f->Add(labels));
  });
}

Histogram Registry::histogram(const std::string& name, const std::string& help,
                              const std::vector<double>& buckets, const Labels& labels) {
  std::lock_guard<std::mutex> lock(impl_->mu);
  return guarded([&] {
    auto& f = impl_->histograms[name];
    if (f == nullptr) {
      f = &prometheus::BuildHistogram().Name(name).Help(help).Register(*impl_->registry);
    }
    return Histogram(&f->Add(labels, buckets));
  });
}

void Registry::onCollect(std::function<void()> fn) {
  std::lock_guard<std::mutex> lock(impl_->hooksMu);
  impl_->hooks.push_back(std::move(fn));
}

std::string Registry::text() const {
  return prometheus::TextSerializer().Serialize(impl_->Collect());
}

struct MetricsServer::State {
  std::unique_ptr<prometheus::Exposer> exposer;
};

base::Result<std::unique_ptr<MetricsServer>> MetricsServer::start(const std::string& host,
                                                                  uint16_t port,
                                                                  Registry& registry) {
  const std::string address = (host.find(':') != std::string::npos ? "[" + host + "]" : host) +
                              ":" + std::to_string(port);
  std::unique_ptr<MetricsServer> server(new MetricsServer());
  server->state_ = std::make_unique<State>();
  try {
    server->state_->exposer = std::make_unique<prometheus::Exposer>(address, 2);
  } catch (const std::exception& e) {
    return base::makeError(base::Code::Unavailable,
                           "metrics: cannot listen on " + address + ": " + e.what());
  }
  server->state_->exposer->RegisterCollectable(registry.impl_, "/metrics");
  std::vector<int> ports = server->state_->exposer->GetListeningPorts();
  server->port_ = ports.empty() ? port : static_cast<uint16_t>(ports.front());
  return server;
}

MetricsServer::~MetricsServer() = default;

}  // namespace strait::metrics

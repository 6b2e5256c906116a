// metrics/registry.h: series, the text format 0.0.4, collect hooks and the /metrics server.
#include "metrics/registry.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <memory>
#include <string>

namespace strait::metrics {
namespace {

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

TEST(MetricsRegistryTest, CountersGaugesAndHistogramsInTextFormat) {
  Registry r;
  Counter c = r.counter("strait_test_requests_total", "Requests", {{"code", "200"}});
  c.inc();
  c.inc(2);
  // The same name and labels: the same series.
  EXPECT_EQ(r.counter("strait_test_requests_total", "Requests", {{"code", "200"}}).value(), 3);
  r.counter("strait_test_requests_total", "Requests", {{"code", "404"}}).inc();
  Gauge g = r.gauge("strait_test_depth", "Depth");
  g.set(7);
  g.dec(2);
  Histogram h = r.histogram("strait_test_duration_seconds", "Durations", {0.1, 1});
  h.observe(0.05);
  h.observe(0.5);
  h.observe(5);

  const std::string text = r.text();
  EXPECT_TRUE(contains(text, "# HELP strait_test_requests_total Requests\n")) << text;
  EXPECT_TRUE(contains(text, "# TYPE strait_test_requests_total counter\n")) << text;
  EXPECT_TRUE(contains(text, "strait_test_requests_total{code=\"200\"} 3\n")) << text;
  EXPECT_TRUE(contains(text, "strait_test_requests_total{code=\"404\"} 1\n")) << text;
  EXPECT_TRUE(contains(text, "# TYPE strait_test_depth gauge\nstrait_test_depth 5\n")) << text;
  EXPECT_TRUE(contains(text, "strait_test_duration_seconds_bucket{le=\"0.1\"} 1\n")) << text;
  EXPECT_TRUE(contains(text, "strait_test_duration_seconds_bucket{le=\"1\"} 2\n")) << text;
  EXPECT_TRUE(contains(text, "strait_test_duration_seconds_bucket{le=\"+Inf\"} 3\n")) << text;
  EXPECT_TRUE(contains(text, "strait_test_duration_seconds_count 3\n")) << text;
  EXPECT_TRUE(contains(text, "strait_test_duration_seconds_sum 5.55\n")) << text;
}

TEST(MetricsRegistryTest, CollectHooksRunBeforeEachExpositionAndMayCreateSeries) {
  Registry r;
  int scrapes = 0;
  r.onCollect([&] {
    ++scrapes;
    r.gauge("strait_test_scrapes", "Scrapes so far").set(scrapes);
  });
  EXPECT_TRUE(contains(r.text(), "strait_test_scrapes 1\n"));
  EXPECT_TRUE(contains(r.text(), "strait_test_scrapes 2\n"));
}

TEST(MetricsRegistryTest, DefaultHandlesRecordNothing) {
  Counter c;
  Gauge g;
  Histogram h;
  c.inc();
  g.set(3);
  h.observe(1);
  EXPECT_EQ(c.value(), 0);
  EXPECT_EQ(g.value(), 0);
}

std::string run(const std::string& command) {
  std::string out;
  FILE* p = popen(command.c_str(), "r");
  if (p == nullptr) return out;
  char buf[4096];
  for (size_t n; (n = fread(buf, 1, sizeof buf, p)) > 0;) out.append(buf, n);
  pclose(p);
  return out;
}

TEST(MetricsServerTest, ServesTheRegistryOnMetricsOverPlainHttp) {
  Registry r;
  r.gauge("strait_test_up", "Up").set(1);
  base::Result<std::unique_ptr<MetricsServer>> s = MetricsServer::start("127.0.0.1", 0, r);
  ASSERT_TRUE(s.ok()) << s.error().message;
  ASSERT_NE((*s)->port(), 0);
  const std::string url = "http://127.0.0.1:" + std::to_string((*s)->port());
  const std::string body = run("curl -sS " + url + "/metrics");
  EXPECT_TRUE(contains(body, "# TYPE strait_test_up gauge\nstrait_test_up 1\n")) << body;
  EXPECT_EQ(run("curl -s -o /dev/null -w '%{http_code}' " + url + "/nothing"), "404");
  // Prometheus reads any text/plain answer as the text format 0.0.4.
  EXPECT_EQ(run("curl -s -o /dev/null -w '%{content_type}' " + url + "/metrics").rfind(
                "text/plain", 0),
            0u);
}

TEST(MetricsServerTest, AnAddressInUseIsUnavailable) {
  Registry r;
  base::Result<std::unique_ptr<MetricsServer>> first = MetricsServer::start("127.0.0.1", 0, r);
  ASSERT_TRUE(first.ok());
  base::Result<std::unique_ptr<MetricsServer>> second =
      MetricsServer::start("127.0.0.1", (*first)->port(), r);
  ASSERT_FALSE(second.ok());
  EXPECT_EQ(second.error().code, base::Code::Unavailable);
  EXPECT_TRUE(contains(second.error().message, "127.0.0.1")) << second.error().message;
}

}  // namespace
}  // namespace strait::metrics

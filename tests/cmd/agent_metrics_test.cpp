// The agent's reflection exporter (cmd/agent_metrics.h) on a real metrics registry: the
// series exist at 0 from the start, the counts of reflection arrive under Prometheus names
// and labels, queue depths and Pods per virtual node are read at each exposition and drop
// to 0 when their source goes.
#include "cmd/agent_metrics.h"

#include <gtest/gtest.h>

#include <regex>
#include <sstream>

namespace strait::cmd {
namespace {

using reflection::StreamDirection;
using reflection::StreamError;
using reflection::StreamSide;
using reflection::WorkResult;

// The value of `series` (name and labels as exposed) in `text`; -1 when absent.
double sample(const std::string& text, const std::string& series) {
  std::stringstream ss(text);
  for (std::string line; std::getline(ss, line);) {
    if (line.rfind(series + " ", 0) == 0) return std::stod(line.substr(series.size() + 1));
  }
  return -1;
}

TEST(ReflectionExporterTest, EverySeriesASideUsesExistsAtZeroBeforeAnything) {
  auto registry = std::make_shared<metrics::Registry>();
  ReflectionExporter exporter(registry);
  const std::string text = registry->text();
  EXPECT_EQ(sample(text, "strait_stream_reconnects_total"), 0) << text;
  EXPECT_EQ(
      sample(text,
             R"(strait_stream_messages_total{direction="sent",side="consumer",type="APPLY"})"),
      0)
      << text;
  EXPECT_EQ(
      sample(text,
             R"(strait_stream_bytes_total{direction="received",side="consumer",type="STATUS"})"),
      0)
      << text;
  EXPECT_EQ(
      sample(text,
             R"(strait_stream_messages_total{direction="sent",side="provider",type="REPLY"})"),
      0)
      << text;
  EXPECT_EQ(sample(text, R"(strait_stream_errors_total{reason="dial",side="consumer"})"), 0)
      << text;
  EXPECT_EQ(sample(text, R"(strait_stream_errors_total{reason="request_failed",side="provider"})"),
            0)
      << text;
  // What a side never does has no series: the provider does not dial, the consumer does not
  // send STATUS.
  EXPECT_EQ(sample(text, R"(strait_stream_errors_total{reason="dial",side="provider"})"), -1);
  EXPECT_EQ(
      sample(text,
             R"(strait_stream_messages_total{direction="sent",side="consumer",type="STATUS"})"),
      -1);
}

TEST(ReflectionExporterTest, CountsArriveUnderPrometheusNamesAndGaugesFollowTheirSources) {
  auto registry = std::make_shared<metrics::Registry>();
  ReflectionExporter exporter(registry);
  exporter.streamMessage(StreamSide::Consumer, StreamDirection::Sent, "APPLY", 1200);
  exporter.streamMessage(StreamSide::Consumer, StreamDirection::Sent, "APPLY", 800);
  exporter.streamMessage(StreamSide::Provider, StreamDirection::Received, "UNKNOWN", 7);
  exporter.streamError(StreamSide::Consumer, StreamError::Broken);
  exporter.streamReconnected();
  exporter.workHandled("Pod", WorkResult::Done, 0.003);
  exporter.workHandled("Pod", WorkResult::Done, 0.2);
  exporter.workHandled("Pod", WorkResult::Retry, 0.0005);
  size_t depth = 5, pods = 12;
  exporter.queueAdded("strait-cloud", "Pod", [&] { return depth; });
  exporter.podsAdded("strait-cloud", [&] { return pods; });

  std::string text = registry->text();
  EXPECT_EQ(
      sample(text,
             R"(strait_stream_messages_total{direction="sent",side="consumer",type="APPLY"})"),
      2)
      << text;
  EXPECT_EQ(
      sample(text, R"(strait_stream_bytes_total{direction="sent",side="consumer",type="APPLY"})"),
      2000);
  EXPECT_EQ(
      sample(
          text,
          R"(strait_stream_messages_total{direction="received",side="provider",type="UNKNOWN"})"),
      1);
  EXPECT_EQ(sample(text, R"(strait_stream_errors_total{reason="broken",side="consumer"})"), 1);
  EXPECT_EQ(sample(text, "strait_stream_reconnects_total"), 1);
  EXPECT_EQ(
      sample(text, R"(strait_reflection_work_duration_seconds_count{kind="Pod",result="done"})"),
      2);
  EXPECT_NEAR(
      sample(text, R"(strait_reflection_work_duration_seconds_sum{kind="Pod",result="done"})"),
      0.203, 1e-9);
  // The 3 ms observation is in the 5 ms bucket (cumulative: 1 of the 2 done items).
  EXPECT_TRUE(std::regex_search(
      text, std::regex(
                R"re(strait_reflection_work_duration_seconds_bucket\{[^}]*le="0\.005[0-9]*"[^}]*\} 1\n)re")))
      << text;
  EXPECT_EQ(
      sample(text, R"(strait_reflection_work_duration_seconds_count{kind="Pod",result="retry"})"),
      1);
  EXPECT_EQ(sample(text, R"(strait_reflection_queue_depth{kind="Pod",reflector="strait-cloud"})"),
            5);
  EXPECT_EQ(sample(text, R"(strait_virtual_node_pods{node="strait-cloud"})"), 12);

  depth = 0;
  pods = 13;
  text = registry->text();  // read again at each exposition
  EXPECT_EQ(sample(text, R"(strait_reflection_queue_depth{kind="Pod",reflector="strait-cloud"})"),
            0);
  EXPECT_EQ(sample(text, R"(strait_virtual_node_pods{node="strait-cloud"})"), 13);

  depth = 9;
  exporter.queueRemoved("strait-cloud", "Pod");
  exporter.podsRemoved("strait-cloud");
  text = registry->text();  // sources gone: 0, never read again
  EXPECT_EQ(sample(text, R"(strait_reflection_queue_depth{kind="Pod",reflector="strait-cloud"})"),
            0);
  EXPECT_EQ(sample(text, R"(strait_virtual_node_pods{node="strait-cloud"})"), 0);
}

}  // namespace
}  // namespace strait::cmd

// Prometheus metrics of real processes: a consumer ("home") and a provider ("cloud")
// minicluster, both started with --metrics-listen, their agents too, peered. curl scrapes
// every /metrics, Debian's `promtool check metrics` lints each exposition, the values follow
// the peering and an offloaded Deployment, and a real Debian `prometheus` server scrapes the
// consumer's agent and answers a PromQL query on strait_peerings through its HTTP API.
// The promtool and prometheus checks are skipped (with the reason) when those commands are
// absent; everything else always runs.

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <nlohmann/json.hpp>
#include <regex>
#include <sstream>

#include "e2e/offload_fixture.h"

namespace strait::e2e {
namespace {

using json = nlohmann::json;
using namespace std::chrono_literals;

// The port of the "event=metrics_serving address=HOST:PORT" line in `log`; 0 when absent.
int metricsPort(const std::string& log) {
  std::smatch m;
  static const std::regex line(R"(event=metrics_serving address=\S+:(\d+))");
  return std::regex_search(log, m, line) ? std::stoi(m[1]) : 0;
}

bool haveCommand(const std::string& name) {
  return runCommand({"sh", "-c", "command -v " + name}).exitCode == 0;
}

// A port nothing listens on now (bound to 0 and released).
int freePort() {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof a;
  if (fd < 0 || ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 ||
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) != 0) {
    if (fd >= 0) ::close(fd);
    return 0;
  }
  ::close(fd);
  return ntohs(a.sin_port);
}

// The value of the sample `series` (name with its labels exactly as exposed) in `text`;
// -1 when absent.
double sample(const std::string& text, const std::string& series) {
  std::stringstream ss(text);
  for (std::string line; std::getline(ss, line);) {
    if (line.rfind(series + " ", 0) == 0) return std::stod(line.substr(series.size() + 1));
  }
  return -1;
}

// The sum of the samples whose series (name and labels) matches `pattern`; 0 when none.
double sumMatching(const std::string& text, const std::string& pattern) {
  std::stringstream ss(text);
  const std::regex re(pattern);
  double sum = 0;
  for (std::string line; std::getline(ss, line);) {
    const size_t space = line.rfind(' ');
    if (line.empty() || line[0] == '#' || space == std::string::npos) continue;
    if (std::regex_match(line.substr(0, space), re)) sum += std::stod(line.substr(space + 1));
  }
  return sum;
}

class MetricsTest : public OffloadSuite {
 protected:
  static void SetUpTestSuite() {
    OffloadSetup s;
    s.homeArgs.insert(s.homeArgs.end(), {"--metrics-listen", "127.0.0.1:0"});
    s.cloudArgs.insert(s.cloudArgs.end(), {"--metrics-listen", "127.0.0.1:0"});
    s.homeAgentArgs = {"--metrics-listen", "127.0.0.1:0"};
    s.cloudAgentArgs = {"--metrics-listen", "127.0.0.1:0"};
    startAll(s);
  }
  static void TearDownTestSuite() { stopAll(); }

  // GET http://127.0.0.1:`port`/metrics; "" when it fails.
  std::string scrape(int port) {
    CommandResult r = runCommand(
        {"curl", "-sS", "--max-time", "10", "http://127.0.0.1:" + std::to_string(port) + "/metrics"});
    return r.exitCode == 0 ? r.out : "";
  }
  // `promtool check metrics` on `text`: "" when it passes or promtool is absent, else why not.
  std::string promtoolProblems(const std::string& text) {
    if (!haveCommand("promtool")) return "";
    CommandResult r = runCommand({"promtool", "check", "metrics"}, {}, 30s, text);
    return r.exitCode == 0 ? "" : r.describe();
  }
  std::string deployment(int replicas) {
    return R"({"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"web","namespace":"demo"},
      "spec":{"replicas":)" + std::to_string(replicas) + R"(,"selector":{"matchLabels":{"app":"web"}},
        "template":{"metadata":{"labels":{"app":"web"}},"spec":{"terminationGracePeriodSeconds":1,
          "nodeSelector":{"type":"virtual-kubelet"},
          "containers":[{"name":"web","image":"nginx:1.27",
            "resources":{"requests":{"cpu":"100m","memory":"64Mi"}}}]}}}})";
  }
};

TEST_F(MetricsTest, AgentsAndApiServersServeMetricsThatPromtoolAcceptsAndThatFollowTheClusters) {
  const int homeAgentPort = metricsPort(homeAgent_->logs());
  const int cloudAgentPort = metricsPort(cloudAgent_->logs());
  const int homeApiPort = metricsPort(home_->serverLog());
  const int cloudApiPort = metricsPort(cloud_->serverLog());
  ASSERT_GT(homeAgentPort, 0) << homeAgent_->logs();
  ASSERT_GT(cloudAgentPort, 0) << cloudAgent_->logs();
  ASSERT_GT(homeApiPort, 0) << home_->serverLog();
  ASSERT_GT(cloudApiPort, 0) << cloud_->serverLog();

  // The peering (home consumes cloud): each agent counts one connected peering, in its role.
  const std::string homeProvider = R"(strait_peerings{role="provider",state="connected"})";
  const std::string cloudConsumer = R"(strait_peerings{role="consumer",state="connected"})";
  EXPECT_TRUE(waitFor([&] { return sample(scrape(homeAgentPort), homeProvider) == 1; }, 30s))
      << scrape(homeAgentPort) << agentLogs();
  EXPECT_TRUE(waitFor([&] { return sample(scrape(cloudAgentPort), cloudConsumer) == 1; }, 30s))
      << scrape(cloudAgentPort) << agentLogs();
  std::string homeText = scrape(homeAgentPort);
  EXPECT_EQ(sample(homeText, R"(strait_peerings{role="consumer",state="connected"})"), 0) << homeText;
  EXPECT_EQ(sample(homeText, R"(strait_peerings{role="provider",state="pending"})"), 0) << homeText;
  // What `strait peer` asked for (--cpu 32 --memory 64Gi --pods 100) is granted, in base units.
  EXPECT_TRUE(waitFor([&] {
    return sample(scrape(homeAgentPort),
                  R"(strait_granted_cpu_cores{cluster="cloud",role="provider"})") == 32;
  }, 30s)) << scrape(homeAgentPort);
  homeText = scrape(homeAgentPort);
  EXPECT_EQ(sample(homeText, R"(strait_granted_memory_bytes{cluster="cloud",role="provider"})"),
            64.0 * 1024 * 1024 * 1024)
      << homeText;
  EXPECT_EQ(sample(homeText, R"(strait_granted_pods{cluster="cloud",role="provider"})"), 100)
      << homeText;

  // Offloaded Pods follow a Deployment pinned to the virtual node.
  EXPECT_EQ(sample(scrape(cloudAgentPort), "strait_offloaded_pods"), 0);
  CommandResult d = kubectl(*home_, {"apply", "-f", "-"}, deployment(3));
  ASSERT_EQ(d.exitCode, 0) << d.describe();
  EXPECT_TRUE(waitFor([&] { return sample(scrape(cloudAgentPort), "strait_offloaded_pods") == 3; },
                      60s))
      << scrape(cloudAgentPort) << agentLogs();
  ASSERT_EQ(kubectl(*home_, {"scale", "deployment", "web", "-n", "demo", "--replicas", "1"}).exitCode,
            0);
  EXPECT_TRUE(waitFor([&] { return sample(scrape(cloudAgentPort), "strait_offloaded_pods") == 1; },
                      60s))
      << scrape(cloudAgentPort) << agentLogs();

  // The reflection of those Pods, on both sides of the stream. The consumer (home) sent
  // APPLYs and got STATUSes back, its reflector handled Pod work items, its virtual node
  // holds the remaining Pod; the provider (cloud) received the APPLYs and sent the STATUSes.
  EXPECT_TRUE(waitFor([&] {
    return sample(scrape(homeAgentPort),
                  "strait_virtual_node_pods{node=\"" + std::string(kVirtualNode) + "\"}") == 1;
  }, 60s)) << scrape(homeAgentPort);
  homeText = scrape(homeAgentPort);
  const std::string cloudText = scrape(cloudAgentPort);
  const auto series = [](const char* name, const char* side, const char* direction,
                         const char* type) {
    return std::string(name) + R"({direction=")" + direction + R"(",side=")" + side +
           R"(",type=")" + type + R"("})";
  };
  const double applies = sample(homeText, series("strait_stream_messages_total", "consumer", "sent", "APPLY"));
  EXPECT_GE(applies, 3) << homeText;  // one per Pod at least (a Pod's dependencies add more)
  const double applyBytes = sample(homeText, series("strait_stream_bytes_total", "consumer", "sent", "APPLY"));
  EXPECT_GT(applyBytes, 300 * applies) << homeText;  // a forged Pod's JSON is hundreds of bytes
  EXPECT_LT(applyBytes, 100000 * applies) << homeText;
  EXPECT_GE(sample(homeText, series("strait_stream_messages_total", "consumer", "received", "STATUS")), 3)
      << homeText;
  EXPECT_GE(sample(homeText, series("strait_stream_messages_total", "consumer", "received", "REPLY")), 3)
      << homeText;
  EXPECT_GE(sample(homeText, series("strait_stream_messages_total", "consumer", "sent", "RESYNC_BEGIN")), 1)
      << homeText;
  EXPECT_GE(sample(homeText, series("strait_stream_messages_total", "consumer", "received", "SYNCED")), 1)
      << homeText;
  EXPECT_GE(sample(homeText, series("strait_stream_messages_total", "consumer", "sent", "DELETE")), 2)
      << homeText;  // the two Pods scaled away
  EXPECT_EQ(sample(homeText, series("strait_stream_messages_total", "consumer", "received", "UNKNOWN")), -1)
      << homeText;
  EXPECT_GE(sample(homeText, "strait_stream_reconnects_total"), 0) << homeText;
  EXPECT_EQ(sample(homeText, R"(strait_stream_errors_total{reason="bad_message",side="consumer"})"), 0)
      << homeText;
  const double work = sample(homeText,
      R"(strait_reflection_work_duration_seconds_count{kind="Pod",result="done"})");
  EXPECT_GE(work, 3) << homeText;
  const double workSeconds = sample(homeText,
      R"(strait_reflection_work_duration_seconds_sum{kind="Pod",result="done"})");
  EXPECT_GT(workSeconds, 0) << homeText;
  EXPECT_LT(workSeconds / work, 10) << homeText;  // seconds, not milliseconds
  EXPECT_GE(sample(homeText, "strait_reflection_queue_depth{kind=\"Pod\",reflector=\"" +
                                 std::string(kVirtualNode) + "\"}"), 0)
      << homeText;
  // The provider's mirror image of the same traffic.
  EXPECT_GE(sample(cloudText, series("strait_stream_messages_total", "provider", "received", "APPLY")),
            applies > 0 ? 3 : 1)
      << cloudText;
  EXPECT_GE(sample(cloudText, series("strait_stream_messages_total", "provider", "sent", "STATUS")), 3)
      << cloudText;
  EXPECT_GT(sample(cloudText, series("strait_stream_bytes_total", "provider", "sent", "STATUS")), 0)
      << cloudText;
  EXPECT_EQ(sample(cloudText, R"(strait_stream_errors_total{reason="request_failed",side="provider"})"), 0)
      << cloudText;

  // The API servers count requests by upstream verb, resource and code; the agents' watches
  // are open now.
  const std::string apiText = scrape(homeApiPort);
  EXPECT_GT(sample(apiText, R"(apiserver_request_total{code="201",resource="deployments",verb="POST"})"), 0)
      << apiText;
  EXPECT_GT(sumMatching(apiText,
                        R"re(apiserver_request_total\{code="200",resource="deployments/scale",verb="(PATCH|PUT)"\})re"),
            0)
      << apiText;
  EXPECT_GT(sample(apiText, R"(apiserver_longrunning_requests{resource="pods",verb="WATCH"})"), 0)
      << apiText;
  EXPECT_GT(sample(apiText, R"(apiserver_request_duration_seconds_count{resource="deployments",verb="POST"})"), 0)
      << apiText;

  if (!haveCommand("promtool")) {
    GTEST_SKIP() << "promtool is absent (Debian package prometheus): the expositions were not "
                    "linted";
  }
  for (int port : {homeAgentPort, cloudAgentPort, homeApiPort, cloudApiPort}) {
    const std::string text = scrape(port);
    ASSERT_FALSE(text.empty()) << port;
    EXPECT_EQ(promtoolProblems(text), "") << "port " << port << ":\n" << text;
  }
}

// A real Prometheus server scrapes the consumer's agent; PromQL over its HTTP API sees the
// one connected peering.
TEST_F(MetricsTest, PrometheusScrapesTheAgentAndAnswersAQueryOnPeerings) {
  if (!haveCommand("prometheus")) {
    GTEST_SKIP() << "prometheus is absent (Debian package prometheus)";
  }
  const int agentPort = metricsPort(homeAgent_->logs());
  ASSERT_GT(agentPort, 0) << homeAgent_->logs();
  const int port = freePort();
  ASSERT_GT(port, 0);
  ASSERT_TRUE(writeFile(dir_->file("prometheus.yml"),
                        "global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\n"
                        "scrape_configs:\n  - job_name: strait-agent\n    static_configs:\n"
                        "      - targets: ['127.0.0.1:" + std::to_string(agentPort) + "']\n"));
  BackgroundProcess prometheus;
  std::string error;
  ASSERT_TRUE(prometheus.start(
      {"prometheus", "--config.file=" + dir_->file("prometheus.yml"),
       "--storage.tsdb.path=" + dir_->file("tsdb"),
       "--web.listen-address=127.0.0.1:" + std::to_string(port)},
      {}, dir_->file("prometheus.out"), dir_->file("prometheus.err"), &error))
      << error;
  const std::string url = "http://127.0.0.1:" + std::to_string(port) + "/api/v1/query";
  std::string last;
  const bool answered = waitFor([&] {
    CommandResult r = runCommand({"curl", "-sS", "--max-time", "5", url, "--data-urlencode",
                                  R"(query=strait_peerings{job="strait-agent",role="provider",state="connected"})"});
    last = r.out;
    json j = json::parse(r.out, nullptr, false);
    if (j.is_discarded() || j.value("status", "") != "success") return false;
    const json& result = j["data"]["result"];
    return result.is_array() && result.size() == 1 && result[0]["value"][1] == "1";
  }, 60s, 500ms);
  EXPECT_TRUE(answered) << last << "\n" << prometheus.stderrText();
  // The reflection series are scraped too: the stream's keepalives and resync alone are
  // consumer messages.
  const bool streamed = waitFor([&] {
    CommandResult r = runCommand({"curl", "-sS", "--max-time", "5", url, "--data-urlencode",
                                  R"(query=sum(strait_stream_messages_total{side="consumer",direction="sent"}))"});
    last = r.out;
    json j = json::parse(r.out, nullptr, false);
    if (j.is_discarded() || j.value("status", "") != "success") return false;
    const json& result = j["data"]["result"];
    return result.is_array() && result.size() == 1 && result[0]["value"][1].is_string() &&
           std::stod(result[0]["value"][1].get<std::string>()) > 0;
  }, 60s, 500ms);
  EXPECT_TRUE(streamed) << last;
  // The target is up and nothing else about the peering is counted as connected consumer.
  CommandResult consumer = runCommand({"curl", "-sS", url, "--data-urlencode",
                                       R"(query=sum(strait_peerings{state="connected"}))"});
  json j = json::parse(consumer.out, nullptr, false);
  ASSERT_FALSE(j.is_discarded()) << consumer.describe();
  EXPECT_EQ(j["data"]["result"][0]["value"][1], "1") << consumer.out;
  prometheus.stop();
}

}  // namespace
}  // namespace strait::e2e

// The pure parts of `strait demo`'s display: counting Pods by where they run, the progress
// line (redrawn on a terminal, one plain line per change otherwise), and the summary table
// joined with the provider's Pods by origin uid.
#include "cmd/demo_view.h"

#include <gtest/gtest.h>

#include <sstream>

namespace strait::cmd {
namespace {

using nlohmann::json;
using namespace std::chrono_literals;

json pod(const std::string& name, const std::string& node, const std::string& phase,
         const std::string& uid = "", bool deleting = false) {
  json p = {{"metadata", {{"name", name}, {"uid", uid.empty() ? "uid-" + name : uid}}},
            {"spec", json::object()},
            {"status", {{"phase", phase}}}};
  if (!node.empty()) p["spec"]["nodeName"] = node;
  if (deleting) p["metadata"]["deletionTimestamp"] = "2026-11-30T08:00:00Z";
  if (phase == "Running") p["status"]["podIP"] = "10.244.0." + std::to_string(name.size());
  return p;
}

json list(std::vector<json> items) { return {{"kind", "PodList"}, {"items", items}}; }

TEST(DemoViewTest, CountsHomeCloudAndPendingAndSkipsTerminating) {
  json pods = list({pod("a", "node-0", "Running"), pod("b", "node-1", "Running"),
                    pod("c", "strait-cloud", "Running"), pod("d", "strait-cloud", "Pending"),
                    pod("e", "", "Pending"), pod("f", "node-0", "Running", "", true)});
  DemoProgress p = countProgress(pods, "strait-cloud");
  EXPECT_EQ(p.runningHome, 2);
  EXPECT_EQ(p.runningCloud, 1);
  EXPECT_EQ(p.pending, 2);
  EXPECT_EQ(p.total(), 5);
  EXPECT_EQ(countProgress(json::object(), "strait-cloud").total(), 0);  // no items: no crash
  EXPECT_EQ(countProgress(json{{"items", 3}}, "strait-cloud").total(), 0);
}

TEST(DemoViewTest, PlainOutputPrintsOneLinePerChange) {
  std::ostringstream out;
  ProgressDisplay d(out, false, 20);
  d.update({0, 0, 20}, 1000ms);
  d.update({0, 0, 20}, 1500ms);  // unchanged: nothing
  d.update({8, 3, 9}, 2500ms);
  d.finish();
  EXPECT_EQ(out.str(),
            "progress: running_home=0 running_cloud=0 pending=20 elapsed=1.0s\n"
            "progress: running_home=8 running_cloud=3 pending=9 elapsed=2.5s\n");
}

TEST(DemoViewTest, TerminalOutputRedrawsInPlace) {
  std::ostringstream out;
  ProgressDisplay d(out, true, 20);
  d.update({0, 0, 20}, 1000ms);
  d.update({8, 12, 0}, 2000ms);
  d.finish();
  std::string s = out.str();
  EXPECT_EQ(s.find('\n'), s.size() - 1) << "only the final newline: " << s;
  EXPECT_EQ(s.rfind("\r\033[2K", 0), 0u);
  EXPECT_NE(s.find("at home "), std::string::npos);
  EXPECT_NE(s.find(" 8   in the cloud "), std::string::npos) << s;
  EXPECT_NE(s.find(" 12   pending 0   (2.0s)"), std::string::npos) << s;
}

TEST(DemoViewTest, SummaryJoinsRemotePodsByOriginUid) {
  json local = list({pod("web-b", "strait-cloud", "Running", "u-b"),
                     pod("web-a", "node-0", "Running", "u-a"),
                     pod("web-c", "strait-cloud", "Pending", "u-c")});
  json remoteB = {{"metadata",
                   {{"name", "web-b"},
                    {"namespace", "demo-abc"},
                    {"labels", {{"strait.io/origin-uid", "u-b"}}}}},
                  {"spec", {{"nodeName", "node-3"}}}};
  json remoteOther = {{"metadata",
                       {{"name", "web-x"},
                        {"namespace", "demo-abc"},
                        {"labels", {{"strait.io/origin-uid", "u-x"}}}}},
                      {"spec", {{"nodeName", "node-1"}}}};
  auto rows = summaryRows(local, list({remoteB, remoteOther}), "strait-cloud");
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_EQ(rows[0].name, "web-a");  // home first
  EXPECT_EQ(rows[0].remoteNamespace, "");
  EXPECT_EQ(rows[1].name, "web-b");
  EXPECT_EQ(rows[1].remoteNamespace, "demo-abc");
  EXPECT_EQ(rows[1].remoteNode, "node-3");
  EXPECT_EQ(rows[2].name, "web-c");
  EXPECT_EQ(rows[2].remoteNamespace, "");  // not (yet) in the provider

  std::string table = summaryTable(rows);
  std::istringstream in(table);
  std::string header, a, b, c;
  std::getline(in, header);
  std::getline(in, a);
  std::getline(in, b);
  std::getline(in, c);
  EXPECT_EQ(header.find("POD"), 2u);
  EXPECT_NE(header.find("REMOTE NAMESPACE/NODE"), std::string::npos);
  EXPECT_NE(b.find("demo-abc/node-3"), std::string::npos) << table;
  EXPECT_NE(c.find("Pending"), std::string::npos) << table;
  // Columns line up: NODE starts at the same offset in every row.
  EXPECT_EQ(a.find("node-0"), header.find("NODE")) << table;
  EXPECT_EQ(b.find("strait-cloud"), header.find("NODE")) << table;
}

}  // namespace
}  // namespace strait::cmd

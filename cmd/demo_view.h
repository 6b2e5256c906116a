#pragma once
// What `strait demo` shows: the progress of the demo Deployment's Pods (Running at home, in
// the cloud, Pending) and the final table. Pure functions of the Pod lists; no I/O except
// ProgressDisplay, which writes to the stream it is given. Not thread-safe.

#include <chrono>
#include <nlohmann/json.hpp>
#include <ostream>
#include <string>
#include <vector>

namespace strait::cmd {

struct DemoProgress {
  int runningHome = 0;   // Running on a real node of the home cluster
  int runningCloud = 0;  // Running on the virtual node
  int pending = 0;       // every other Pod (not yet bound, or bound and starting)
  int total() const { return runningHome + runningCloud + pending; }
  bool operator==(const DemoProgress&) const = default;
};

// Counts the Pods of a PodList (terminating ones are left out). `virtualNode` is the name of
// the virtual node.
DemoProgress countProgress(const nlohmann::json& podList, const std::string& virtualNode);

// One line per change. On a terminal the line is redrawn in place (carriage return and
// erase) with bars; otherwise a plain "progress: ..." line is printed only when the counts
// change.
class ProgressDisplay {
 public:
  ProgressDisplay(std::ostream& out, bool terminal, int wanted)
      : out_(out), terminal_(terminal), wanted_(wanted) {}
  void update(const DemoProgress& p, std::chrono::milliseconds elapsed);
  // Ends the in-place line (terminal) so that later output starts on a new line.
  void finish();

 private:
  std::ostream& out_;
  bool terminal_;
  int wanted_;
  bool drawn_ = false;
  DemoProgress last_{-1, -1, -1};
};

struct DemoPodRow {
  std::string name;
  std::string node;
  std::string phase;
  std::string podIP;
  std::string remoteNamespace;  // "" when the Pod runs at home
  std::string remoteNode;
};

// Rows for the local Pods, joined with the provider's Pods by the strait.io/origin-uid label.
// Sorted: home first, then cloud, by name.
std::vector<DemoPodRow> summaryRows(const nlohmann::json& localPods,
                                    const nlohmann::json& remotePods,
                                    const std::string& virtualNode);
// An aligned text table: POD NODE PHASE IP REMOTE NAMESPACE/NODE.
std::string summaryTable(const std::vector<DemoPodRow>& rows);

}  // namespace strait::cmd

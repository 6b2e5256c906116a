#include "cmd/demo_view.h"

#include <algorithm>
#include <map>
#include <sstream>

#include "reflection/labels.h"

namespace strait::cmd {

namespace {

std::string str(const nlohmann::json& j, const nlohmann::json::json_pointer& p) {
  if (!j.contains(p)) return {};
  const nlohmann::json& v = j.at(p);
  return v.is_string() ? v.get<std::string>() : std::string();
}

const nlohmann::json& items(const nlohmann::json& list) {
  static const nlohmann::json empty = nlohmann::json::array();
  auto it = list.find("items");
  return it != list.end() && it->is_array() ? *it : empty;
}

bool terminating(const nlohmann::json& pod) {
  return pod.contains("metadata") && pod["metadata"].contains("deletionTimestamp");
}

std::string bar(int n, int wanted, int width) {
  if (wanted <= 0) return {};
  int filled = std::min(width, (n * width + wanted - 1) / wanted);
  std::string s;
  for (int i = 0; i < width; ++i) s += i < filled ? "\u2588" : "\u00b7";
  return s;
}

}  // namespace

DemoProgress countProgress(const nlohmann::json& podList, const std::string& virtualNode) {
  using P = nlohmann::json::json_pointer;
  DemoProgress p;
  for (const nlohmann::json& pod : items(podList)) {
    if (terminating(pod)) continue;
    bool running = str(pod, P("/status/phase")) == "Running";
    std::string node = str(pod, P("/spec/nodeName"));
    if (!running) {
      ++p.pending;
    } else if (node == virtualNode) {
      ++p.runningCloud;
    } else {
      ++p.runningHome;
    }
  }
  return p;
}

void ProgressDisplay::update(const DemoProgress& p, std::chrono::milliseconds elapsed) {
  char secs[32];
  std::snprintf(secs, sizeof(secs), "%.1fs", elapsed.count() / 1000.0);
  if (terminal_) {
    out_ << "\r\033[2K  at home " << bar(p.runningHome, wanted_, 10) << " " << p.runningHome
         << "   in the cloud " << bar(p.runningCloud, wanted_, 10) << " " << p.runningCloud
         << "   pending " << p.pending << "   (" << secs << ")" << std::flush;
    drawn_ = true;
  } else if (!(p == last_)) {
    out_ << "progress: running_home=" << p.runningHome << " running_cloud=" << p.runningCloud
         << " pending=" << p.pending << " elapsed=" << secs << "\n"
         << std::flush;
  }
  last_ = p;
}

void ProgressDisplay::finish() {
  if (terminal_ && drawn_) out_ << "\n" << std::flush;
  drawn_ = false;
}

std::vector<DemoPodRow> summaryRows(const nlohmann::json& localPods,
                                    const nlohmann::json& remotePods,
                                    const std::string& virtualNode) {
  using P = nlohmann::json::json_pointer;
  std::map<std::string, const nlohmann::json*> byOrigin;
  for (const nlohmann::json& r : items(remotePods)) {
    std::string uid = str(r, P("/metadata/labels") / std::string(reflection::kLabelOriginUid));
    if (!uid.empty()) byOrigin[uid] = &r;
  }
  std::vector<DemoPodRow> rows;
  for (const nlohmann::json& pod : items(localPods)) {
    if (terminating(pod)) continue;
    DemoPodRow row;
    row.name = str(pod, P("/metadata/name"));
    row.node = str(pod, P("/spec/nodeName"));
    row.phase = str(pod, P("/status/phase"));
    row.podIP = str(pod, P("/status/podIP"));
    auto it = byOrigin.find(str(pod, P("/metadata/uid")));
    if (it != byOrigin.end()) {
      row.remoteNamespace = str(*it->second, P("/metadata/namespace"));
      row.remoteNode = str(*it->second, P("/spec/nodeName"));
    }
    rows.push_back(std::move(row));
  }
  std::sort(rows.begin(), rows.end(), [&](const DemoPodRow& a, const DemoPodRow& b) {
    bool ca = a.node == virtualNode, cb = b.node == virtualNode;
    return ca != cb ? cb : a.name < b.name;
  });
  return rows;
}

std::string summaryTable(const std::vector<DemoPodRow>& rows) {
  std::vector<std::vector<std::string>> cells = {
      {"POD", "NODE", "PHASE", "POD IP", "REMOTE NAMESPACE/NODE"}};
  for (const DemoPodRow& r : rows) {
    std::string remote = r.remoteNamespace.empty() ? "-" : r.remoteNamespace + "/" +
                                                               (r.remoteNode.empty() ? "<none>"
                                                                                     : r.remoteNode);
    cells.push_back({r.name, r.node.empty() ? "<none>" : r.node, r.phase.empty() ? "-" : r.phase,
                     r.podIP.empty() ? "-" : r.podIP, remote});
  }
  std::vector<size_t> width(cells[0].size(), 0);
  for (const auto& line : cells) {
    for (size_t i = 0; i < line.size(); ++i) width[i] = std::max(width[i], line[i].size());
  }
  std::ostringstream out;
  for (const auto& line : cells) {
    out << "  ";
    for (size_t i = 0; i < line.size(); ++i) {
      out << line[i];
      if (i + 1 < line.size()) out << std::string(width[i] - line[i].size() + 2, ' ');
    }
    out << "\n";
  }
  return out.str();
}

}  // namespace strait::cmd

// kube-proxy's nftables mode, small: one chain per Service port choosing an endpoint chain at
// random, one chain per endpoint doing the DNAT. The whole table is rebuilt from the store on
// every change (debounced) and replaced in one nft transaction, so a half-updated table is
// never visible.
#include "minicluster/service_proxy.h"

#include <spdlog/spdlog.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <fstream>
#include <map>
#include <set>
#include <thread>

#include "minicluster/netns.h"

namespace strait::minicluster {
namespace {

using namespace std::chrono_literals;
using nlohmann::json;

constexpr const char* kTable = "strait-services";

std::string str(const json& o, const char* k) {
  return o.is_object() && o.contains(k) && o[k].is_string() ? o[k].get<std::string>() : "";
}

// A Service port with what its endpoints listen on.
struct Target {
  std::string ip;
  int port = 0;
};

std::string protoOf(const json& p) {
  std::string proto = str(p, "protocol");
  return proto == "UDP" ? "udp" : proto == "SCTP" ? "sctp" : "tcp";
}

class ServiceProxyImpl : public ServiceProxy {
 public:
  ServiceProxyImpl(Store& store, std::vector<std::string> netns, std::string podCidr,
                   std::string bridge)
      : store_(store),
        netns_(std::move(netns)),
        podCidr_(std::move(podCidr)),
        bridge_(std::move(bridge)) {}
  ~ServiceProxyImpl() override { stop(); }

  kube::Status start() override {
    if (auto s = sync(); !s) return s;
    stopping_ = false;
    started_ = true;
    thread_ = std::thread([this] { run(); });
    return kube::Status::OK();
  }

  void stop() override {
    if (!started_) return;
    started_ = false;
    stopping_ = true;
    if (thread_.joinable()) thread_.join();
    for (const auto& ns : netns_) {
      runProgram({"ip", "netns", "exec", ns, "nft", "delete", "table", "ip", kTable});
    }
  }

 private:
  kube::Status sync() {
    std::vector<json> services, slices;
    for (const auto& o : store_.list("/core/services/").items) {
      json j = json::parse(o->json, nullptr, false);
      if (!j.is_discarded()) services.push_back(std::move(j));
    }
    for (const auto& o : store_.list("/discovery.k8s.io/endpointslices/").items) {
      json j = json::parse(o->json, nullptr, false);
      if (!j.is_discarded()) slices.push_back(std::move(j));
    }
    std::string rules = buildServiceRules(services, slices, bridge_, podCidr_);
    if (rules == applied_) return kube::Status::OK();
    char path[] = "/tmp/strait-nft-XXXXXX";
    int fd = ::mkstemp(path);
    if (fd < 0) return kube::makeError(kube::Code::Internal, "cannot write the nft script");
    ::close(fd);
    {
      std::ofstream out(path);
      out << rules;
    }
    // Every node's namespace at once: each `nft -f` of a large table takes a while.
    std::vector<ProgramOutput> outputs(netns_.size());
    std::vector<std::thread> appliers;
    for (size_t i = 0; i < netns_.size(); ++i) {
      appliers.emplace_back([&, i] {
        outputs[i] = runProgram({"ip", "netns", "exec", netns_[i], "nft", "-f", path});
      });
    }
    for (auto& t : appliers) t.join();
    ::unlink(path);
    kube::Status result = kube::Status::OK();
    for (size_t i = 0; i < netns_.size(); ++i) {
      if (outputs[i].exitCode != 0) {
        result = kube::makeError(kube::Code::Internal, "nft in " + netns_[i] + ": " + outputs[i].text);
        break;
      }
    }
    if (result) {
      applied_ = rules;
      spdlog::debug("event=service_rules_applied services={} namespaces={}", services.size(),
                    netns_.size());
    }
    return result;
  }

  void run() {
    auto w = store_.watch("/", store_.revision());
    if (!w) {
      spdlog::error("event=service_proxy_watch_failed error=\"{}\"", w.error().message);
      return;
    }
    bool dirty = false;
    while (!stopping_) {
      auto ev = (*w)->next(100ms);
      if ((*w)->ended()) {
        auto again = store_.watch("/", store_.revision());
        if (!again) return;
        w = std::move(again);
        dirty = true;
        continue;
      }
      while (ev) {
        const std::string& key = (*ev)->object->key;
        if (key.rfind("/core/services/", 0) == 0 ||
            key.rfind("/discovery.k8s.io/endpointslices/", 0) == 0) {
          dirty = true;
        }
        ev = (*w)->next(0ms);
      }
      if (dirty) {
        if (auto s = sync(); !s) {
          spdlog::warn("event=service_rules_failed error=\"{}\"", s.error().message);
        } else {
          dirty = false;
        }
      }
    }
  }

  Store& store_;
  std::vector<std::string> netns_;
  std::string podCidr_, bridge_;
  std::string applied_;  // loop thread (and start() before it runs)
  bool started_ = false;
  std::atomic<bool> stopping_{false};
  std::thread thread_;
};

}  // namespace

std::string buildServiceRules(const std::vector<json>& services, const std::vector<json>& slices,
                              const std::string& podBridge, const std::string& podCidr) {
  // Ready endpoints per (namespace/service, port name): address and port.
  std::map<std::pair<std::string, std::string>, std::vector<Target>> ready;
  for (const auto& s : slices) {
    const json& md = s.value("metadata", json::object());
    std::string svc = str(md.value("labels", json::object()), "kubernetes.io/service-name");
    if (svc.empty() || str(s, "addressType") == "IPv6") continue;
    std::string key = str(md, "namespace") + "/" + svc;
    for (const auto& p : s.value("ports", json::array())) {
      if (!p.is_object() || !p.contains("port") || !p["port"].is_number_integer()) continue;
      auto& out = ready[{key, str(p, "name")}];
      for (const auto& e : s.value("endpoints", json::array())) {
        const json& cond = e.value("conditions", json::object());
        if (cond.contains("ready") && cond["ready"].is_boolean() && !cond["ready"].get<bool>()) {
          continue;
        }
        for (const auto& a : e.value("addresses", json::array())) {
          if (a.is_string()) out.push_back({a.get<std::string>(), p["port"].get<int>()});
        }
      }
    }
  }
  // kube-proxy's nftables layout: one verdict map from ClusterIP . protocol . port to the
  // Service port's chain (one lookup per packet whatever the number of Services), and per
  // Service port one chain that DNATs to an endpoint chosen by numgen. Only ClientIP
  // affinity needs a chain (and a set of clients) per endpoint.
  std::string elements, nodePorts, chains, sets;
  std::set<std::string> keys;  // ClusterIP . proto . port taken: a duplicate would fail the sync
  int n = 0;
  for (const auto& svc : services) {
    const json& spec = svc.value("spec", json::object());
    std::string ip = str(spec, "clusterIP");
    if (ip.empty() || ip == "None" || str(spec, "type") == "ExternalName") continue;
    const json& md = svc.value("metadata", json::object());
    std::string key = str(md, "namespace") + "/" + str(md, "name");
    for (const auto& p : spec.value("ports", json::array())) {
      if (!p.is_object() || !p.contains("port") || !p["port"].is_number_integer()) continue;
      auto it = ready.find({key, str(p, "name")});
      if (it == ready.end() || it->second.empty()) continue;
      const auto& eps = it->second;
      std::string proto = protoOf(p);
      if (!keys.insert(ip + " . " + proto + " . " + std::to_string(p["port"].get<int>())).second) {
        continue;
      }
      std::string chain = "svc-" + std::to_string(n++);
      elements += std::string(elements.empty() ? "" : ",\n") + "      " + ip + " . " + proto +
                  " . " + std::to_string(p["port"].get<int>()) + " : goto " + chain;
      std::string type = str(spec, "type");
      if ((type == "NodePort" || type == "LoadBalancer") && p.contains("nodePort") &&
          p["nodePort"].is_number_integer()) {
        nodePorts += "    fib daddr type local " + proto + " dport " +
                     std::to_string(p["nodePort"].get<int>()) + " goto " + chain + "  # " + key +
                     ":" + str(p, "name") + " nodePort\n";
      }
      auto target = [&](size_t i) { return eps[i].ip + " . " + std::to_string(eps[i].port); };
      if (str(spec, "sessionAffinity") != "ClientIP") {
        std::string rule = "    meta l4proto " + proto;
        if (eps.size() == 1) {
          rule += " dnat to " + eps[0].ip + ":" + std::to_string(eps[0].port);
        } else {
          rule += " dnat ip to numgen random mod " + std::to_string(eps.size()) + " map { ";
          for (size_t i = 0; i < eps.size(); ++i) rule += (i ? ", " : "") + std::to_string(i) + " : " + target(i);
          rule += " }";
        }
        chains += "  chain " + chain + " {  # " + key + ":" + str(p, "name") + "\n" + rule + "\n  }\n";
        continue;
      }
      // sessionAffinity ClientIP: each endpoint remembers its clients for timeoutSeconds.
      int timeout = spec.value("sessionAffinityConfig", json::object())
                        .value("clientIP", json::object())
                        .value("timeoutSeconds", 10800);
      std::string vmap, sticky;
      for (size_t i = 0; i < eps.size(); ++i) {
        std::string ep = chain + "-ep-" + std::to_string(i);
        vmap += (i ? ", " : "") + std::to_string(i) + " : goto " + ep;
        std::string set = ep + "-clients";
        sets += "  set " + set + " {\n    type ipv4_addr; flags dynamic, timeout; timeout " +
                std::to_string(timeout) + "s\n  }\n";
        sticky += "    ip saddr @" + set + " goto " + ep + "\n";
        chains += "  chain " + ep + " {\n    update @" + set + " { ip saddr }\n    meta l4proto " +
                  proto + " dnat to " + eps[i].ip + ":" + std::to_string(eps[i].port) + "\n  }\n";
      }
      chains += "  chain " + chain + " {  # " + key + ":" + str(p, "name") + "\n" + sticky +
                "    numgen random mod " + std::to_string(eps.size()) + " vmap { " + vmap +
                " }\n  }\n";
    }
  }
  std::string t = std::string("table ip ") + kTable;
  std::string map = "  map service-ips {\n    type ipv4_addr . inet_proto . inet_service : verdict\n";
  if (!elements.empty()) map += "    elements = {\n" + elements + "\n    }\n";
  map += "  }\n";
  return t + "\ndelete " + t + "\n" + t + " {\n" + sets + map +
         "  chain prerouting {\n    type nat hook prerouting priority -100; policy accept;\n"
         "    jump services\n  }\n"
         "  chain output {\n    type nat hook output priority -100; policy accept;\n"
         "    jump services\n  }\n"
         "  chain postrouting {\n    type nat hook postrouting priority 100; policy accept;\n"
         "    ct status dnat oifname \"" + podBridge + "\" masquerade\n"
         "    ct status dnat ip saddr != " + podCidr + " masquerade\n"
         // Endpoints on the underlay (the API server on the host's address, node ports of
         // other clusters) answer the node, which has a route back. Endpoints in another
         // cluster's pod CIDR seen through a tunnel keep the Pod's source: the tunnel carries
         // pod addresses only.
         "    ct status dnat ip daddr " + std::string(kUnderlayCidr) + " masquerade\n  }\n"
         "  chain services {\n    ip daddr . meta l4proto . th dport vmap @service-ips\n" +
         nodePorts + "  }\n" + chains + "}\n";
}

std::unique_ptr<ServiceProxy> newServiceProxy(Store& store, std::vector<std::string> nodeNetns,
                                              std::string podCidr, std::string podBridge) {
  return std::make_unique<ServiceProxyImpl>(store, std::move(nodeNetns), std::move(podCidr),
                                            std::move(podBridge));
}

}  // namespace strait::minicluster

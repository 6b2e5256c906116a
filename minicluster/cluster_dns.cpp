// dnsmasq as the cluster's DNS server, fed through an addn-hosts file it re-reads on SIGHUP.
#include "minicluster/cluster_dns.h"

#include <signal.h>
#include <spdlog/spdlog.h>
#include <sys/wait.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <set>
#include <sstream>
#include <thread>

#include "kube/object.h"
#include "minicluster/runtime_process_launch.h"

namespace strait::minicluster {
namespace {

using namespace std::chrono_literals;
using kube::Code;
using kube::makeError;
using nlohmann::json;
namespace fs = std::filesystem;

constexpr const char* kSliceName = "kube-dns-strait";
constexpr const char* kManagedBy = "strait-process-runtime";

std::string str(const json& o, const char* k) {
  return o.is_object() && o.contains(k) && o[k].is_string() ? o[k].get<std::string>() : "";
}

bool writeAtomic(const std::string& path, const std::string& data) {
  std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::trunc);
    if (!out) return false;
    out << data;
  }
  std::error_code ec;
  fs::rename(tmp, path, ec);
  return !ec;
}

class ClusterDnsImpl : public ClusterDns {
 public:
  ClusterDnsImpl(Store& store, Registry& registry, Rest& rest, ClusterDnsOptions opts)
      : store_(store),
        rest_(rest),
        opts_(std::move(opts)),
        services_(registry.find("", "v1", "services")),
        slices_(registry.find("discovery.k8s.io", "v1", "endpointslices")) {}
  ~ClusterDnsImpl() override { stop(); }

  kube::Status start() override {
    if (!services_ || !slices_) return makeError(Code::Internal, "services or endpointslices not served");
    std::error_code ec;
    fs::create_directories(opts_.dir, ec);
    hostsPath_ = opts_.dir + "/hosts";
    if (auto s = writeObjects(); !s) return s;
    sync();
    stopping_ = false;
    started_ = true;
    kube::Status result = kube::Status::OK();
    bool launched = false;
    // dnsmasq dies with the thread that started it: start it on the thread that lives as
    // long as the DNS does.
    std::mutex m;
    std::condition_variable cv;
    thread_ = std::thread([&, this] {
      kube::Status r = launchDnsmasq();
      bool ok = static_cast<bool>(r);
      {
        // Notified under the lock: start() cannot return (and drop m, cv, result) before
        // this block ends, and nothing below touches them.
        std::lock_guard<std::mutex> l(m);
        result = r;
        launched = true;
        cv.notify_all();
      }
      if (ok) run();
    });
    std::unique_lock<std::mutex> l(m);
    cv.wait(l, [&] { return launched; });
    if (!result) {
      l.unlock();
      stop();
    }
    return result;
  }

  void stop() override {
    if (!started_) return;
    started_ = false;
    stopping_ = true;
    if (thread_.joinable()) thread_.join();
  }

 private:
  kube::Status writeObjects() {
    json svc = {{"apiVersion", "v1"},
                {"kind", "Service"},
                {"metadata",
                 {{"name", "kube-dns"},
                  {"namespace", "kube-system"},
                  {"labels", {{"k8s-app", "kube-dns"}, {"kubernetes.io/name", "CoreDNS"}}}}},
                {"spec",
                 {{"clusterIP", kClusterDnsIP},
                  {"ports", json::array({{{"name", "dns"}, {"port", 53}, {"protocol", "UDP"},
                                          {"targetPort", 53}},
                                         {{"name", "dns-tcp"}, {"port", 53}, {"protocol", "TCP"},
                                          {"targetPort", 53}}})}}}};
    WriteOptions wo;
    auto c = rest_.create(*services_, "kube-system", svc, wo, nullptr);
    if (!c && c.error().code != Code::AlreadyExists) {
      return makeError(c.error().code, "kube-dns Service: " + c.error().message);
    }
    json slice = {{"apiVersion", "discovery.k8s.io/v1"},
                  {"kind", "EndpointSlice"},
                  {"metadata",
                   {{"name", kSliceName},
                    {"namespace", "kube-system"},
                    {"labels",
                     {{"kubernetes.io/service-name", "kube-dns"},
                      {"endpointslice.kubernetes.io/managed-by", kManagedBy}}}}},
                  {"addressType", "IPv4"},
                  {"endpoints", json::array({{{"addresses", json::array({opts_.address})},
                                              {"conditions", {{"ready", true}}}}})},
                  {"ports", json::array({{{"name", "dns"}, {"port", 53}, {"protocol", "UDP"}},
                                         {{"name", "dns-tcp"}, {"port", 53}, {"protocol", "TCP"}}})}};
    auto s = rest_.create(*slices_, "kube-system", slice, wo, nullptr);
    if (!s && s.error().code == Code::AlreadyExists) {
      auto u = rest_.mutate(*slices_, "kube-system", kSliceName, "", [&](json& cur) -> kube::Status {
        cur["endpoints"] = slice["endpoints"];
        cur["ports"] = slice["ports"];
        return kube::Status::OK();
      });
      if (!u) return makeError(u.error().code, "kube-dns EndpointSlice: " + u.error().message);
    } else if (!s) {
      return makeError(s.error().code, "kube-dns EndpointSlice: " + s.error().message);
    }
    return kube::Status::OK();
  }

  kube::Status launchDnsmasq() {
    LaunchSpec ls;
    ls.argv = {"dnsmasq",
               "--keep-in-foreground",
               "--no-resolv",
               "--no-hosts",
               "--no-poll",
               "--user=root",
               "--bind-interfaces",
               "--listen-address=" + opts_.address,
               "--port=53",
               "--addn-hosts=" + hostsPath_,
               "--local=/" + std::string(kClusterDomain) + "/",
               "--domain-needed",
               "--pid-file=" + opts_.dir + "/dnsmasq.pid",
               "--log-facility=" + opts_.dir + "/dnsmasq.log"};
    ls.env = {{"PATH", "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"}};
    ls.netnsPath = opts_.netnsPath;
    auto pid = launchInSandbox(ls);
    if (!pid) return makeError(Code::Unavailable, "dnsmasq: " + pid.error().message);
    pid_ = *pid;
    // A bad option or a taken port ends it at once.
    std::this_thread::sleep_for(200ms);
    int status = 0;
    if (::waitpid(pid_, &status, WNOHANG) == pid_) {
      pid_ = -1;
      std::ifstream log(opts_.dir + "/dnsmasq.log");
      std::stringstream ss;
      ss << log.rdbuf();
      return makeError(Code::Unavailable, "dnsmasq exited with code " +
                                              std::to_string(exitCodeOf(status)) + ": " + ss.str());
    }
    spdlog::info("event=cluster_dns_started address={} service_ip={} pid={}", opts_.address,
                 kClusterDnsIP, pid_);
    return kube::Status::OK();
  }

  // Rewrites the hosts file; true when it changed.
  bool sync() {
    std::vector<json> services, slices;
    for (const auto& o : store_.list("/core/services/").items) {
      json j = json::parse(o->json, nullptr, false);
      if (!j.is_discarded()) services.push_back(std::move(j));
    }
    for (const auto& o : store_.list("/discovery.k8s.io/endpointslices/").items) {
      json j = json::parse(o->json, nullptr, false);
      if (!j.is_discarded()) slices.push_back(std::move(j));
    }
    std::string hosts = buildDnsHosts(services, slices);
    if (hosts == written_) return false;
    if (!writeAtomic(hostsPath_, hosts)) {
      spdlog::warn("event=cluster_dns_write_failed path={}", hostsPath_);
      return false;
    }
    written_ = hosts;
    return true;
  }

  void run() {
    auto w = store_.watch("/", store_.revision());
    bool dirty = true;
    while (!stopping_) {
      if (!w) {
        std::this_thread::sleep_for(100ms);
        w = store_.watch("/", store_.revision());
        continue;
      }
      auto ev = (*w)->next(100ms);
      if ((*w)->ended()) {
        w = store_.watch("/", store_.revision());
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
        dirty = false;
        if (sync() && pid_ > 0) ::kill(pid_, SIGHUP);
      }
    }
    if (pid_ > 0) {
      ::kill(pid_, SIGTERM);
      for (int i = 0; i < 100 && ::waitpid(pid_, nullptr, WNOHANG) == 0; ++i) {
        std::this_thread::sleep_for(20ms);
      }
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, nullptr, 0);
      pid_ = -1;
    }
  }

  Store& store_;
  Rest& rest_;
  ClusterDnsOptions opts_;
  ResourceInfoPtr services_, slices_;
  std::string hostsPath_, written_;
  pid_t pid_ = -1;  // the DNS thread's
  bool started_ = false;
  std::atomic<bool> stopping_{false};
  std::thread thread_;
};

}  // namespace

std::string buildDnsHosts(const std::vector<json>& services, const std::vector<json>& slices) {
  std::map<std::string, std::set<std::string>> ready;  // ns/svc -> addresses
  for (const auto& s : slices) {
    const json& md = s.value("metadata", json::object());
    std::string svc = str(md.value("labels", json::object()), "kubernetes.io/service-name");
    if (svc.empty()) continue;
    auto& out = ready[str(md, "namespace") + "/" + svc];
    for (const auto& e : s.value("endpoints", json::array())) {
      const json& cond = e.value("conditions", json::object());
      if (cond.contains("ready") && cond["ready"].is_boolean() && !cond["ready"].get<bool>()) {
        continue;
      }
      for (const auto& a : e.value("addresses", json::array())) {
        if (a.is_string()) out.insert(a.get<std::string>());
      }
    }
  }
  std::string hosts;
  for (const auto& svc : services) {
    const json& md = svc.value("metadata", json::object());
    const json& spec = svc.value("spec", json::object());
    std::string ns = str(md, "namespace"), name = str(md, "name");
    std::string fqdn = name + "." + ns + ".svc." + kClusterDomain;
    std::string ip = str(spec, "clusterIP");
    if (str(spec, "type") == "ExternalName") continue;
    if (ip == "None") {
      for (const auto& a : ready[ns + "/" + name]) hosts += a + " " + fqdn + "\n";
    } else if (!ip.empty()) {
      hosts += ip + " " + fqdn + "\n";
    }
  }
  return hosts;
}

std::string podResolvConf(const std::string& ns) {
  std::string d = kClusterDomain;
  return std::string("nameserver ") + kClusterDnsIP + "\nsearch " + ns + ".svc." + d + " svc." +
         d + " " + d + "\noptions ndots:5\n";
}

std::unique_ptr<ClusterDns> newClusterDns(Store& store, Registry& registry, Rest& rest,
                                          ClusterDnsOptions opts) {
  return std::make_unique<ClusterDnsImpl>(store, registry, rest, std::move(opts));
}

}  // namespace strait::minicluster

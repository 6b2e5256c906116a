#include "minicluster/apiserver.h"

#include <spdlog/spdlog.h>
#include <sys/stat.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "kube/object.h"
#include "minicluster/api_handler.h"
#include "minicluster/token_auth.h"
#include "minicluster/authorizer.h"
#include "minicluster/rbac_escalation.h"
#include "minicluster/controller_context.h"
#include "minicluster/controllers.h"
#include "kube/http_server.h"
#include "kube/pki.h"
#include "minicluster/registry.h"
#include "minicluster/request_metrics.h"
#include "minicluster/rest.h"
#include "minicluster/store.h"
#include "minicluster/kubelet_api.h"
#include "minicluster/kubelet_sim.h"
#include "minicluster/master_service.h"
#include "minicluster/rbac_bootstrap.h"
#include "minicluster/runtime_process.h"
#include "minicluster/serviceaccount_admission.h"
#include "minicluster/runtime_process_podfiles.h"
#include "minicluster/serviceaccount_token_auth.h"
#include "minicluster/node_lifecycle.h"
#include "minicluster/scheduler.h"
#include "minicluster/strategy.h"

namespace strait::minicluster {

using kube::Handler;
using kube::HttpServer;
using kube::HttpServerOptions;
using kube::newHttpServer;
using kube::KeyPair;
using kube::issueCert;
using kube::makeCa;
using kube::opensslErrors;
using kube::signCsr;
using kube::writeKubeconfig;
namespace {

using kube::Code;
using kube::makeError;
namespace fs = std::filesystem;

std::optional<std::string> readFile(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  if (!in) return std::nullopt;
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

kube::Status writeFileAtomic(const fs::path& p, const std::string& data) {
  fs::path tmp = p;
  tmp += ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) return makeError(Code::Internal, "cannot write " + tmp.string());
    out << data;
    if (!out) return makeError(Code::Internal, "cannot write " + tmp.string());
  }
  ::chmod(tmp.c_str(), 0600);
  std::error_code ec;
  fs::rename(tmp, p, ec);
  if (ec) return makeError(Code::Internal, "cannot rename " + tmp.string() + ": " + ec.message());
  return kube::Status::OK();
}

// Loads a key pair from dir/<name>.{crt,key}, or makes one with `make` and saves it.
Result<KeyPair> loadOrMake(const std::optional<fs::path>& dir, const std::string& name,
                           const std::function<Result<KeyPair>()>& make) {
  if (dir) {
    auto crt = readFile(*dir / (name + ".crt"));
    auto key = readFile(*dir / (name + ".key"));
    if (crt && key) return KeyPair{*crt, *key};
  }
  auto kp = make();
  if (!kp || !dir) return kp;
  if (auto s = writeFileAtomic(*dir / (name + ".crt"), kp->certPem); !s) return s.error();
  if (auto s = writeFileAtomic(*dir / (name + ".key"), kp->keyPem); !s) return s.error();
  return kp;
}

class ApiServerImpl : public ApiServer {
 public:
  explicit ApiServerImpl(ApiServerOptions opts) : opts_(std::move(opts)) {}
  ~ApiServerImpl() override { stop(); }

  kube::Status start() override {
    std::optional<fs::path> pkiDir;
    StoreOptions so;
    so.historyLimit = opts_.historyLimit;
    if (opts_.dataDir) {
      std::error_code ec;
      fs::create_directories(fs::path(*opts_.dataDir) / "pki", ec);
      if (ec) {
        return makeError(Code::Internal, "cannot create data directory " + *opts_.dataDir +
                                             ": " + ec.message());
      }
      pkiDir = fs::path(*opts_.dataDir) / "pki";
      so.dataDir = (fs::path(*opts_.dataDir) / "store").string();
    }
    store_ = newStore(so);
    if (auto s = store_->open(); !s) return s;

    auto ca = loadOrMake(pkiDir, "ca", [&] { return makeCa(opts_.name + "-ca"); });
    if (!ca) return ca.error();
    ca_ = *ca;
    std::vector<std::string> ips = {"127.0.0.1"};
    std::vector<std::string> dns = {"localhost", "kubernetes", "kubernetes.default",
                                    "kubernetes.default.svc"};
    if (opts_.listenHost != "127.0.0.1" && opts_.listenHost != "0.0.0.0" &&
        opts_.listenHost != "localhost") {
      bool isIp = opts_.listenHost.find_first_not_of("0123456789.:") == std::string::npos;
      (isIp ? ips : dns).push_back(opts_.listenHost);
    }
    auto serving = loadOrMake(pkiDir, "apiserver", [&] {
      return issueCert(ca_, "kube-apiserver", {}, dns, ips, true);
    });
    if (!serving) return serving.error();
    auto admin = loadOrMake(pkiDir, "admin", [&] {
      return issueCert(ca_, "kubernetes-admin", {"system:masters"}, {}, {}, false);
    });
    if (!admin) return admin.error();
    admin_ = *admin;

    setDefaultTolerationSeconds(opts_.simulation.defaultTolerationSeconds);
    registry_ = std::make_unique<Registry>();
    rest_ = std::make_unique<Rest>(*store_, *registry_);
    admission_ = newWebhookAdmission(*store_, *registry_);
    rest_->setAdmission(admission_.get());
    if (opts_.simulation.runtime == RuntimeKind::Process) {
      // Pods really run: they get the ServiceAccount token volume they can use.
      serviceAccountAdmission_ = newServiceAccountAdmission(*store_, *admission_);
      rest_->setAdmission(serviceAccountAdmission_.get());
    }
    auto mode = parseAuthorizationMode(opts_.authorizationMode);
    if (!mode) return mode.error();
    authorizer_ = *mode == AuthorizationMode::RBAC ? newRbacAuthorizer(*store_)
                                                   : newAlwaysAllowAuthorizer();
    if (*mode == AuthorizationMode::RBAC) {
      Admission* inner = serviceAccountAdmission_ ? serviceAccountAdmission_.get()
                                                  : admission_.get();
      rbacEscalation_ = newRbacEscalationAdmission(*authorizer_, *store_, *inner);
      rest_->setAdmission(rbacEscalation_.get());
    }
    loadCustomResources();
    if (auto s = bootstrapNamespaces(); !s) return s;
    if (auto s = bootstrapRbacPolicy(*rest_, *registry_); !s) return s;

    handler_ = std::make_unique<ApiHandler>(*store_, *registry_, *rest_);
    handler_->setAuthorizer(authorizer_.get());
    Handler* front = handler_.get();
    if (opts_.tokenAuthFile) {
      auto tokens = loadTokenAuthFile(*opts_.tokenAuthFile);
      if (!tokens) return tokens.error();
      tokenAuth_ = std::make_unique<TokenAuthHandler>(std::move(*tokens), *handler_);
      front = tokenAuth_.get();
    }
    // ServiceAccount tokens: issued by TokenRequest and projected into process-runtime Pods,
    // signed with the CA's key, accepted in front of every other authenticator.
    handler_->setTokenIssuer([key = ca_.keyPem](const nlohmann::json& sa, const nlohmann::json& spec,
                                                 const nlohmann::json* pod) {
      ServiceAccountTokenClaims c;
      c.ns = kube::getNamespace(sa);
      c.serviceAccount = kube::getName(sa);
      for (const auto& a : spec.value("audiences", nlohmann::json::array())) {
        if (a.is_string()) c.audiences.push_back(a.get<std::string>());
      }
      c.expirationSeconds = spec.value("expirationSeconds", int64_t{3600});
      if (pod) {
        c.podName = kube::getName(*pod);
        c.podUid = kube::getUid(*pod);
        c.nodeName = pod->value("spec", nlohmann::json::object()).value("nodeName", "");
      }
      return signToken(c, key);
    });
    auto saAuth = newServiceAccountTokenAuth(ca_.certPem, *store_, *front);
    if (!saAuth) return saAuth.error();
    serviceAccountAuth_ = std::move(*saAuth);
    front = serviceAccountAuth_.get();
    if (opts_.metrics != nullptr) {
      requestMetrics_ = newRequestMetricsHandler(*opts_.metrics, *front);
      front = requestMetrics_.get();
    }
    auto kubeletClient = issueCert(ca_, "kube-apiserver-kubelet-client", {"system:masters"}, {},
                                   {}, false);
    if (!kubeletClient) return kubeletClient.error();
    handler_->setKubeletClient({ca_.certPem, kubeletClient->certPem, kubeletClient->keyPem});
    HttpServerOptions ho;
    ho.listenHost = opts_.listenHost;
    ho.listenPort = opts_.listenPort;
    ho.maxBodyBytes = opts_.maxBodyBytes;
    ho.tls.certPem = serving->certPem;
    ho.tls.keyPem = serving->keyPem;
    ho.tls.clientCaPem = ca_.certPem;
    ho.tls.requireClientCert = false;  // anonymous may read /healthz, /version
    http_ = newHttpServer(ho, *front);
    if (auto s = http_->start(); !s) return s;
    front_ = front;

    controllers_ = newControllers(*store_, *registry_, *rest_);
    controllers_->start();
    if (auto s = startSimulation(); !s) return s;
    workloads_ = std::make_unique<ControllerManager>(*store_, *registry_, *rest_, ca_);
    workloads_->start();

    if (opts_.kubeconfigOut) {
      std::string host = opts_.listenHost == "0.0.0.0" ? "127.0.0.1" : opts_.listenHost;
      if (auto s = writeKubeconfig(*opts_.kubeconfigOut, opts_.name, url(), ca_.certPem,
                                   "admin", admin_);
          !s) {
        return s;
      }
    }
    spdlog::info("event=apiserver_started name={} url={} data_dir={}", opts_.name, url(),
                 opts_.dataDir.value_or("(memory)"));
    return kube::Status::OK();
  }

  void stop() override {
    if (stopped_) return;
    stopped_ = true;
    if (handler_) handler_->shutdown();
    if (scheduler_) scheduler_->stop();
    if (taintEviction_) taintEviction_->stop();
    if (nodeLifecycle_) nodeLifecycle_->stop();
    if (kubeletHttp_) kubeletHttp_->stop();
    if (kubelets_) kubelets_->stop();
    if (workloads_) workloads_->stop();
    if (controllers_) controllers_->stop();
    if (podHttp_) podHttp_->stop();
    if (http_) http_->stop();
  }

  uint16_t port() const override { return http_ ? http_->port() : 0; }
  std::string url() const override {
    std::string host = opts_.listenHost == "0.0.0.0" ? "127.0.0.1" : opts_.listenHost;
    return "https://" + host + ":" + std::to_string(port());
  }
  std::string caPem() const override { return ca_.certPem; }
  std::string adminCertPem() const override { return admin_.certPem; }
  std::string adminKeyPem() const override { return admin_.keyPem; }
  Store& store() override { return *store_; }

 private:
  // Scheduler, simulated kubelets (and their HTTPS API), node lifecycle controllers.
  kube::Status startSimulation() {
    SimulationOptions sim = opts_.simulation;
    // A kubelet renews its lease at a quarter of the 40 s lease (10 s); with a shorter node
    // monitor grace period (tests) the renewals must come faster, or healthy nodes would go
    // Unknown between two renewals.
    sim.leaseRenewInterval = std::min(sim.leaseRenewInterval, sim.nodeMonitorGracePeriod / 4);
    if (sim.runtime == RuntimeKind::Process) {
      if (auto s = startProcessKubelets(sim); !s) return s;
    } else {
      kubelets_ = newSimulatedKubelets(*store_, *registry_, *rest_, sim);
    }
    if (sim.runtime == RuntimeKind::Simulated && !sim.pools.empty()) {
      // One HTTPS kubelet API for every simulated node (each Node names its port).
      auto serving = issueCert(ca_, "strait-kubelet", {"system:nodes"}, {"localhost"},
                               {"127.0.0.1"}, true);
      if (!serving) return serving.error();
      kubeletHandler_ = newKubeletApiHandler(*kubelets_, *registry_, *rest_);
      HttpServerOptions ko;
      ko.listenHost = "127.0.0.1";
      ko.listenPort = 0;
      ko.tls.certPem = serving->certPem;
      ko.tls.keyPem = serving->keyPem;
      ko.tls.clientCaPem = ca_.certPem;
      ko.tls.requireClientCert = true;
      kubeletHttp_ = newHttpServer(ko, *kubeletHandler_);
      if (auto s = kubeletHttp_->start(); !s) return s;
    }
    if (sim.runtime == RuntimeKind::Simulated) {
      if (auto s = kubelets_->start(kubeletHttp_ ? kubeletHttp_->port() : 0); !s) return s;
    }
    NodeLifecycleOptions lo;
    lo.gracePeriod = sim.nodeMonitorGracePeriod;
    lo.monitorPeriod = sim.nodeMonitorPeriod;
    nodeLifecycle_ = newNodeLifecycleController(*store_, *registry_, *rest_, lo);
    nodeLifecycle_->start();
    taintEviction_ = newTaintEvictionController(*store_, *registry_, *rest_);
    taintEviction_->start();
    if (sim.runScheduler) {
      scheduler_ = newScheduler(*store_, *registry_, *rest_);
      scheduler_->start();
    }
    return kube::Status::OK();
  }

  // Kubelets whose Pods really run; each node serves the kubelet API in its own namespace.
  kube::Status startProcessKubelets(const SimulationOptions& sim) {
    auto serving = issueCert(ca_, "strait-kubelet", {"system:nodes"}, {"localhost"},
                             {"127.0.0.1"}, true);
    if (!serving) return serving.error();
    ProcessRuntimeOptions po;
    po.clusterName = opts_.name;
    po.kubeletTls.certPem = serving->certPem;
    po.kubeletTls.keyPem = serving->keyPem;
    po.kubeletTls.clientCaPem = ca_.certPem;
    po.kubeletTls.requireClientCert = true;
    po.serviceAccountKeyPem = ca_.keyPem;
    po.localImages = sim.localImages;
    auto kubelets = newProcessKubelets(*store_, *registry_, *rest_, sim, po);
    kubeletHandler_ = newKubeletApiHandler(*kubelets, *registry_, *rest_);
    kubelets->setKubeletApi(*kubeletHandler_);
    ProcessKubelets* process = kubelets.get();
    kubelets_ = std::move(kubelets);
    if (auto s = kubelets_->start(po.kubeletPort); !s) return s;
    return servePods(process->hostAddress());
  }

  // The API server for Pods: it also listens on the host's underlay address (which every
  // Pod can reach), with a serving certificate for the kubernetes Service's names and IP,
  // and the kubernetes Service of default points there.
  kube::Status servePods(const std::string& address) {
    if (address.empty()) return kube::Status::OK();
    auto serving = issueCert(ca_, "kube-apiserver", {},
                             {"localhost", "kubernetes", "kubernetes.default",
                              "kubernetes.default.svc", "kubernetes.default.svc.cluster.local"},
                             {"127.0.0.1", kKubernetesServiceIP, address}, true);
    if (!serving) return serving.error();
    HttpServerOptions ho;
    ho.listenHost = address;
    ho.listenPort = port();
    ho.maxBodyBytes = opts_.maxBodyBytes;
    ho.tls.certPem = serving->certPem;
    ho.tls.keyPem = serving->keyPem;
    ho.tls.clientCaPem = ca_.certPem;
    ho.tls.requireClientCert = false;
    podHttp_ = newHttpServer(ho, *front_);
    if (auto s = podHttp_->start(); !s) return s;
    return publishKubernetesService(*rest_, *registry_, address, podHttp_->port());
  }

  void loadCustomResources() {
    auto crds = store_->list("/apiextensions.k8s.io/customresourcedefinitions/");
    for (const auto& o : crds.items) {
      json crd = json::parse(o->json, nullptr, false);
      if (crd.is_discarded()) continue;
      if (auto s = registry_->addCustom(crd); !s) {
        spdlog::warn("event=crd_not_served key={} error=\"{}\"", o->key, s.error().message);
      }
    }
  }

  kube::Status bootstrapNamespaces() {
    auto nsInfo = registry_->find("", "v1", "namespaces");
    for (const char* ns : {"default", "kube-system", "kube-public", "kube-node-lease"}) {
      if (rest_->get(*nsInfo, "", ns)) continue;
      json obj = {{"apiVersion", "v1"}, {"kind", "Namespace"}, {"metadata", {{"name", ns}}}};
      auto r = rest_->create(*nsInfo, "", obj, WriteOptions{}, nullptr);
      if (!r && r.error().code != Code::AlreadyExists) return r.error();
    }
    return kube::Status::OK();
  }

  ApiServerOptions opts_;
  std::unique_ptr<Store> store_;
  std::unique_ptr<Registry> registry_;
  std::unique_ptr<Admission> admission_;  // declared before rest_: outlives it
  std::unique_ptr<Admission> serviceAccountAdmission_;  // wraps admission_ (process runtime)
  std::unique_ptr<Authorizer> authorizer_;
  std::unique_ptr<Admission> rbacEscalation_;  // wraps the two above (RBAC mode)
  std::unique_ptr<Rest> rest_;
  std::unique_ptr<ApiHandler> handler_;
  std::unique_ptr<TokenAuthHandler> tokenAuth_;
  std::unique_ptr<Handler> serviceAccountAuth_;  // in front of tokenAuth_
  std::unique_ptr<Handler> requestMetrics_;      // in front of all the others, when asked
  std::unique_ptr<HttpServer> http_;
  std::unique_ptr<HttpServer> podHttp_;  // on the underlay, for Pods (process runtime)
  Handler* front_ = nullptr;             // what http_ serves
  std::unique_ptr<Controllers> controllers_;
  std::unique_ptr<SimulatedKubelets> kubelets_;
  std::unique_ptr<Handler> kubeletHandler_;
  std::unique_ptr<HttpServer> kubeletHttp_;
  std::unique_ptr<NodeLifecycleController> nodeLifecycle_, taintEviction_;
  std::unique_ptr<Scheduler> scheduler_;
  std::unique_ptr<ControllerManager> workloads_;  // deployments, endpoints, CSR signing...
  KeyPair ca_, admin_;
  bool stopped_ = false;
};

}  // namespace

std::unique_ptr<ApiServer> newApiServer(ApiServerOptions opts) {
  return std::make_unique<ApiServerImpl>(std::move(opts));
}

}  // namespace strait::minicluster

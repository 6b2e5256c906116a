#include "bench/bench_client.h"

#include <filesystem>

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <yaml-cpp/yaml.h>

#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>
#include <thread>

#include <nlohmann/json.hpp>
#include <vector>

namespace strait::bench {
namespace net = boost::asio;
namespace ssl = boost::asio::ssl;
namespace beast = boost::beast;
namespace http = boost::beast::http;
using tcp = net::ip::tcp;
using Clock = std::chrono::steady_clock;

// ---------------------------------------------------------------------------------------
// Kubeconfig

namespace {

// Standard base64 (with or without padding, whitespace ignored); nullopt on a bad character.
std::optional<std::string> base64Decode(std::string_view in) {
  std::string out;
  out.reserve(in.size() * 3 / 4);
  uint32_t acc = 0;
  int bits = 0;
  for (char c : in) {
    int v;
    if (c >= 'A' && c <= 'Z') {
      v = c - 'A';
    } else if (c >= 'a' && c <= 'z') {
      v = c - 'a' + 26;
    } else if (c >= '0' && c <= '9') {
      v = c - '0' + 52;
    } else if (c == '+') {
      v = 62;
    } else if (c == '/') {
      v = 63;
    } else if (c == '=' || c == '\n' || c == '\r' || c == ' ') {
      continue;
    } else {
      return std::nullopt;
    }
    acc = (acc << 6) | static_cast<uint32_t>(v);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out.push_back(static_cast<char>((acc >> bits) & 0xff));
    }
  }
  return out;
}

// The entry named `name` of root[listKey] (or the first one when name is empty), its
// `field` sub-map.
YAML::Node namedEntry(const YAML::Node& root, const char* listKey, const std::string& name,
                      const char* field) {
  const YAML::Node list = root[listKey];
  if (!list || !list.IsSequence()) {
    return YAML::Node();
  }
  for (const auto& e : list) {
    if (name.empty() || (e["name"] && e["name"].as<std::string>() == name)) {
      return e[field];
    }
  }
  return YAML::Node();
}

std::optional<std::string> decodedField(const YAML::Node& n, const char* key) {
  if (!n || !n[key]) {
    return std::nullopt;
  }
  return base64Decode(n[key].as<std::string>());
}

}  // namespace

std::optional<ClusterAccess> loadKubeconfig(const std::string& path, std::string* error) {
  try {
    YAML::Node root = YAML::LoadFile(path);
    std::string ctxName = root["current-context"] ? root["current-context"].as<std::string>() : "";
    YAML::Node ctx = namedEntry(root, "contexts", ctxName, "context");
    std::string clusterName = ctx && ctx["cluster"] ? ctx["cluster"].as<std::string>() : "";
    std::string userName = ctx && ctx["user"] ? ctx["user"].as<std::string>() : "";
    YAML::Node cluster = namedEntry(root, "clusters", clusterName, "cluster");
    YAML::Node user = namedEntry(root, "users", userName, "user");
    if (!cluster || !cluster["server"] || !user) {
      *error = "kubeconfig " + path + " has no cluster server or no user";
      return std::nullopt;
    }
    auto ca = decodedField(cluster, "certificate-authority-data");
    auto cert = decodedField(user, "client-certificate-data");
    auto key = decodedField(user, "client-key-data");
    if (!ca || !cert || !key) {
      *error = "kubeconfig " + path +
               " lacks valid certificate-authority-data, client-certificate-data or "
               "client-key-data";
      return std::nullopt;
    }
    // https://HOST:PORT
    std::string server = cluster["server"].as<std::string>();
    const std::string scheme = "https://";
    if (server.rfind(scheme, 0) != 0) {
      *error = "kubeconfig server is not https: " + server;
      return std::nullopt;
    }
    std::string hostPort = server.substr(scheme.size());
    hostPort = hostPort.substr(0, hostPort.find('/'));
    auto colon = hostPort.rfind(':');
    if (colon == std::string::npos) {
      *error = "kubeconfig server has no port: " + server;
      return std::nullopt;
    }
    ClusterAccess a;
    a.host = hostPort.substr(0, colon);
    a.port = hostPort.substr(colon + 1);
    a.caPem = std::move(*ca);
    a.certPem = std::move(*cert);
    a.keyPem = std::move(*key);
    return a;
  } catch (const std::exception& e) {
    *error = "parse kubeconfig " + path + ": " + e.what();
    return std::nullopt;
  }
}

// ---------------------------------------------------------------------------------------
// ServerProcess

std::optional<ClusterAccess> ServerProcess::start(const std::string& straitPath,
                                                  const std::string& workDir, bool durable,
                                                  std::chrono::milliseconds deadline,
                                                  std::string* error,
                                                  const std::vector<std::string>& extraArgs) {
  const std::string kubeconfig = workDir + "/kubeconfig";
  std::vector<std::string> args = {straitPath,     "minicluster",  "--name",
                                   "bench",        "--listen",     "127.0.0.1:0",
                                   "--kubeconfig-out", kubeconfig};
  if (durable) {
    const std::string dataDir = workDir + "/data";
    mkdir(dataDir.c_str(), 0700);
    args.push_back("--data-dir");
    args.push_back(dataDir);
  }
  args.insert(args.end(), extraArgs.begin(), extraArgs.end());
  std::vector<char*> argv;
  for (auto& a : args) {
    argv.push_back(a.data());
  }
  argv.push_back(nullptr);
  stderrPath_ = workDir + "/server.log";
  int logFd = open(stderrPath_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  int nullFd = open("/dev/null", O_RDONLY | O_CLOEXEC);
  if (logFd < 0 || nullFd < 0) {
    *error = "open " + stderrPath_ + ": " + strerror(errno);
    return std::nullopt;
  }
  const pid_t parent = getpid();
  pid_t pid = fork();
  if (pid == 0) {
    setpgid(0, 0);
    prctl(PR_SET_PDEATHSIG, SIGTERM);  // never outlive the benchmark
    if (getppid() != parent) {
      _exit(127);
    }
    dup2(nullFd, 0);
    dup2(logFd, 1);
    dup2(logFd, 2);
    execv(argv[0], argv.data());
    const char msg[] = "exec strait failed\n";
    (void)!write(2, msg, sizeof msg - 1);
    _exit(127);
  }
  int saved = errno;
  close(logFd);
  close(nullFd);
  if (pid < 0) {
    *error = std::string("fork: ") + strerror(saved);
    return std::nullopt;
  }
  pid_ = pid;

  auto serverLog = [&] {
    std::ifstream in(stderrPath_);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
  };
  const auto end = Clock::now() + deadline;
  std::string lastError = "kubeconfig not written";
  while (Clock::now() < end) {
    int status = 0;
    if (waitpid(pid_, &status, WNOHANG) == pid_) {
      pid_ = -1;
      *error = "server exited during startup; log:\n" + serverLog();
      return std::nullopt;
    }
    if (access(kubeconfig.c_str(), R_OK) == 0) {
      if (auto a = loadKubeconfig(kubeconfig, &lastError)) {
        return a;
      }
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  *error = "server not ready after deadline (" + lastError + "); log:\n" + serverLog();
  stop();
  return std::nullopt;
}

void ServerProcess::stop(std::chrono::milliseconds grace) {
  if (pid_ <= 0) {
    return;
  }
  kill(pid_, SIGTERM);
  const auto end = Clock::now() + grace;
  while (true) {
    int status = 0;
    pid_t r = waitpid(pid_, &status, WNOHANG);
    if (r == pid_ || (r < 0 && errno != EINTR)) {
      break;
    }
    if (Clock::now() >= end) {
      kill(pid_, SIGKILL);
      waitpid(pid_, &status, 0);
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  pid_ = -1;
}

long ServerProcess::rssKiB() const {
  if (pid_ <= 0) {
    return -1;
  }
  std::ifstream in("/proc/" + std::to_string(pid_) + "/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("VmRSS:", 0) == 0) {
      return std::strtol(line.c_str() + 6, nullptr, 10);
    }
  }
  return -1;
}

// ---------------------------------------------------------------------------------------
// ApiConnection

struct ApiConnection::Impl {
  explicit Impl(const ClusterAccess& a) : access(a), ctx(ssl::context::tls_client) {}

  ClusterAccess access;
  net::io_context ioc;
  ssl::context ctx;
  bool ctxReady = false;
  std::unique_ptr<ssl::stream<tcp::socket>> stream;
  beast::flat_buffer buffer;
  bool connected = false;

  bool setupContext(std::string* error) {
    if (ctxReady) {
      return true;
    }
    beast::error_code ec;
    ctx.add_certificate_authority(net::buffer(access.caPem), ec);
    if (!ec) {
      ctx.use_certificate_chain(net::buffer(access.certPem), ec);
    }
    if (!ec) {
      ctx.use_private_key(net::buffer(access.keyPem), ssl::context::pem, ec);
    }
    if (ec) {
      *error = "TLS credentials: " + ec.message();
      return false;
    }
    ctx.set_verify_mode(ssl::verify_peer);
    ctxReady = true;
    return true;
  }

  bool connect(std::string* error) {
    if (!setupContext(error)) {
      return false;
    }
    stream = std::make_unique<ssl::stream<tcp::socket>>(ioc, ctx);
    buffer.clear();
    beast::error_code ec;
    tcp::resolver resolver(ioc);
    auto endpoints = resolver.resolve(access.host, access.port, ec);
    if (!ec) {
      net::connect(stream->next_layer(), endpoints, ec);
    }
    if (!ec) {
      stream->next_layer().set_option(tcp::no_delay(true), ec);
    }
    if (!ec) {
      stream->handshake(ssl::stream_base::client, ec);
    }
    if (ec) {
      *error = "connect " + access.host + ":" + access.port + ": " + ec.message();
      connected = false;
      return false;
    }
    connected = true;
    return true;
  }

  http::request<http::string_body> makeRequest(const std::string& method,
                                               const std::string& target,
                                               const std::string& body) {
    http::request<http::string_body> req{http::string_to_verb(method), target, 11};
    req.set(http::field::host, access.host + ":" + access.port);
    req.set(http::field::accept, "application/json");
    req.set(http::field::user_agent, "strait-apiserver-bench");
    if (!body.empty()) {
      req.set(http::field::content_type, "application/json");
      req.body() = body;
    }
    req.keep_alive(true);
    req.prepare_payload();
    return req;
  }
};

ApiConnection::ApiConnection(const ClusterAccess& access)
    : impl_(std::make_unique<Impl>(access)) {}
ApiConnection::~ApiConnection() = default;

bool ApiConnection::connect(std::string* error) { return impl_->connect(error); }

bool ApiConnection::request(const std::string& method, const std::string& target,
                            const std::string& body, ApiResponse* out, std::string* error) {
  for (int attempt = 0; attempt < 2; ++attempt) {
    const bool reused = impl_->connected;
    if (!impl_->connected && !impl_->connect(error)) {
      return false;
    }
    auto req = impl_->makeRequest(method, target, body);
    beast::error_code ec;
    http::write(*impl_->stream, req, ec);
    http::response_parser<http::string_body> parser;
    parser.body_limit(std::numeric_limits<std::uint64_t>::max());
    if (!ec) {
      http::read(*impl_->stream, impl_->buffer, parser, ec);
    }
    if (ec) {
      impl_->connected = false;
      if (reused && attempt == 0) {
        continue;  // the server closed an idle kept-alive connection: retry once
      }
      *error = method + " " + target + ": " + ec.message();
      return false;
    }
    auto res = parser.release();
    out->status = static_cast<int>(res.result_int());
    out->body = std::move(res.body());
    if (!res.keep_alive()) {
      impl_->connected = false;
    }
    return true;
  }
  return false;
}

int ApiConnection::stream(const std::string& target,
                          const std::function<bool(std::string_view)>& onData,
                          std::string* error) {
  if (!impl_->connected && !impl_->connect(error)) {
    return 0;
  }
  auto req = impl_->makeRequest("GET", target, "");
  beast::error_code ec;
  http::write(*impl_->stream, req, ec);
  http::response_parser<http::buffer_body> parser;
  parser.body_limit(std::numeric_limits<std::uint64_t>::max());
  if (!ec) {
    http::read_header(*impl_->stream, impl_->buffer, parser, ec);
  }
  if (ec) {
    impl_->connected = false;
    *error = "GET " + target + ": " + ec.message();
    return 0;
  }
  const int status = static_cast<int>(parser.get().result_int());
  std::vector<char> buf(256 * 1024);
  onData(std::string_view());  // headers are in: the watch is established
  while (!parser.is_done()) {
    parser.get().body().data = buf.data();
    parser.get().body().size = buf.size();
    // read_some: hand over whatever arrived; read() would wait for a full buffer.
    http::read_some(*impl_->stream, impl_->buffer, parser, ec);
    if (ec == http::error::need_buffer) {
      ec = {};
    }
    if (ec) {
      impl_->connected = false;
      if (ec != net::error::eof && ec != ssl::error::stream_truncated) {
        *error = "GET " + target + ": " + ec.message();
      }
      return status;
    }
    const size_t n = buf.size() - parser.get().body().size;
    if (n > 0 && !onData(std::string_view(buf.data(), n))) {
      break;
    }
  }
  impl_->connected = false;  // ended or abandoned: do not reuse mid-stream
  return status;
}

void ApiConnection::abort() {
  if (impl_->stream) {
    ::shutdown(impl_->stream->next_layer().native_handle(), SHUT_RDWR);
  }
}

std::string straitBesideThisBinary(const char* argv0) {
  std::error_code ec;
  std::filesystem::path self = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (ec) self = argv0;
  for (auto dir = self.parent_path(); !dir.empty(); dir = dir.parent_path()) {
    if (std::filesystem::exists(dir / "strait")) return (dir / "strait").string();
    if (dir == dir.root_path()) break;
  }
  return {};
}

bool waitForNodeReady(ApiConnection& probe, const std::string& node,
                      std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (true) {
    ApiResponse r;
    std::string err;
    if (probe.request("GET", "/api/v1/nodes/" + node, "", &r, &err) && r.status == 200) {
      nlohmann::json n = nlohmann::json::parse(r.body, nullptr, false);
      for (const nlohmann::json& c :
           n.value("/status/conditions"_json_pointer, nlohmann::json::array())) {
        if (c.value("type", "") == "Ready" && c.value("status", "") == "True") return true;
      }
    }
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
}

}  // namespace strait::bench

#include "kube/credentials.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <spdlog/spdlog.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <ctime>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <vector>

#include "kube/json_parse.h"
#include "kube/time.h"

extern char** environ;

namespace strait::kube {
namespace {

using nlohmann::json;
using namespace std::chrono_literals;

constexpr auto kTokenFileReread = 1min;
constexpr auto kPluginTimeout = 60s;
constexpr size_t kMaxPluginOutput = 1 << 20;

Error unauthorized(const std::string& where, const std::string& what) {
  return makeError(Code::Unauthorized, where + ": " + what);
}

struct PluginRun {
  int exitCode = -1;
  std::string out;
  std::string err;
};

// Runs argv with extra environment; stdin is /dev/null. Kills it after kPluginTimeout.
Result<PluginRun> runProcess(const ExecConfig& ex, const std::string& execInfo) {
  std::vector<std::string> envStore;
  for (char** e = environ; e && *e; ++e) {
    std::string kv = *e;
    std::string name = kv.substr(0, kv.find('='));
    bool overridden = name == "KUBERNETES_EXEC_INFO";
    for (const auto& [k, v] : ex.env) overridden = overridden || k == name;
    if (!overridden) envStore.push_back(std::move(kv));
  }
  for (const auto& [k, v] : ex.env) envStore.push_back(k + "=" + v);
  envStore.push_back("KUBERNETES_EXEC_INFO=" + execInfo);
  std::vector<char*> envp;
  for (auto& s : envStore) envp.push_back(s.data());
  envp.push_back(nullptr);
  std::vector<std::string> argStore{ex.command};
  argStore.insert(argStore.end(), ex.args.begin(), ex.args.end());
  std::vector<char*> argv;
  for (auto& s : argStore) argv.push_back(s.data());
  argv.push_back(nullptr);

  int outPipe[2], errPipe[2];
  if (pipe2(outPipe, O_CLOEXEC) != 0) return unauthorized(ex.source, "pipe failed");
  if (pipe2(errPipe, O_CLOEXEC) != 0) {
    close(outPipe[0]);
    close(outPipe[1]);
    return unauthorized(ex.source, "pipe failed");
  }
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&fa, outPipe[1], 1);
  posix_spawn_file_actions_adddup2(&fa, errPipe[1], 2);
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP);
  posix_spawnattr_setpgroup(&attr, 0);
  pid_t pid = -1;
  int rc = posix_spawnp(&pid, ex.command.c_str(), &fa, &attr, argv.data(), envp.data());
  posix_spawn_file_actions_destroy(&fa);
  posix_spawnattr_destroy(&attr);
  close(outPipe[1]);
  close(errPipe[1]);
  if (rc != 0) {
    close(outPipe[0]);
    close(errPipe[0]);
    return unauthorized(ex.source, "cannot run credential plugin \"" + ex.command +
                                       "\": " + std::strerror(rc));
  }
  PluginRun run;
  auto deadline = std::chrono::steady_clock::now() + kPluginTimeout;
  bool timedOut = false;
  pollfd fds[2] = {{outPipe[0], POLLIN, 0}, {errPipe[0], POLLIN, 0}};
  int open = 2;
  while (open > 0) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      timedOut = true;
      break;
    }
    int n = poll(fds, 2, static_cast<int>(left.count()));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) break;
    for (int i = 0; i < 2; ++i) {
      if (fds[i].fd < 0 || !(fds[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      char buf[4096];
      ssize_t r = read(fds[i].fd, buf, sizeof buf);
      if (r <= 0) {
        close(fds[i].fd);
        fds[i].fd = -1;
        --open;
        continue;
      }
      std::string& dst = i == 0 ? run.out : run.err;
      if (dst.size() < kMaxPluginOutput) dst.append(buf, static_cast<size_t>(r));
    }
  }
  for (auto& f : fds) {
    if (f.fd >= 0) close(f.fd);
  }
  if (timedOut) kill(-pid, SIGKILL);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (timedOut) return unauthorized(ex.source, "credential plugin timed out after 60s");
  run.exitCode = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return run;
}

std::string trimmed(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == '\r' || s.back() == ' ')) s.pop_back();
  return s;
}

}  // namespace

Result<Credentials> parseExecCredential(const std::string& output, const std::string& apiVersion,
                                        const std::string& where) {
  auto doc = parseJson(output);
  if (!doc) return unauthorized(where, "plugin output is not JSON: " + doc.error().message);
  const json& d = *doc;
  if (!d.is_object()) return unauthorized(where, "plugin output must be a JSON object");
  if (d.value("kind", "") != "ExecCredential") {
    return unauthorized(where + ": kind", "must be ExecCredential");
  }
  if (d.value("apiVersion", "") != apiVersion) {
    return unauthorized(where + ": apiVersion", "plugin returned \"" +
                                                    d.value("apiVersion", "") +
                                                    "\", expected \"" + apiVersion + "\"");
  }
  if (!d.contains("status") || !d["status"].is_object()) {
    return unauthorized(where + ": status", "missing");
  }
  const json& st = d["status"];
  Credentials c;
  auto field = [&](const char* k) -> Result<std::string> {
    if (!st.contains(k) || st[k].is_null()) return std::string();
    if (!st[k].is_string()) return unauthorized(where + ": status." + k, "must be a string");
    return st[k].get<std::string>();
  };
  auto token = field("token");
  if (!token) return token.error();
  auto cert = field("clientCertificateData");
  if (!cert) return cert.error();
  auto key = field("clientKeyData");
  if (!key) return key.error();
  auto exp = field("expirationTimestamp");
  if (!exp) return exp.error();
  c.token = *token;
  if (cert->empty() != key->empty()) {
    return unauthorized(where + ": status",
                        "clientCertificateData and clientKeyData must be given together");
  }
  if (!cert->empty()) {
    if (auto s = checkPem(*cert, false, where + ": status.clientCertificateData"); !s) {
      return makeError(Code::Unauthorized, s.error().message);
    }
    if (auto s = checkPem(*key, true, where + ": status.clientKeyData"); !s) {
      return makeError(Code::Unauthorized, s.error().message);
    }
    c.clientCertPem = *cert;
    c.clientKeyPem = *key;
  }
  if (c.token.empty() && c.clientCertPem.empty()) {
    return unauthorized(where + ": status", "neither token nor clientCertificateData is set");
  }
  if (!exp->empty()) {
    auto t = parseRfc3339(*exp);
    if (!t) {
      return unauthorized(where + ": status.expirationTimestamp",
                          "not an RFC 3339 time: \"" + *exp + "\"");
    }
    c.expiry = *t;
  }
  return c;
}

CredentialSource::CredentialSource(const RestConfig& cfg, Clock clock)
    : cfg_(cfg), clock_(clock ? std::move(clock) : [] { return std::chrono::system_clock::now(); }) {}

Result<Credentials> CredentialSource::get() {
  base::MutexLock lock(mu_);
  auto now = clock_();
  if (cached_) {
    bool fresh = true;
    if (cached_->expiry && now >= *cached_->expiry) fresh = false;
    if (!cfg_.bearerTokenFile.empty() && !cfg_.exec && now - readAt_ >= kTokenFileReread) {
      fresh = false;
    }
    if (fresh) return *cached_;
  }
  Credentials c;
  c.clientCertPem = cfg_.clientCertPem;
  c.clientKeyPem = cfg_.clientKeyPem;
  c.token = cfg_.bearerToken;
  if (cfg_.exec) {
    auto r = runPlugin();
    if (!r) return r.error();
    Credentials p = std::move(*r);
    if (p.token.empty()) p.token = c.token;
    if (p.clientCertPem.empty()) {
      p.clientCertPem = c.clientCertPem;
      p.clientKeyPem = c.clientKeyPem;
    }
    c = std::move(p);
  } else if (!cfg_.bearerTokenFile.empty() && c.token.empty()) {
    std::ifstream in(cfg_.bearerTokenFile, std::ios::binary);
    if (!in) {
      // Keep using the last token if the file is briefly missing during a rotation.
      if (cached_) return *cached_;
      return unauthorized(cfg_.bearerTokenFile, std::string("cannot read token file: ") +
                                                    std::strerror(errno));
    }
    std::ostringstream ss;
    ss << in.rdbuf();
    c.token = trimmed(ss.str());
    if (c.token.empty()) return unauthorized(cfg_.bearerTokenFile, "token file is empty");
  }
  cached_ = c;
  readAt_ = now;
  return c;
}

bool CredentialSource::invalidate(const Credentials& used) {
  base::MutexLock lock(mu_);
  if (!dynamic()) return false;
  if (cached_ && *cached_ == used) cached_.reset();
  return true;
}

Result<Credentials> CredentialSource::runPlugin() {
  const ExecConfig& ex = *cfg_.exec;
  json info = {{"apiVersion", ex.apiVersion},
               {"kind", "ExecCredential"},
               {"spec", {{"interactive", false}}}};
  if (ex.provideClusterInfo) {
    info["spec"]["cluster"] = {{"server", cfg_.server},
                               {"tls-server-name", cfg_.tlsServerName},
                               {"insecure-skip-tls-verify", cfg_.insecureSkipTlsVerify}};
  }
  if (ex.interactiveMode == "Always") {
    return unauthorized(ex.source, "interactiveMode Always needs a terminal; this client "
                                   "never runs plugins interactively");
  }
  auto run = runProcess(ex, info.dump());
  if (!run) return run.error();
  if (run->exitCode != 0) {
    return unauthorized(ex.source, "credential plugin \"" + ex.command + "\" exited with " +
                                       std::to_string(run->exitCode) + ": " +
                                       trimmed(run->err.substr(0, 2000)));
  }
  spdlog::debug("event=exec_plugin_ran command={} ", ex.command);
  return parseExecCredential(run->out, ex.apiVersion, ex.source);
}

}  // namespace strait::kube

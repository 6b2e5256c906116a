// Probes: exec through launchInSandbox; httpGet with Boost.Beast and tcpSocket with a plain
// connect, both from a thread that joined the Pod's network namespace.
#include "minicluster/runtime_process_probe.h"

#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http.hpp>
#include <thread>

#include "minicluster/netns.h"
#include "minicluster/runtime_process_launch.h"

namespace strait::minicluster {
namespace {

namespace net = boost::asio;
namespace http = boost::beast::http;
using tcp = boost::asio::ip::tcp;
using nlohmann::json;
using Clock = std::chrono::steady_clock;

// A port given as a number or as the name of a containerPort; 0 when unknown.
int portOf(const json& port, const json& containerPorts) {
  if (port.is_number_integer()) return port.get<int>();
  if (port.is_string()) {
    std::string name = port.get<std::string>();
    for (const auto& p : containerPorts) {
      if (p.is_object() && p.value("name", "") == name) return p.value("containerPort", 0);
    }
    try {
      return std::stoi(name);
    } catch (...) {
    }
  }
  return 0;
}

bool execProbe(const json& exec, const ProbeTarget& t, std::chrono::seconds timeout) {
  LaunchSpec ls;
  for (const auto& a : exec.value("command", json::array())) {
    if (a.is_string()) ls.argv.push_back(a.get<std::string>());
  }
  if (ls.argv.empty()) return false;
  ls.env = t.env;
  ls.netnsPath = t.netnsPath;
  ls.hostname = t.hostname;
  ls.workingDir = t.workingDir;
  ls.bindFiles = t.bindFiles;
  ls.mounts = t.mounts;
  auto pid = launchInSandbox(ls);
  if (!pid) return false;
  auto deadline = Clock::now() + timeout;
  int status = 0;
  while (::waitpid(*pid, &status, WNOHANG) == 0) {
    if (Clock::now() >= deadline) {
      ::kill(-*pid, SIGKILL);
      ::waitpid(*pid, &status, 0);
      return false;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return exitCodeOf(status) == 0;
}

// Beast's tcp_stream times out asynchronous operations only: each probe runs its own
// io_context until the exchange ends or the stream's deadline cancels it.
bool httpProbe(const json& get, const ProbeTarget& t, std::chrono::seconds timeout) {
  int port = portOf(get.value("port", json()), t.containerPorts);
  if (port <= 0 || get.value("scheme", "HTTP") != "HTTP") return false;
  std::string host = get.value("host", t.podIP);
  bool ok = false;
  runInNetns(t.netnsPath, [&] {
    boost::system::error_code ec;
    auto addr = net::ip::make_address(host, ec);
    if (ec) return;
    net::io_context ioc;
    boost::beast::tcp_stream stream(ioc);
    http::request<http::empty_body> req{http::verb::get, get.value("path", "/"), 11};
    req.set(http::field::host, host + ":" + std::to_string(port));
    req.set(http::field::user_agent, "kube-probe/1.32");
    for (const auto& h : get.value("httpHeaders", json::array())) {
      if (h.is_object()) req.set(h.value("name", ""), h.value("value", ""));
    }
    boost::beast::flat_buffer buffer;
    http::response<http::string_body> res;
    stream.expires_after(timeout);
    stream.async_connect(tcp::endpoint(addr, static_cast<uint16_t>(port)),
                         [&](boost::system::error_code e) {
      if (e) return;
      http::async_write(stream, req, [&](boost::system::error_code e2, size_t) {
        if (e2) return;
        http::async_read(stream, buffer, res, [&](boost::system::error_code e3, size_t) {
          ok = !e3 && res.result_int() >= 200 && res.result_int() < 400;
        });
      });
    });
    ioc.run();
  });
  return ok;
}

bool tcpProbe(const json& sock, const ProbeTarget& t, std::chrono::seconds timeout) {
  int port = portOf(sock.value("port", json()), t.containerPorts);
  if (port <= 0) return false;
  std::string host = sock.value("host", t.podIP);
  bool ok = false;
  runInNetns(t.netnsPath, [&] {
    boost::system::error_code ec;
    auto addr = net::ip::make_address(host, ec);
    if (ec) return;
    net::io_context ioc;
    boost::beast::tcp_stream stream(ioc);
    stream.expires_after(timeout);
    stream.async_connect(tcp::endpoint(addr, static_cast<uint16_t>(port)),
                         [&](boost::system::error_code e) { ok = !e; });
    ioc.run();
  });
  return ok;
}

}  // namespace

ProbeTiming probeTiming(const json& probe) {
  ProbeTiming t;
  auto num = [&](const char* k, int64_t def) {
    return probe.contains(k) && probe[k].is_number_integer() ? probe[k].get<int64_t>() : def;
  };
  t.initialDelay = std::chrono::seconds(std::max<int64_t>(0, num("initialDelaySeconds", 0)));
  t.period = std::chrono::seconds(std::max<int64_t>(1, num("periodSeconds", 10)));
  t.timeout = std::chrono::seconds(std::max<int64_t>(1, num("timeoutSeconds", 1)));
  t.successThreshold = static_cast<int>(std::max<int64_t>(1, num("successThreshold", 1)));
  t.failureThreshold = static_cast<int>(std::max<int64_t>(1, num("failureThreshold", 3)));
  return t;
}

bool runProbe(const json& probe, const ProbeTarget& target) {
  auto timeout = probeTiming(probe).timeout;
  if (probe.contains("exec")) return execProbe(probe["exec"], target, timeout);
  if (probe.contains("httpGet")) return httpProbe(probe["httpGet"], target, timeout);
  if (probe.contains("tcpSocket")) return tcpProbe(probe["tcpSocket"], target, timeout);
  return false;
}

}  // namespace strait::minicluster

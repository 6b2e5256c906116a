// `strait agnhost`: netexec and serve-hostname over Boost.Beast's HTTP/1.1 parser and
// serializer, synchronous, one detached thread per connection.
#include "minicluster/agnhost.h"

#include <sys/wait.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ip/v6_only.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http.hpp>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <iostream>
#include <thread>

namespace strait::minicluster {
namespace {

namespace net = boost::asio;
namespace http = boost::beast::http;
using tcp = boost::asio::ip::tcp;
using boost::system::error_code;

std::string hostname() {
  char buf[256] = {};
  ::gethostname(buf, sizeof(buf) - 1);
  return buf;
}

int hexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

std::string percentDecode(const std::string& s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '+') {
      out += ' ';
    } else if (s[i] == '%' && i + 2 < s.size() && hexValue(s[i + 1]) >= 0 &&
               hexValue(s[i + 2]) >= 0) {
      out += static_cast<char>(hexValue(s[i + 1]) * 16 + hexValue(s[i + 2]));
      i += 2;
    } else {
      out += s[i];
    }
  }
  return out;
}

std::string queryValue(const std::string& query, const std::string& key) {
  size_t i = 0;
  while (i <= query.size()) {
    size_t j = query.find('&', i);
    if (j == std::string::npos) j = query.size();
    std::string kv = query.substr(i, j - i);
    auto eq = kv.find('=');
    if (percentDecode(kv.substr(0, eq)) == key) {
      return eq == std::string::npos ? "" : percentDecode(kv.substr(eq + 1));
    }
    i = j + 1;
  }
  return {};
}

// /shell: `sh -c cmd`, its stdout and stderr together, as upstream's CombinedOutput.
std::pair<http::status, std::string> shell(const std::string& cmd) {
  nlohmann::json out = nlohmann::json::object();
  int p[2];
  if (::pipe(p) != 0) return {http::status::internal_server_error, "pipe failed"};
  pid_t pid = ::fork();
  if (pid == 0) {
    ::dup2(p[1], 1);
    ::dup2(p[1], 2);
    ::close(p[0]);
    ::close(p[1]);
    ::execl("/bin/sh", "sh", "-c", cmd.c_str(), static_cast<char*>(nullptr));
    ::_exit(127);
  }
  ::close(p[1]);
  std::string output;
  char buf[4096];
  for (ssize_t n; (n = ::read(p[0], buf, sizeof(buf))) > 0;) output.append(buf, static_cast<size_t>(n));
  ::close(p[0]);
  int status = 0;
  if (pid > 0) ::waitpid(pid, &status, 0);
  out["output"] = output;
  http::status code = http::status::ok;
  if (pid < 0) {
    out["error"] = "fork failed";
    code = http::status::expectation_failed;
  } else if (WIFEXITED(status) && WEXITSTATUS(status) != 0) {
    out["error"] = "exit status " + std::to_string(WEXITSTATUS(status));
    code = http::status::expectation_failed;
  } else if (WIFSIGNALED(status)) {
    out["error"] = std::string("signal: ") + strsignal(WTERMSIG(status));
    code = http::status::expectation_failed;
  }
  return {code, out.dump()};
}

// The answer of netexec or serve-hostname to `target` from `client`.
std::pair<http::status, std::string> answer(AgnhostServer::Mode mode, const std::string& target,
                                            const std::string& client) {
  if (mode == AgnhostServer::Mode::ServeHostname) return {http::status::ok, hostname()};
  auto q = target.find('?');
  std::string path = target.substr(0, q);
  std::string query = q == std::string::npos ? "" : target.substr(q + 1);
  if (path == "/hostname" || path == "/hostName") return {http::status::ok, hostname()};
  if (path == "/shell") {
    std::string cmd = queryValue(query, "shellCommand");
    if (cmd.empty()) cmd = queryValue(query, "cmd");
    return shell(cmd);
  }
  if (path == "/exit") {
    std::string c = queryValue(query, "code");
    int code = 0;
    try {
      code = c.empty() ? 0 : std::stoi(c);
    } catch (...) {
      code = -1;
    }
    if (code < 0 || code > 127) return {http::status::bad_request, "bad exit code: " + c};
    std::cout << "Exiting with code " << code << std::endl;
    ::_exit(code);
  }
  if (path == "/echo") return {http::status::ok, queryValue(query, "msg")};
  if (path == "/clientip") return {http::status::ok, client};
  if (path == "/healthz") return {http::status::ok, "ok"};
  if (path == "/") {
    std::time_t t = std::time(nullptr);
    char buf[64];
    std::strftime(buf, sizeof(buf), "%Y-%m-%d %H:%M:%S UTC", std::gmtime(&t));
    return {http::status::ok, std::string("NOW: ") + buf};
  }
  return {http::status::not_found, "404 page not found\n"};
}

void serve(AgnhostServer::Mode mode, tcp::socket socket) {
  error_code ec;
  tcp::endpoint peer = socket.remote_endpoint(ec);
  std::string client;
  if (!ec) {
    auto a = peer.address();
    if (a.is_v6() && a.to_v6().is_v4_mapped()) a = net::ip::make_address_v4(net::ip::v4_mapped, a.to_v6());
    client = (a.is_v6() ? "[" + a.to_string() + "]" : a.to_string()) + ":" +
             std::to_string(peer.port());
  }
  boost::beast::flat_buffer buffer;
  for (;;) {
    http::request<http::string_body> req;
    http::read(socket, buffer, req, ec);
    if (ec) return;
    auto [status, body] = answer(mode, std::string(req.target()), client);
    http::response<http::string_body> res{status, req.version()};
    res.set(http::field::content_type, "text/plain; charset=utf-8");
    res.keep_alive(req.keep_alive());
    res.body() = std::move(body);
    res.prepare_payload();
    http::write(socket, res, ec);
    if (ec || !res.keep_alive()) break;
  }
  socket.shutdown(tcp::socket::shutdown_both, ec);
}

}  // namespace

int runAgnhost(const AgnhostServer& server) {
  net::io_context ioc;
  tcp::acceptor acceptor(ioc);
  error_code ec;
  // Dual-stack where the kernel allows, else IPv4 only.
  tcp::endpoint endpoint(net::ip::address_v6::any(), server.port);
  acceptor.open(endpoint.protocol(), ec);
  if (!ec) acceptor.set_option(net::ip::v6_only(false), ec);
  if (ec) {
    error_code ignored;
    acceptor.close(ignored);
    endpoint = tcp::endpoint(net::ip::address_v4::any(), server.port);
    acceptor.open(endpoint.protocol(), ec);
  }
  if (!ec) acceptor.set_option(net::socket_base::reuse_address(true), ec);
  if (!ec) acceptor.bind(endpoint, ec);
  if (!ec) acceptor.listen(net::socket_base::max_listen_connections, ec);
  if (ec) {
    std::cerr << "agnhost: cannot listen on port " << server.port << ": " << ec.message() << "\n";
    return 1;
  }
  std::cout << (server.mode == AgnhostServer::Mode::Netexec ? "Started HTTP server on port "
                                                            : "Serving on port ")
            << server.port << std::endl;
  for (;;) {
    tcp::socket socket(ioc);
    acceptor.accept(socket, ec);
    if (ec) {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
      continue;
    }
    std::thread(serve, server.mode, std::move(socket)).detach();
  }
}

}  // namespace strait::minicluster

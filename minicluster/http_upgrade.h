#pragma once
// Protocol switches of the minicluster HTTPS server (private to minicluster/): WebSocket
// accept for handlers that speak a channel protocol themselves (the kubelet's exec), and a
// byte relay for handlers that proxy an upgrade to another server (the API server's exec).
// Beast/Asio types appear only here and in http_server.cpp / http_upgrade.cpp.

#include <functional>
#include <memory>
#include <string>

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/beast/http.hpp>

#include "minicluster/http_server.h"

namespace strait::minicluster::detail {

using TlsStream = boost::asio::ssl::stream<boost::asio::ip::tcp::socket>;
using Request = boost::beast::http::request<boost::beast::http::string_body>;

// Accepts a WebSocket on `stream` for `req` with `subprotocol`; null on failure.
std::unique_ptr<WebSocket> acceptWebSocket(TlsStream& stream, const Request& req,
                                           const std::string& subprotocol);

// See Responder::proxyUpgrade. `stopping` is polled while relaying; true ends the relay.
kube::Status proxyUpgrade(TlsStream& client, const Request& req, const UpstreamTarget& upstream,
                          const std::function<bool()>& stopping);

}  // namespace strait::minicluster::detail

#pragma once
// Protocol switches of the HTTPS server (private to kube/): WebSocket
// accept for handlers that speak a channel protocol themselves (the kubelet's exec), and a
// byte relay for handlers that proxy an upgrade to another server (the API server's exec).
// Beast/Asio types appear only here and in http_server.cpp / http_upgrade.cpp.

#include <functional>
#include <memory>
#include <string>

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/websocket/stream.hpp>

#include "kube/http_server.h"

namespace strait::kube::detail {

using TlsStream = boost::asio::ssl::stream<boost::asio::ip::tcp::socket>;
using Request = boost::beast::http::request<boost::beast::http::string_body>;

using BeastWs = boost::beast::websocket::stream<TlsStream&>;

// Wraps an open Beast WebSocket as a full-duplex WebSocket: every operation is started on the
// stream's executor (whose io_context must be running on some thread) and waited for, so one
// read and one write may be outstanding at once, as Beast allows. `stopping` is polled while
// waiting: true makes the wait give up (the socket is shut down). `owner` keeps whatever the
// stream borrows alive (TLS context, io_context) until the WebSocket is destroyed.
std::unique_ptr<WebSocket> wrapWebSocket(std::unique_ptr<BeastWs> ws, std::string subprotocol,
                                         std::function<bool()> stopping,
                                         std::shared_ptr<void> owner = nullptr);

// Accepts a WebSocket on `stream` for `req` with `subprotocol`; null on failure.
std::unique_ptr<WebSocket> acceptWebSocket(TlsStream& stream, const Request& req,
                                           const std::string& subprotocol,
                                           std::function<bool()> stopping);

// The TLS stream of a connection switched to another protocol (Responder::acceptUpgrade) as
// a ByteStream: `leftover` (bytes read past the request) is returned first. Operations run on
// the stream's executor, like wrapWebSocket's; `stopping` true makes them give up. The
// stream must outlive the result.
std::unique_ptr<ByteStream> wrapTlsByteStream(TlsStream& stream, std::string leftover,
                                              std::function<bool()> stopping);

// See Responder::proxyUpgrade. `stopping` is polled while relaying; true ends the relay.
Status proxyUpgrade(TlsStream& client, const Request& req, const UpstreamTarget& upstream,
                          const std::function<bool()>& stopping);

}  // namespace strait::kube::detail

// Port-forward, server side (see portforward.h).
//
// Pipeline. servePortForward picks the protocol from the upgrade headers and runs one
// session on the request's thread: the session's reader loop (SpdySession::run or
// ChannelSession::run) reads the client's frames or messages until the connection ends.
// Each forwarded connection is a Forward with two threads of its own:
//   - the pump dials the port (PortDialer), then copies Pod -> client, sending through the
//     session's Sink (which serializes writes to the connection with the session's
//     writeMu_); when the Pod side ends or fails it reports the end or the error;
//   - the feeder writes what the reader loop queued (client -> Pod) to the Pod stream, and
//     half-closes it when the client finished sending.
// The reader loop never blocks on a Pod: it only queues. When the connection ends, every
// Forward's Pod stream is closed and its threads joined before the session returns.
#include "kube/portforward.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <condition_variable>
#include <deque>
#include <list>
#include <map>
#include <mutex>
#include <set>
#include <thread>

#include "base/thread_annotations.h"
#include "kube/spdy.h"

namespace strait::kube {
namespace {

// Client -> Pod bytes a Forward may hold before the session refuses more (a client that
// writes faster than the Pod reads).
constexpr size_t kMaxQueuedBytes = 8 * 1024 * 1024;
constexpr size_t kPumpChunk = 32 * 1024;

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

// Comma-separated header values, trimmed.
std::vector<std::string> splitList(const std::string& v) {
  std::vector<std::string> out;
  size_t i = 0;
  while (i <= v.size()) {
    size_t j = v.find(',', i);
    if (j == std::string::npos) j = v.size();
    std::string item = v.substr(i, j - i);
    size_t b = item.find_first_not_of(" \t");
    size_t e = item.find_last_not_of(" \t");
    if (b != std::string::npos) out.push_back(item.substr(b, e - b + 1));
    i = j + 1;
  }
  return out;
}

Result<uint16_t> parsePort(const std::string& s) {
  if (s.empty() || s.size() > 5 || !std::all_of(s.begin(), s.end(), ::isdigit)) {
    return makeError(Code::BadRequest, "unable to parse \"" + s + "\" as a port");
  }
  unsigned long v = std::stoul(s);
  if (v < 1 || v > 65535) {
    return makeError(Code::BadRequest, "port \"" + s + "\" must be between 1 and 65535");
  }
  return static_cast<uint16_t>(v);
}

void badRequest(Responder& out, const std::string& message) {
  HttpResponse r;
  r.status = 400;
  r.headers["Content-Type"] = "text/plain; charset=utf-8";
  r.body = message + "\n";
  out.respond(std::move(r));
}

// How a Forward talks back to the client; implemented by each session. Called from the
// Forward's pump thread.
class Sink {
 public:
  virtual ~Sink() = default;
  // Pod -> client bytes. False when the client side is gone (the pump stops).
  virtual bool data(std::string_view bytes) = 0;
  // The forward is over (Pod side ended, failed or aborted); called exactly once, last.
  virtual void end() = 0;
  // The dial or the relay failed: `message` for the user. end() follows.
  virtual void error(const std::string& message) = 0;
};

// One forwarded connection (see the top of the file). Used from the session's reader thread
// (push, finishInput, abort) and its own two threads.
class Forward {
 public:
  Forward(uint16_t port, std::unique_ptr<Sink> sink) : port_(port), sink_(std::move(sink)) {}
  ~Forward() { join(); }

  void start(const PortDialer& dial) {
    pump_ = std::thread([this, dial] { pump(dial); });
    feeder_ = std::thread([this] { feed(); });
  }

  // Queues client -> Pod bytes. False when more than kMaxQueuedBytes are waiting.
  bool push(std::string_view bytes) {
    base::MutexLock lock(mu_);
    if (inputDone_ || aborted_) return true;
    if (queuedBytes_ + bytes.size() > kMaxQueuedBytes) return false;
    queue_.emplace_back(bytes);
    queuedBytes_ += bytes.size();
    cv_.notify_all();
    return true;
  }

  // The client sends nothing more: the Pod side is half-closed once the queue is written.
  void finishInput() {
    base::MutexLock lock(mu_);
    inputDone_ = true;
    cv_.notify_all();
  }

  // Ends the forward now (client reset, session over): closes the Pod stream.
  void abort() {
    base::MutexLock lock(mu_);
    aborted_ = true;
    if (pod_) pod_->close();
    cv_.notify_all();
  }

  bool done() const { return done_.load(); }

  void join() {
    abort();
    if (pump_.joinable()) pump_.join();
    if (feeder_.joinable()) feeder_.join();
  }

 private:
  void pump(const PortDialer& dial) {
    auto conn = dial(port_);
    if (!conn) {
      sink_->error(conn.error().message);
      sink_->end();
      markDone();
      return;
    }
    ByteStream* pod = nullptr;
    {
      base::MutexLock lock(mu_);
      pod_ = std::move(*conn);
      pod = pod_.get();
      if (aborted_) pod_->close();
      cv_.notify_all();
    }
    std::array<char, kPumpChunk> buf;
    while (true) {
      auto n = pod->read(buf);
      if (!n) {
        bool aborted;
        {
          base::MutexLock lock(mu_);
          aborted = aborted_;
        }
        if (!aborted) sink_->error("error reading from port " + std::to_string(port_) + ": " + n.error().message);
        break;
      }
      if (*n == 0) break;
      if (!sink_->data(std::string_view(buf.data(), *n))) break;  // the client side is gone
    }
    sink_->end();
    markDone();
  }

  void feed() {
    while (true) {
      std::string chunk;
      ByteStream* pod = nullptr;
      {
        base::UniqueLock lock(mu_);
        cv_.wait(lock, [&]() REQUIRES(mu_) {
          return aborted_ || finished_ || (pod_ && (!queue_.empty() || inputDone_));
        });
        if (aborted_ || !pod_) return;
        if (queue_.empty()) {
          if (inputDone_) pod_->closeWrite();
          return;
        }
        chunk = std::move(queue_.front());
        queue_.pop_front();
        queuedBytes_ -= chunk.size();
        pod = pod_.get();
      }
      // pod_ lives until the Forward is destroyed, after this thread is joined.
      if (!pod->write(chunk)) return;
    }
  }

  void markDone() {
    {
      base::MutexLock lock(mu_);
      finished_ = true;
      if (pod_) pod_->close();
      cv_.notify_all();
    }
    done_ = true;
  }

  const uint16_t port_;
  const std::unique_ptr<Sink> sink_;
  std::thread pump_, feeder_;
  std::atomic<bool> done_{false};

  base::Mutex mu_;  // guards the fields below
  std::condition_variable_any cv_;
  std::unique_ptr<ByteStream> pod_ GUARDED_BY(mu_);
  std::deque<std::string> queue_ GUARDED_BY(mu_);
  size_t queuedBytes_ GUARDED_BY(mu_) = 0;
  bool inputDone_ GUARDED_BY(mu_) = false;
  bool aborted_ GUARDED_BY(mu_) = false;
  bool finished_ GUARDED_BY(mu_) = false;
};

// --- WebSocket messages as a byte stream (SPDY tunnelled over WebSocket) --------------------

// Reads concatenate the payloads of received messages; each write is one binary message.
class WebSocketBytes final : public ByteStream {
 public:
  explicit WebSocketBytes(std::unique_ptr<WebSocket> ws) : ws_(std::move(ws)) {}
  Result<size_t> read(std::span<char> buf) override {
    while (at_ >= message_.size()) {
      message_.clear();
      at_ = 0;
      if (!ws_->read(message_)) return size_t{0};
    }
    size_t n = std::min(buf.size(), message_.size() - at_);
    std::copy_n(message_.data() + at_, n, buf.data());
    at_ += n;
    return n;
  }
  Status write(std::string_view data) override {
    if (!ws_->write(data)) return makeError(Code::Unavailable, "websocket write failed");
    return Status::OK();
  }
  void closeWrite() override {}
  void close() override { ws_->close(); }

 private:
  std::unique_ptr<WebSocket> ws_;
  std::string message_;  // reader's
  size_t at_ = 0;
};

// --- SPDY/3.1 session ------------------------------------------------------------------------

// One SPDY/3.1 port-forward session over `conn`. run() is the reader loop; Forwards and the
// reader send frames through send(), serialized by writeMu_.
class SpdySession {
 public:
  SpdySession(ByteStream& conn, PortDialer dial) : conn_(conn), dial_(std::move(dial)) {}

  void run() {
    std::array<char, 32 * 1024> buf;
    spdy::FrameDecoder decoder;
    bool open = true;
    while (open) {
      auto n = conn_.read(buf);
      if (!n || *n == 0) break;
      decoder.feed(std::string_view(buf.data(), *n));
      while (open) {
        auto f = decoder.next();
        if (!f) {
          spdlog::debug("event=portforward_spdy_error error=\"{}\"", f.error().message);
          send(spdy::GoAwayFrame{lastStreamId_, static_cast<uint32_t>(spdy::GoAwayStatus::ProtocolError)});
          open = false;
          break;
        }
        if (!*f) break;
        open = handle(std::move(**f));
      }
      reap();
    }
    shutdown();
  }

  // Sends one frame; false when the connection failed.
  bool send(const spdy::Frame& f) {
    base::MutexLock lock(writeMu_);
    if (broken_) return false;
    auto bytes = encoder_.encode(f);
    if (!bytes || !conn_.write(*bytes)) {
      broken_ = true;
      return false;
    }
    return true;
  }

 private:
  struct Pair {
    uint32_t errorStream = 0, dataStream = 0;
    uint16_t port = 0;
    std::shared_ptr<Forward> forward;
  };

  // Sends to the client for one Pair; called on the Forward's pump thread.
  class PairSink final : public Sink {
   public:
    PairSink(SpdySession& s, uint32_t data, uint32_t error) : s_(s), data_(data), error_(error) {}
    bool data(std::string_view bytes) override {
      if (s_.isReset(data_)) return false;
      return s_.send(spdy::DataFrame{data_, 0, std::string(bytes)});
    }
    void end() override {
      if (!s_.isReset(data_)) s_.send(spdy::DataFrame{data_, spdy::kFlagFin, {}});
      if (!s_.isReset(error_)) s_.send(spdy::DataFrame{error_, spdy::kFlagFin, {}});
    }
    void error(const std::string& message) override {
      if (!s_.isReset(error_)) s_.send(spdy::DataFrame{error_, 0, message});
    }

   private:
    SpdySession& s_;
    const uint32_t data_, error_;
  };

  bool isReset(uint32_t stream) {
    base::MutexLock lock(streamsMu_);
    return reset_.count(stream) > 0;
  }

  // Handles one frame on the reader thread; false ends the session.
  bool handle(spdy::Frame&& frame) {
    if (auto* f = std::get_if<spdy::SynStreamFrame>(&frame)) return onSynStream(*f);
    if (auto* f = std::get_if<spdy::DataFrame>(&frame)) {
      auto it = streamPair_.find(f->streamId);
      if (it == streamPair_.end()) return true;  // unknown or finished stream: ignored
      Pair& p = *pairs_[it->second];
      if (f->streamId == p.dataStream && p.forward) {
        if (!f->data.empty() && !p.forward->push(f->data)) {
          spdlog::warn("event=portforward_overrun port={} stream={}", p.port, f->streamId);
          send(spdy::RstStreamFrame{f->streamId, static_cast<uint32_t>(spdy::RstStatus::FlowControlError)});
          markReset(f->streamId);
          p.forward->abort();
          return true;
        }
        if (f->flags & spdy::kFlagFin) p.forward->finishInput();
      } else if (f->streamId == p.dataStream) {
        pending_[it->second] += f->data;  // before the error stream arrived
        if (f->flags & spdy::kFlagFin) pendingFin_.insert(it->second);
      }
      // Data on the error stream (the client sends none) is ignored.
      return true;
    }
    if (auto* f = std::get_if<spdy::RstStreamFrame>(&frame)) {
      markReset(f->streamId);
      auto it = streamPair_.find(f->streamId);
      if (it != streamPair_.end()) {
        Pair& p = *pairs_[it->second];
        if (p.forward && f->streamId == p.dataStream) p.forward->abort();
      }
      return true;
    }
    if (auto* f = std::get_if<spdy::PingFrame>(&frame)) {
      // Client pings have odd ids; ours (we send none) would be even. Echo theirs.
      if (f->id % 2 == 1) send(*f);
      return true;
    }
    if (std::holds_alternative<spdy::GoAwayFrame>(frame)) return false;
    // SETTINGS, WINDOW_UPDATE (no flow control is enforced, as by spdystream), HEADERS and
    // SYN_REPLY (we open no streams) need nothing.
    return true;
  }

  bool onSynStream(const spdy::SynStreamFrame& f) {
    lastStreamId_ = std::max(lastStreamId_, f.streamId);
    auto refuse = [&](const std::string& why) {
      spdlog::debug("event=portforward_stream_refused stream={} reason=\"{}\"", f.streamId, why);
      send(spdy::RstStreamFrame{f.streamId, static_cast<uint32_t>(spdy::RstStatus::RefusedStream)});
      return true;
    };
    if (streamPair_.count(f.streamId)) {
      send(spdy::RstStreamFrame{f.streamId, static_cast<uint32_t>(spdy::RstStatus::StreamInUse)});
      return true;
    }
    std::string portText = spdy::headerValue(f.headers, "port");
    if (portText.empty()) return refuse("\"port\" header is required");
    auto port = parsePort(portText);
    if (!port) return refuse(port.error().message);
    std::string type = spdy::headerValue(f.headers, "streamtype");
    if (type != "error" && type != "data") return refuse("invalid stream type \"" + type + "\"");
    std::string requestId = spdy::headerValue(f.headers, "requestid");
    if (requestId.empty()) {
      // Clients older than the requestid header open error then data as consecutive
      // odd stream ids.
      requestId = std::to_string(type == "error" ? f.streamId : f.streamId - 2);
    }
    if (!send(spdy::SynReplyFrame{f.streamId, 0, {}})) return false;

    auto& slot = pairs_[requestId];
    if (!slot) slot = std::make_unique<Pair>();
    Pair& p = *slot;
    uint32_t& mine = type == "error" ? p.errorStream : p.dataStream;
    if (mine != 0) {
      std::string msg = "error processing stream for request " + requestId + ": " + type +
                        " stream already assigned";
      if (p.errorStream != 0 && !isReset(p.errorStream)) {
        send(spdy::DataFrame{p.errorStream, 0, msg});
      }
      send(spdy::RstStreamFrame{f.streamId, static_cast<uint32_t>(spdy::RstStatus::ProtocolError)});
      return true;
    }
    mine = f.streamId;
    p.port = *port;
    streamPair_[f.streamId] = requestId;
    if (f.flags & spdy::kFlagFin && type == "data") pendingFin_.insert(requestId);
    if (p.errorStream != 0 && p.dataStream != 0) {
      spdlog::debug("event=portforward_connection port={} request={}", p.port, requestId);
      p.forward = std::make_shared<Forward>(
          p.port, std::make_unique<PairSink>(*this, p.dataStream, p.errorStream));
      if (auto it = pending_.find(requestId); it != pending_.end()) {
        p.forward->push(it->second);
        pending_.erase(it);
      }
      if (pendingFin_.erase(requestId)) p.forward->finishInput();
      p.forward->start(dial_);
    }
    return true;
  }

  void markReset(uint32_t stream) {
    base::MutexLock lock(streamsMu_);
    reset_.insert(stream);
  }

  // Forgets pairs whose forward has ended (their stream ids stay refused).
  void reap() {
    for (auto it = pairs_.begin(); it != pairs_.end();) {
      Pair& p = *it->second;
      if (p.forward && p.forward->done()) {
        p.forward->join();
        streamPair_.erase(p.dataStream);
        streamPair_.erase(p.errorStream);
        it = pairs_.erase(it);
      } else {
        ++it;
      }
    }
  }

  void shutdown() {
    for (auto& [id, p] : pairs_) {
      if (p->forward) p->forward->abort();
    }
    for (auto& [id, p] : pairs_) {
      if (p->forward) p->forward->join();
    }
    pairs_.clear();
  }

  ByteStream& conn_;
  const PortDialer dial_;

  // Reader thread only.
  std::map<std::string, std::unique_ptr<Pair>> pairs_;  // by request id
  std::map<uint32_t, std::string> streamPair_;          // stream id -> request id
  std::map<std::string, std::string> pending_;          // data before the pair was complete
  std::set<std::string> pendingFin_;
  uint32_t lastStreamId_ = 0;

  base::Mutex streamsMu_;
  std::set<uint32_t> reset_ GUARDED_BY(streamsMu_);  // streams the client reset

  base::Mutex writeMu_;
  spdy::FrameEncoder encoder_ GUARDED_BY(writeMu_);
  bool broken_ GUARDED_BY(writeMu_) = false;
};

// --- WebSocket channel session (v4.channel.k8s.io) ------------------------------------------

// Port i uses data channel 2i and error channel 2i+1; every message starts with its channel.
class ChannelSession {
 public:
  ChannelSession(WebSocket& ws, std::vector<uint16_t> ports, PortDialer dial)
      : ws_(ws), ports_(std::move(ports)), dial_(std::move(dial)) {}

  void run() {
    for (size_t i = 0; i < ports_.size(); ++i) {
      std::string le{static_cast<char>(ports_[i] & 0xff), static_cast<char>(ports_[i] >> 8)};
      if (!send(static_cast<uint8_t>(2 * i), le) || !send(static_cast<uint8_t>(2 * i + 1), le)) {
        return;
      }
    }
    for (size_t i = 0; i < ports_.size(); ++i) {
      forwards_.push_back(
          std::make_unique<Forward>(ports_[i], std::make_unique<ChannelSink>(*this, i)));
      forwards_.back()->start(dial_);
    }
    // Reads on a thread of its own so that this thread can end the session when every
    // forward is done (the client need not close first).
    std::thread reader([this] { readLoop(); });
    {
      base::UniqueLock lock(mu_);
      cv_.wait(lock, [&]() REQUIRES(mu_) { return readerDone_ || ended_ == ports_.size(); });
    }
    ws_.close();  // wakes the reader if it is still reading
    reader.join();
    for (auto& f : forwards_) f->join();
  }

 private:
  class ChannelSink final : public Sink {
   public:
    ChannelSink(ChannelSession& s, size_t i) : s_(s), i_(i) {}
    bool data(std::string_view bytes) override { return s_.send(static_cast<uint8_t>(2 * i_), bytes); }
    void end() override { s_.forwardEnded(); }
    void error(const std::string& message) override {
      s_.send(static_cast<uint8_t>(2 * i_ + 1), message);
    }

   private:
    ChannelSession& s_;
    const size_t i_;
  };

  bool send(uint8_t channel, std::string_view bytes) {
    std::string msg;
    msg.reserve(bytes.size() + 1);
    msg += static_cast<char>(channel);
    msg += bytes;
    base::MutexLock lock(writeMu_);
    return ws_.write(msg);
  }

  void forwardEnded() {
    base::MutexLock lock(mu_);
    ++ended_;
    cv_.notify_all();
  }

  void readLoop() {
    std::string msg;
    while (ws_.read(msg)) {
      if (msg.empty()) continue;
      size_t channel = static_cast<unsigned char>(msg[0]);
      if (channel % 2 != 0 || channel / 2 >= forwards_.size()) continue;  // error channels
      if (msg.size() > 1 && !forwards_[channel / 2]->push(std::string_view(msg).substr(1))) {
        forwards_[channel / 2]->abort();
      }
    }
    for (auto& f : forwards_) f->finishInput();
    base::MutexLock lock(mu_);
    readerDone_ = true;
    cv_.notify_all();
  }

  WebSocket& ws_;
  const std::vector<uint16_t> ports_;
  const PortDialer dial_;
  std::vector<std::unique_ptr<Forward>> forwards_;  // fixed once run() started the reader

  base::Mutex writeMu_;  // one writer of ws_ at a time

  base::Mutex mu_;
  std::condition_variable_any cv_;
  bool readerDone_ GUARDED_BY(mu_) = false;
  size_t ended_ GUARDED_BY(mu_) = 0;
};

Result<std::vector<uint16_t>> portsFromQuery(const HttpRequest& req) {
  std::vector<uint16_t> ports;
  for (const char* key : {"port", "ports"}) {
    for (const std::string& v : req.queryAll(key)) {
      for (const std::string& item : splitList(v)) {
        auto p = parsePort(item);
        if (!p) return p.error();
        ports.push_back(*p);
      }
    }
  }
  if (ports.empty()) return makeError(Code::BadRequest, "query parameter \"port\" is required");
  return ports;
}

}  // namespace

void servePortForward(const HttpRequest& req, Responder& out, PortDialer dial) {
  const std::string upgrade = lower(req.header("upgrade"));
  if (upgrade.find("websocket") != std::string::npos) {
    std::vector<std::string> offered = splitList(req.header("sec-websocket-protocol"));
    auto offers = [&](std::string_view p) {
      return std::find(offered.begin(), offered.end(), p) != offered.end();
    };
    if (offers(kWebSocketSpdyPortForwardProtocol)) {
      auto ws = out.acceptWebSocket(std::string(kWebSocketSpdyPortForwardProtocol));
      if (!ws) return;
      spdlog::debug("event=portforward_open protocol={}", kWebSocketSpdyPortForwardProtocol);
      WebSocketBytes conn(std::move(ws));
      SpdySession(conn, std::move(dial)).run();
      conn.close();
      return;
    }
    std::string chosen;
    if (offers(kWebSocketChannelProtocolV4)) {
      chosen = std::string(kWebSocketChannelProtocolV4);
    } else if (offers(kPortForwardProtocolV1)) {
      chosen = std::string(kPortForwardProtocolV1);
    } else if (!offered.empty()) {
      return badRequest(out, "unable to upgrade: none of the offered WebSocket subprotocols (" +
                                 req.header("sec-websocket-protocol") + ") is supported; use " +
                                 std::string(kWebSocketSpdyPortForwardProtocol) + " or " +
                                 std::string(kWebSocketChannelProtocolV4));
    }
    auto ports = portsFromQuery(req);
    if (!ports) return badRequest(out, ports.error().message);
    auto ws = out.acceptWebSocket(chosen);
    if (!ws) return;
    spdlog::debug("event=portforward_open protocol={} ports={}", chosen.empty() ? "none" : chosen,
                  ports->size());
    ChannelSession(*ws, std::move(*ports), std::move(dial)).run();
    return;
  }
  if (upgrade.find("spdy/3.1") != std::string::npos) {
    std::string versions = req.header("x-stream-protocol-version");
    if (!versions.empty()) {
      auto list = splitList(versions);
      if (std::find(list.begin(), list.end(), kPortForwardProtocolV1) == list.end()) {
        return badRequest(out, "unable to upgrade: unable to negotiate protocol: client "
                               "supports " + versions + ", server supports " +
                                   std::string(kPortForwardProtocolV1));
      }
    }
    auto conn = out.acceptUpgrade(std::string(kSpdyProtocol),
                                  {{"X-Stream-Protocol-Version", std::string(kPortForwardProtocolV1)}});
    if (!conn) return;
    spdlog::debug("event=portforward_open protocol={}", kSpdyProtocol);
    SpdySession(*conn, std::move(dial)).run();
    conn->close();
    return;
  }
  badRequest(out, "unable to upgrade: missing upgrade headers in request: port-forward needs "
                  "\"Upgrade: SPDY/3.1\" or a WebSocket (" +
                      std::string(kWebSocketSpdyPortForwardProtocol) + " or " +
                      std::string(kWebSocketChannelProtocolV4) + ")");
}

}  // namespace strait::kube

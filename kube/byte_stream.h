#pragma once
// A bidirectional byte stream: a TCP connection to a Pod's port, one forwarded connection
// inside a port-forward session, a relay over gRPC... Whatever carries the bytes, the
// contract is the one of a TCP socket.
//
// Thread-safety: one thread may block in read() while another calls write(), closeWrite()
// or close() (at most one reader and one writer at a time). close() may be called from any
// thread at any time and unblocks a pending read() and write().

#include <cstddef>
#include <memory>
#include <span>
#include <string_view>

#include "kube/status.h"

namespace strait::kube {

class ByteStream {
 public:
  virtual ~ByteStream() = default;
  // Reads at most buf.size() bytes into `buf`. Blocks until at least one byte arrived,
  // the peer finished sending (returns 0: end of stream, and every later read returns 0
  // too) or the stream failed or was closed (returns an error, Unavailable or Internal).
  virtual Result<size_t> read(std::span<char> buf) = 0;
  // Writes all of `data`. Blocks until it was handed to the transport. Error when the
  // stream failed, was closed or closeWrite() was called.
  virtual Status write(std::string_view data) = 0;
  // Tells the peer no more data follows (a TCP FIN); reading goes on. Idempotent.
  virtual void closeWrite() = 0;
  // Ends both directions at once and releases the transport; a blocked read() or write()
  // returns an error. Idempotent. The destructor calls it.
  virtual void close() = 0;
};

// A ByteStream over a connected stream socket (TCP, Unix), which it owns and closes. read()
// is recv(), closeWrite() is shutdown(SHUT_WR), close() shuts the socket down (waking a
// blocked reader or writer) and closes it once no call is in flight.
std::unique_ptr<ByteStream> socketByteStream(int fd);

}  // namespace strait::kube

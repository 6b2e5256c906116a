#include "tunnel/cookie.h"

#include <cstring>

namespace strait::tunnel {

namespace {
Bytes label(const char* s) { return Bytes(reinterpret_cast<const uint8_t*>(s), std::strlen(s)); }
}  // namespace

void CookieChecker::init(const PublicKey& localPublic) {
  base::MutexLock lock(mu_);
  mac1Key_ = hash({label(kLabelMac1), localPublic});
  encryptionKey_ = hash({label(kLabelCookie), localPublic});
}

bool CookieChecker::checkMac1(Bytes msg) const {
  if (msg.size() < 32) return false;
  base::MutexLock lock(mu_);
  MacValue m = mac(mac1Key_, {msg.first(msg.size() - 32)});
  return constantTimeEqual(m, msg.subspan(msg.size() - 32, 16));
}

HashValue CookieChecker::cookieFor(Bytes source, SteadyTime now) {
  if (!secretSet_ || now - secretSetAt_ > kCookieRefreshTime) {
    randomBytes(secret_.mutableBytes());
    secretSetAt_ = now;
    secretSet_ = true;
  }
  MacValue c = mac(secret_.bytes(), {source});
  HashValue out{};
  std::memcpy(out.data(), c.data(), c.size());
  return out;
}

bool CookieChecker::checkMac2(Bytes msg, Bytes source, SteadyTime now) {
  if (msg.size() < 32) return false;
  base::MutexLock lock(mu_);
  if (!secretSet_ || now - secretSetAt_ > kCookieRefreshTime) return false;
  MacValue c = mac(secret_.bytes(), {source});
  MacValue m = mac(Bytes(c.data(), c.size()), {msg.first(msg.size() - 16)});
  wipeMemory(c.data(), c.size());
  return constantTimeEqual(m, msg.subspan(msg.size() - 16, 16));
}

MessageCookieReply CookieChecker::createReply(Bytes msg, uint32_t receiverIndex, Bytes source,
                                              SteadyTime now) {
  MessageCookieReply reply{};
  reply.type = kMessageCookieReplyType;
  reply.receiver = receiverIndex;
  randomBytes(MutableBytes(reply.nonce, sizeof reply.nonce));
  base::MutexLock lock(mu_);
  HashValue cookie = cookieFor(source, now);
  Bytes mac1 = msg.subspan(msg.size() - 32, 16);
  xaeadSeal(encryptionKey_.data(), reply.nonce, Bytes(cookie.data(), kMacSize), mac1,
            reply.encryptedCookie);
  wipeMemory(cookie.data(), cookie.size());
  return reply;
}

void CookieGenerator::init(const PublicKey& peerPublic) {
  base::MutexLock lock(mu_);
  mac1Key_ = hash({label(kLabelMac1), peerPublic});
  decryptionKey_ = hash({label(kLabelCookie), peerPublic});
  hasLastMac1_ = false;
  hasCookie_ = false;
  cookie_.wipe();
}

void CookieGenerator::addMacs(MutableBytes msg, SteadyTime now) {
  base::MutexLock lock(mu_);
  size_t n = msg.size();
  MacValue m1 = mac(mac1Key_, {Bytes(msg.data(), n - 32)});
  std::memcpy(msg.data() + n - 32, m1.data(), 16);
  lastMac1_ = m1;
  hasLastMac1_ = true;
  if (hasCookie_ && now - cookieSetAt_ < kCookieRefreshTime) {
    MacValue m2 = mac(cookie_.bytes(), {Bytes(msg.data(), n - 16)});
    std::memcpy(msg.data() + n - 16, m2.data(), 16);
  } else {
    std::memset(msg.data() + n - 16, 0, 16);
  }
}

bool CookieGenerator::consumeReply(const MessageCookieReply& reply, SteadyTime now) {
  base::MutexLock lock(mu_);
  if (!hasLastMac1_) return false;
  SecretBytes<16> cookie;
  if (!xaeadOpen(decryptionKey_.data(), reply.nonce,
                 Bytes(reply.encryptedCookie, sizeof reply.encryptedCookie), lastMac1_,
                 cookie.data())) {
    return false;
  }
  cookie_ = cookie;
  cookieSetAt_ = now;
  hasCookie_ = true;
  hasLastMac1_ = false;
  return true;
}

}  // namespace strait::tunnel

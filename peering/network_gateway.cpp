// tunnel::Gateway as a GatewayPort (see network_gateway.h).
#include "peering/network_gateway.h"

namespace strait::peering {
namespace {

class TunnelGatewayPort final : public GatewayPort {
 public:
  explicit TunnelGatewayPort(std::unique_ptr<tunnel::Gateway> gw) : gw_(std::move(gw)) {}
  tunnel::PublicKey publicKey() const override { return gw_->publicKey(); }
  base::Status upsertPeer(const std::string& name, const tunnel::GatewayPeer& peer) override {
    return gw_->upsertPeer(name, peer);
  }
  bool removePeer(const std::string& name) override { return gw_->removePeer(name); }
  std::optional<tunnel::GatewayPeerStatus> peerStatus(const std::string& name) const override {
    return gw_->peerStatus(name);
  }
  base::Status setPrivateKey(const tunnel::PrivateKey& key) override {
    return gw_->setPrivateKey(key);
  }

 private:
  std::unique_ptr<tunnel::Gateway> gw_;
};

}  // namespace

kube::Result<std::unique_ptr<GatewayPort>> startTunnelGateway(tunnel::GatewayOptions options) {
  const std::string where = options.interfaceName + (options.netnsPath.empty()
                                                         ? std::string()
                                                         : " in " + options.netnsPath);
  base::Result<std::unique_ptr<tunnel::Gateway>> gw = tunnel::Gateway::start(std::move(options));
  if (!gw.ok()) {
    return kube::makeError(kube::Code::Unavailable,
                           "gateway " + where + ": " + gw.error().message);
  }
  return std::unique_ptr<GatewayPort>(std::make_unique<TunnelGatewayPort>(std::move(*gw)));
}

}  // namespace strait::peering

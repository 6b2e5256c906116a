#pragma once
// A kube::Client for unit tests whose fake serves only a few calls: every call answers
// Internal "not used by this test" unless the fake overrides it.
#include "kube/client.h"

namespace strait::reflection::testing {

class UnusedClient : public kube::Client {
 public:
  const kube::RestConfig& config() const override { return cfg_; }
  kube::Result<nlohmann::json> get(const kube::ResourceRef&, std::string_view, std::string_view,
                                   const kube::GetOptions&) override {
    return unused();
  }
  kube::Result<nlohmann::json> list(const kube::ResourceRef&, std::string_view,
                                    const kube::ListOptions&) override {
    return unused();
  }
  kube::Result<nlohmann::json> create(const kube::ResourceRef&, std::string_view,
                                      const nlohmann::json&, const kube::WriteOptions&) override {
    return unused();
  }
  kube::Result<nlohmann::json> update(const kube::ResourceRef&, std::string_view,
                                      const nlohmann::json&, const kube::WriteOptions&) override {
    return unused();
  }
  kube::Result<nlohmann::json> patch(const kube::ResourceRef&, std::string_view,
                                     std::string_view, kube::PatchType, const nlohmann::json&,
                                     const kube::WriteOptions&) override {
    return unused();
  }
  kube::Result<nlohmann::json> remove(const kube::ResourceRef&, std::string_view,
                                      std::string_view, const kube::DeleteOptions&) override {
    return unused();
  }
  kube::Result<nlohmann::json> removeCollection(const kube::ResourceRef&, std::string_view,
                                                const kube::ListOptions&,
                                                const kube::DeleteOptions&) override {
    return unused();
  }
  kube::Status watch(const kube::ResourceRef&, std::string_view, const kube::WatchOptions&,
                     const std::function<bool(kube::WatchEvent&&)>&, std::stop_token) override {
    return unused().error();
  }
  kube::Status streamLogs(std::string_view, std::string_view, const kube::LogOptions&,
                          const std::function<bool(std::string_view)>&,
                          std::stop_token) override {
    return unused().error();
  }

 protected:
  static kube::Result<nlohmann::json> unused() {
    return kube::makeError(kube::Code::Internal, "not used by this test");
  }

 private:
  kube::RestConfig cfg_;
};

}  // namespace strait::reflection::testing

// CSR signer, in process: approved requests are signed for their signer, expirationSeconds
// honoured, denied ones left alone, requests breaking the signer's rules marked Failed.
#include "controller_fixture.h"
#include "fakes/test_csr.h"
#include "kube/base64.h"

namespace strait::minicluster::testing {
namespace {

using strait::testing::makeTestCsr;
using strait::testing::verifyTestCert;

std::string b64(const std::string& in) { return kube::base64Encode(in); }
std::string unb64(const std::string& in) { return kube::base64Decode(in).value_or(""); }

class CsrSignerTest : public ControllerTest {
 protected:
  void submit(const std::string& name, const std::string& signer, const std::string& csrPem,
              json usages, std::optional<int> expirationSeconds = std::nullopt) {
    json csr = {{"metadata", {{"name", name}}},
                {"spec", {{"request", b64(csrPem)}, {"signerName", signer}, {"usages", usages}}}};
    if (expirationSeconds) csr["spec"]["expirationSeconds"] = *expirationSeconds;
    auto r = create("certificates.k8s.io", "certificatesigningrequests", "", csr);
    ASSERT_TRUE(r.ok()) << r.error().message;
  }
  void decide(const std::string& name, const std::string& type) {
    auto r = mutate("certificates.k8s.io", "certificatesigningrequests", "", name, "approval",
                    [&](json& o) {
                      o["status"]["conditions"] = json::array(
                          {{{"type", type}, {"status", "True"}, {"reason", "Test"},
                            {"message", "by test"}}});
                    });
    ASSERT_TRUE(r.ok()) << r.error().message;
  }
  json csr(const std::string& name) {
    return *get("certificates.k8s.io", "certificatesigningrequests", "", name);
  }
};

TEST_F(CsrSignerTest, ApprovedClientCsrIsSignedWithRequestedExpiry) {
  submit("alice", "kubernetes.io/kube-apiserver-client", makeTestCsr("alice", "devs", ""),
         {"digital signature", "client auth"}, 3600);
  std::this_thread::sleep_for(200ms);
  EXPECT_FALSE(csr("alice")["status"].contains("certificate")) << "signed before approval";
  decide("alice", "Approved");
  ASSERT_TRUE(eventually([&] { return csr("alice")["status"].contains("certificate"); }));
  std::string pem = unb64(csr("alice")["status"]["certificate"]);
  long seconds = 0;
  EXPECT_EQ(verifyTestCert(ca_.certPem, pem, X509_PURPOSE_SSL_CLIENT, &seconds), X509_V_OK) << pem;
  EXPECT_EQ(seconds, 3600 + 300);  // notBefore is backdated 5 minutes
}

TEST_F(CsrSignerTest, KubeletServingCsrGetsAServerCertificate) {
  submit("node1", "kubernetes.io/kubelet-serving",
         makeTestCsr("system:node:node1", "system:nodes", "DNS:node1,IP:10.0.0.7"),
         {"digital signature", "key encipherment", "server auth"});
  decide("node1", "Approved");
  ASSERT_TRUE(eventually([&] { return csr("node1")["status"].contains("certificate"); }));
  std::string pem = unb64(csr("node1")["status"]["certificate"]);
  EXPECT_EQ(verifyTestCert(ca_.certPem, pem, X509_PURPOSE_SSL_SERVER), X509_V_OK);
}

TEST_F(CsrSignerTest, DeniedAndInvalidRequestsAreNotSigned) {
  submit("denied", "kubernetes.io/kube-apiserver-client", makeTestCsr("bob", "", ""),
         {"client auth"});
  decide("denied", "Denied");
  submit("bad-usage", "kubernetes.io/kube-apiserver-client", makeTestCsr("eve", "", ""),
         {"server auth"});
  decide("bad-usage", "Approved");
  submit("bad-subject", "kubernetes.io/kubelet-serving", makeTestCsr("mallory", "devs", "DNS:x"),
         {"server auth"});
  decide("bad-subject", "Approved");
  submit("other-signer", "example.com/custom", makeTestCsr("x", "", ""), {"client auth"});
  decide("other-signer", "Approved");
  for (const char* name : {"bad-usage", "bad-subject"}) {
    ASSERT_TRUE(eventually([&] {
      for (const auto& c : csr(name)["status"].value("conditions", json::array())) {
        if (c["type"] == "Failed" && c["reason"] == "SignerValidationFailure") return true;
      }
      return false;
    })) << name << ": " << csr(name).dump();
  }
  std::this_thread::sleep_for(200ms);
  for (const char* name : {"denied", "bad-usage", "bad-subject", "other-signer"}) {
    EXPECT_FALSE(csr(name)["status"].contains("certificate")) << name;
  }
}

}  // namespace
}  // namespace strait::minicluster::testing

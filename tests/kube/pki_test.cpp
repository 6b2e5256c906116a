#include "fakes/test_csr.h"
#include "kube/pki.h"

#include <gtest/gtest.h>
#include <openssl/bio.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>
#include <sys/stat.h>
#include <unistd.h>
#include <yaml-cpp/yaml.h>

#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

namespace strait::kube {
namespace {

template <auto FreeFn>
struct Deleter {
  template <class T>
  void operator()(T* p) const {
    FreeFn(p);
  }
};
using BioPtr = std::unique_ptr<BIO, Deleter<BIO_free_all>>;
using X509Ptr = std::unique_ptr<X509, Deleter<X509_free>>;
using PKeyPtr = std::unique_ptr<EVP_PKEY, Deleter<EVP_PKEY_free>>;
using StorePtr = std::unique_ptr<X509_STORE, Deleter<X509_STORE_free>>;
using StoreCtxPtr = std::unique_ptr<X509_STORE_CTX, Deleter<X509_STORE_CTX_free>>;
using ReqPtr = std::unique_ptr<X509_REQ, Deleter<X509_REQ_free>>;
using GenNamesPtr = std::unique_ptr<GENERAL_NAMES, Deleter<GENERAL_NAMES_free>>;

X509Ptr parseCert(const std::string& pem) {
  BioPtr bio(BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())));
  return X509Ptr(PEM_read_bio_X509(bio.get(), nullptr, nullptr, nullptr));
}

PKeyPtr parseKey(const std::string& pem) {
  BioPtr bio(BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())));
  return PKeyPtr(PEM_read_bio_PrivateKey(bio.get(), nullptr, nullptr, nullptr));
}

// X509_verify_cert of `leaf` against `ca` for `purpose` (X509_PURPOSE_SSL_SERVER/CLIENT).
int verify(const std::string& caPem, const std::string& leafPem, int purpose) {
  X509Ptr ca = parseCert(caPem);
  X509Ptr leaf = parseCert(leafPem);
  if (!ca || !leaf) return -100;
  StorePtr store(X509_STORE_new());
  X509_STORE_add_cert(store.get(), ca.get());
  StoreCtxPtr ctx(X509_STORE_CTX_new());
  X509_STORE_CTX_init(ctx.get(), store.get(), leaf.get(), nullptr);
  X509_STORE_CTX_set_purpose(ctx.get(), purpose);
  if (X509_verify_cert(ctx.get()) == 1) return X509_V_OK;
  return X509_STORE_CTX_get_error(ctx.get());
}

std::vector<std::string> subjectEntries(X509* cert, int nid) {
  std::vector<std::string> out;
  X509_NAME* name = X509_get_subject_name(cert);
  for (int i = X509_NAME_get_index_by_NID(name, nid, -1); i >= 0;
       i = X509_NAME_get_index_by_NID(name, nid, i)) {
    ASN1_STRING* s = X509_NAME_ENTRY_get_data(X509_NAME_get_entry(name, i));
    out.emplace_back(reinterpret_cast<const char*>(ASN1_STRING_get0_data(s)),
                     ASN1_STRING_length(s));
  }
  return out;
}

// SANs as "DNS:x" / "IP:<raw bytes length>" strings.
std::vector<std::string> sans(X509* cert) {
  std::vector<std::string> out;
  GenNamesPtr names(
      static_cast<GENERAL_NAMES*>(X509_get_ext_d2i(cert, NID_subject_alt_name, nullptr, nullptr)));
  for (int i = 0; names && i < sk_GENERAL_NAME_num(names.get()); ++i) {
    GENERAL_NAME* gn = sk_GENERAL_NAME_value(names.get(), i);
    if (gn->type == GEN_DNS) {
      out.push_back("DNS:" +
                    std::string(reinterpret_cast<const char*>(ASN1_STRING_get0_data(gn->d.dNSName)),
                                ASN1_STRING_length(gn->d.dNSName)));
    } else if (gn->type == GEN_IPADD) {
      out.push_back("IP" + std::to_string(ASN1_STRING_length(gn->d.iPAddress)));
    }
  }
  return out;
}

TEST(PkiTest, CaIsSelfSignedCa) {
  auto ca = makeCa("strait-ca");
  ASSERT_TRUE(ca.ok()) << ca.error().message;
  X509Ptr cert = parseCert(ca->certPem);
  ASSERT_TRUE(cert);
  EXPECT_EQ(X509_check_ca(cert.get()), 1);
  EXPECT_EQ(subjectEntries(cert.get(), NID_commonName), std::vector<std::string>{"strait-ca"});
  EXPECT_EQ(verify(ca->certPem, ca->certPem, X509_PURPOSE_ANY), X509_V_OK);
  EXPECT_TRUE(X509_get_extension_flags(cert.get()) & EXFLAG_CA);
  EXPECT_TRUE(X509_get_key_usage(cert.get()) & KU_KEY_CERT_SIGN);
  EXPECT_NE(X509_get0_subject_key_id(cert.get()), nullptr);
  PKeyPtr key = parseKey(ca->keyPem);
  ASSERT_TRUE(key);
  EXPECT_EQ(EVP_PKEY_get_base_id(key.get()), EVP_PKEY_EC);
  EXPECT_EQ(X509_check_private_key(cert.get(), key.get()), 1);
}

TEST(PkiTest, ServerAndClientCertsVerify) {
  auto ca = makeCa("strait-ca");
  ASSERT_TRUE(ca.ok()) << ca.error().message;
  auto server = issueCert(*ca, "kube-apiserver", {}, {"localhost", "kubernetes.default.svc"},
                          {"127.0.0.1", "::1"}, /*server=*/true);
  ASSERT_TRUE(server.ok()) << server.error().message;
  auto client = issueCert(*ca, "alice", {"system:masters", "devs"}, {}, {}, /*server=*/false);
  ASSERT_TRUE(client.ok()) << client.error().message;

  EXPECT_EQ(verify(ca->certPem, server->certPem, X509_PURPOSE_SSL_SERVER), X509_V_OK);
  EXPECT_EQ(verify(ca->certPem, client->certPem, X509_PURPOSE_SSL_CLIENT), X509_V_OK);
  // EKU restricts each certificate to its role.
  EXPECT_NE(verify(ca->certPem, client->certPem, X509_PURPOSE_SSL_SERVER), X509_V_OK);
  EXPECT_NE(verify(ca->certPem, server->certPem, X509_PURPOSE_SSL_CLIENT), X509_V_OK);

  X509Ptr s = parseCert(server->certPem);
  EXPECT_EQ(sans(s.get()), (std::vector<std::string>{"DNS:localhost", "DNS:kubernetes.default.svc",
                                                     "IP4", "IP16"}));
  EXPECT_EQ(X509_check_ip_asc(s.get(), "127.0.0.1", 0), 1);
  EXPECT_EQ(X509_check_ip_asc(s.get(), "::1", 0), 1);
  EXPECT_EQ(X509_check_host(s.get(), "localhost", 0, 0, nullptr), 1);
  EXPECT_NE(X509_get0_authority_key_id(s.get()), nullptr);

  X509Ptr c = parseCert(client->certPem);
  EXPECT_EQ(subjectEntries(c.get(), NID_commonName), std::vector<std::string>{"alice"});
  EXPECT_EQ(subjectEntries(c.get(), NID_organizationName),
            (std::vector<std::string>{"system:masters", "devs"}));
  PKeyPtr ck = parseKey(client->keyPem);
  ASSERT_TRUE(ck);
  EXPECT_EQ(X509_check_private_key(c.get(), ck.get()), 1);

  // notBefore is backdated to tolerate clock skew.
  int days = 0, secs = 0;
  ASSERT_EQ(ASN1_TIME_diff(&days, &secs, nullptr, X509_get0_notBefore(c.get())), 1);
  EXPECT_LE(days * 86400 + secs, -240);

  // Serials are random.
  auto client2 = issueCert(*ca, "alice", {}, {}, {}, false);
  ASSERT_TRUE(client2.ok());
  X509Ptr c2 = parseCert(client2->certPem);
  EXPECT_NE(ASN1_INTEGER_cmp(X509_get0_serialNumber(c.get()), X509_get0_serialNumber(c2.get())), 0);
}

TEST(PkiTest, CertFromOtherCaDoesNotVerify) {
  auto ca = makeCa("ca-one");
  auto other = makeCa("ca-two");
  ASSERT_TRUE(ca.ok() && other.ok());
  auto client = issueCert(*other, "mallory", {}, {}, {}, false);
  ASSERT_TRUE(client.ok());
  EXPECT_NE(verify(ca->certPem, client->certPem, X509_PURPOSE_SSL_CLIENT), X509_V_OK);
}

TEST(PkiTest, IssueCertRejectsBadInput) {
  auto ca = makeCa("strait-ca");
  ASSERT_TRUE(ca.ok());
  auto badIp = issueCert(*ca, "srv", {}, {}, {"not-an-ip"}, true);
  ASSERT_FALSE(badIp.ok());
  EXPECT_EQ(badIp.error().code, kube::Code::Invalid);
  EXPECT_NE(badIp.error().message.find("not-an-ip"), std::string::npos);

  KeyPair broken{"garbage", ca->keyPem};
  auto badCa = issueCert(broken, "srv", {}, {}, {}, true);
  ASSERT_FALSE(badCa.ok());
  EXPECT_FALSE(badCa.error().message.empty());

  auto other = makeCa("other");
  ASSERT_TRUE(other.ok());
  KeyPair mismatched{ca->certPem, other->keyPem};
  EXPECT_FALSE(issueCert(mismatched, "srv", {}, {}, {}, true).ok());
}

// A CSR as a kubelet would make it: its own key, CN/O subject, SANs in an extension request.
std::string makeCsr(const std::string& cn, const std::string& org, const std::string& san) {
  return strait::testing::makeTestCsr(cn, org, san);
}

TEST(PkiTest, SignCsrKeepsSubjectAndCopiesServerSans) {
  auto ca = makeCa("strait-ca");
  ASSERT_TRUE(ca.ok());
  std::string csr = makeCsr("system:node:worker-1", "system:nodes", "DNS:worker-1,IP:10.0.0.7");

  auto serving = signCsr(*ca, csr, /*server=*/true);
  ASSERT_TRUE(serving.ok()) << serving.error().message;
  EXPECT_EQ(verify(ca->certPem, *serving, X509_PURPOSE_SSL_SERVER), X509_V_OK);
  X509Ptr s = parseCert(*serving);
  EXPECT_EQ(subjectEntries(s.get(), NID_commonName),
            std::vector<std::string>{"system:node:worker-1"});
  EXPECT_EQ(subjectEntries(s.get(), NID_organizationName),
            std::vector<std::string>{"system:nodes"});
  EXPECT_EQ(sans(s.get()), (std::vector<std::string>{"DNS:worker-1", "IP4"}));

  auto clientCert = signCsr(*ca, csr, /*server=*/false);
  ASSERT_TRUE(clientCert.ok()) << clientCert.error().message;
  EXPECT_EQ(verify(ca->certPem, *clientCert, X509_PURPOSE_SSL_CLIENT), X509_V_OK);
  X509Ptr c = parseCert(*clientCert);
  EXPECT_TRUE(sans(c.get()).empty());  // client certificates copy nothing but the subject/key

  // The issued certificate carries the CSR's public key.
  BioPtr bio(BIO_new_mem_buf(csr.data(), static_cast<int>(csr.size())));
  ReqPtr req(PEM_read_bio_X509_REQ(bio.get(), nullptr, nullptr, nullptr));
  ASSERT_TRUE(req);
  EXPECT_EQ(EVP_PKEY_eq(X509_REQ_get0_pubkey(req.get()), X509_get0_pubkey(c.get())), 1);
}

TEST(PkiTest, SignCsrRejectsGarbageAndBadSignature) {
  auto ca = makeCa("strait-ca");
  ASSERT_TRUE(ca.ok());
  auto garbage = signCsr(*ca,
                         "-----BEGIN CERTIFICATE REQUEST-----\nAAAA\n"
                         "-----END CERTIFICATE REQUEST-----\n",
                         false);
  ASSERT_FALSE(garbage.ok());
  EXPECT_EQ(garbage.error().code, kube::Code::Invalid);
  EXPECT_FALSE(signCsr(*ca, "", false).ok());

  // Flip a byte inside the signature (the end of the DER): parsing succeeds, verify fails.
  std::string csr = makeCsr("bob", "devs", "");
  BioPtr bio(BIO_new_mem_buf(csr.data(), static_cast<int>(csr.size())));
  ReqPtr req(PEM_read_bio_X509_REQ(bio.get(), nullptr, nullptr, nullptr));
  ASSERT_TRUE(req);
  unsigned char* der = nullptr;
  int len = i2d_X509_REQ(req.get(), &der);
  ASSERT_GT(len, 10);
  der[len - 5] ^= 0x01;
  const unsigned char* p = der;
  ReqPtr tampered(d2i_X509_REQ(nullptr, &p, len));
  OPENSSL_free(der);
  ASSERT_TRUE(tampered);
  {
    BioPtr out(BIO_new(BIO_s_mem()));
    PEM_write_bio_X509_REQ(out.get(), tampered.get());
    char* data = nullptr;
    long n = BIO_get_mem_data(out.get(), &data);
    auto bad = signCsr(*ca, std::string(data, n), false);
    ASSERT_FALSE(bad.ok());
    EXPECT_EQ(bad.error().code, kube::Code::Invalid);
  }
}

std::string base64Decode(const std::string& in) {
  std::string out(in.size(), '\0');
  int n = EVP_DecodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                          reinterpret_cast<const unsigned char*>(in.data()),
                          static_cast<int>(in.size()));
  if (n < 0) return {};
  size_t pad = 0;
  while (pad < in.size() && in[in.size() - 1 - pad] == '=') ++pad;
  out.resize(static_cast<size_t>(n) - pad);
  return out;
}

TEST(PkiTest, KubeconfigRoundTripsWithMode0600) {
  auto ca = makeCa("strait-ca");
  ASSERT_TRUE(ca.ok());
  auto client = issueCert(*ca, "admin", {"system:masters"}, {}, {}, false);
  ASSERT_TRUE(client.ok());

  std::string dirTmpl = (std::filesystem::temp_directory_path() / "pki_test.XXXXXX").string();
  ASSERT_NE(::mkdtemp(dirTmpl.data()), nullptr);
  std::filesystem::path dir(dirTmpl);
  std::string path = (dir / "kubeconfig").string();

  ASSERT_TRUE(
      writeKubeconfig(path, "east", "https://127.0.0.1:6443", ca->certPem, "admin", *client).ok());
  // Overwriting an existing file works too (rename over it).
  auto st = writeKubeconfig(path, "east", "https://127.0.0.1:6443", ca->certPem, "admin", *client);
  ASSERT_TRUE(st.ok()) << st.error().message;

  struct stat sb {};
  ASSERT_EQ(::stat(path.c_str(), &sb), 0);
  EXPECT_EQ(sb.st_mode & 0777, 0600u);

  YAML::Node cfg = YAML::LoadFile(path);
  EXPECT_EQ(cfg["apiVersion"].as<std::string>(), "v1");
  EXPECT_EQ(cfg["kind"].as<std::string>(), "Config");
  EXPECT_EQ(cfg["current-context"].as<std::string>(), "east");
  ASSERT_EQ(cfg["clusters"].size(), 1u);
  EXPECT_EQ(cfg["clusters"][0]["name"].as<std::string>(), "east");
  EXPECT_EQ(cfg["clusters"][0]["cluster"]["server"].as<std::string>(), "https://127.0.0.1:6443");
  EXPECT_EQ(
      base64Decode(cfg["clusters"][0]["cluster"]["certificate-authority-data"].as<std::string>()),
      ca->certPem);
  ASSERT_EQ(cfg["users"].size(), 1u);
  EXPECT_EQ(cfg["users"][0]["name"].as<std::string>(), "admin");
  EXPECT_EQ(base64Decode(cfg["users"][0]["user"]["client-certificate-data"].as<std::string>()),
            client->certPem);
  EXPECT_EQ(base64Decode(cfg["users"][0]["user"]["client-key-data"].as<std::string>()),
            client->keyPem);
  ASSERT_EQ(cfg["contexts"].size(), 1u);
  EXPECT_EQ(cfg["contexts"][0]["name"].as<std::string>(), "east");
  EXPECT_EQ(cfg["contexts"][0]["context"]["cluster"].as<std::string>(), "east");
  EXPECT_EQ(cfg["contexts"][0]["context"]["user"].as<std::string>(), "admin");

  // No temp files left behind.
  int entries = 0;
  for ([[maybe_unused]] auto& e : std::filesystem::directory_iterator(dir)) ++entries;
  EXPECT_EQ(entries, 1);

  // A directory that does not exist gives an error, not a crash.
  EXPECT_FALSE(writeKubeconfig((dir / "missing" / "kc").string(), "east", "https://x", ca->certPem,
                               "admin", *client)
                   .ok());
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace strait::kube

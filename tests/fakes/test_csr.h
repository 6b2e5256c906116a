#pragma once
// Test helpers for certificate requests (OpenSSL): a PEM CSR with a fresh P-256 key, and a
// check that a PEM certificate chains to a CA for a purpose. Header-only; any thread.

#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509_vfy.h>
#include <openssl/x509v3.h>

#include <memory>
#include <string>

namespace strait::testing {

// CSR with subject O=org (if not empty), CN=cn and subjectAltName `san` in OpenSSL syntax
// ("DNS:a,IP:10.0.0.1"; empty for none).
inline std::string makeTestCsr(const std::string& cn, const std::string& org,
                               const std::string& san) {
  std::unique_ptr<EVP_PKEY, decltype(&EVP_PKEY_free)> key(EVP_EC_gen("P-256"), EVP_PKEY_free);
  std::unique_ptr<X509_REQ, decltype(&X509_REQ_free)> req(X509_REQ_new(), X509_REQ_free);
  X509_NAME* name = X509_REQ_get_subject_name(req.get());
  if (!org.empty()) {
    X509_NAME_add_entry_by_txt(name, "O", MBSTRING_ASC,
                               reinterpret_cast<const unsigned char*>(org.c_str()), -1, -1, 0);
  }
  X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC,
                             reinterpret_cast<const unsigned char*>(cn.c_str()), -1, -1, 0);
  X509_REQ_set_pubkey(req.get(), key.get());
  if (!san.empty()) {
    STACK_OF(X509_EXTENSION)* exts = sk_X509_EXTENSION_new_null();
    sk_X509_EXTENSION_push(exts,
                           X509V3_EXT_conf_nid(nullptr, nullptr, NID_subject_alt_name, san.c_str()));
    X509_REQ_add_extensions(req.get(), exts);
    sk_X509_EXTENSION_pop_free(exts, X509_EXTENSION_free);
  }
  X509_REQ_sign(req.get(), key.get(), EVP_sha256());
  std::unique_ptr<BIO, decltype(&BIO_free)> bio(BIO_new(BIO_s_mem()), BIO_free);
  PEM_write_bio_X509_REQ(bio.get(), req.get());
  char* data = nullptr;
  long n = BIO_get_mem_data(bio.get(), &data);
  return std::string(data, n);
}

// X509_V_OK when `certPem` verifies against `caPem` for `purpose` (X509_PURPOSE_SSL_SERVER,
// X509_PURPOSE_SSL_CLIENT); another X509_V_ERR_* otherwise; -1 if a PEM does not parse.
// *secondsValid gets notAfter - notBefore when not null.
inline int verifyTestCert(const std::string& caPem, const std::string& certPem, int purpose,
                          long* secondsValid = nullptr) {
  auto parse = [](const std::string& pem) {
    std::unique_ptr<BIO, decltype(&BIO_free)> b(BIO_new_mem_buf(pem.data(), (int)pem.size()),
                                                BIO_free);
    return std::unique_ptr<X509, decltype(&X509_free)>(
        PEM_read_bio_X509(b.get(), nullptr, nullptr, nullptr), X509_free);
  };
  auto ca = parse(caPem);
  auto cert = parse(certPem);
  if (!ca || !cert) return -1;
  if (secondsValid) {
    int days = 0, secs = 0;
    ASN1_TIME_diff(&days, &secs, X509_get0_notBefore(cert.get()), X509_get0_notAfter(cert.get()));
    *secondsValid = days * 86400L + secs;
  }
  std::unique_ptr<X509_STORE, decltype(&X509_STORE_free)> store(X509_STORE_new(), X509_STORE_free);
  X509_STORE_add_cert(store.get(), ca.get());
  std::unique_ptr<X509_STORE_CTX, decltype(&X509_STORE_CTX_free)> ctx(X509_STORE_CTX_new(),
                                                                      X509_STORE_CTX_free);
  X509_STORE_CTX_init(ctx.get(), store.get(), cert.get(), nullptr);
  X509_STORE_CTX_set_purpose(ctx.get(), purpose);
  if (X509_verify_cert(ctx.get()) == 1) return X509_V_OK;
  return X509_STORE_CTX_get_error(ctx.get());
}

}  // namespace strait::testing

// Certificate authority helpers (minicluster CA, peering identities), on OpenSSL 3 EVP/X509 APIs.
//
// Every OpenSSL object lives in a unique_ptr with its free function as deleter; every OpenSSL
// failure becomes a kube::Error carrying the OpenSSL error queue as text. Private keys pass
// through secure-memory BIOs and are wiped from temporary buffers.

#include "kube/pki.h"

#include "kube/base64.h"

#include <fcntl.h>
#include <openssl/bio.h>
#include <openssl/bn.h>
#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>
#include <arpa/inet.h>
#include <sys/stat.h>
#include <unistd.h>
#include <yaml-cpp/yaml.h>

#include <chrono>
#include <cerrno>
#include <ctime>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

namespace strait::kube {
namespace {

using kube::Code;
using kube::Error;
using kube::Result;
using kube::Status;

// --- RAII wrappers -------------------------------------------------------------------------

template <auto FreeFn>
struct OsslDeleter {
  template <class T>
  void operator()(T* p) const {
    FreeFn(p);
  }
};
using BioPtr = std::unique_ptr<BIO, OsslDeleter<BIO_free_all>>;
using PKeyPtr = std::unique_ptr<EVP_PKEY, OsslDeleter<EVP_PKEY_free>>;
using X509Ptr = std::unique_ptr<X509, OsslDeleter<X509_free>>;
using ReqPtr = std::unique_ptr<X509_REQ, OsslDeleter<X509_REQ_free>>;
using NamePtr = std::unique_ptr<X509_NAME, OsslDeleter<X509_NAME_free>>;
using ExtPtr = std::unique_ptr<X509_EXTENSION, OsslDeleter<X509_EXTENSION_free>>;
using BnPtr = std::unique_ptr<BIGNUM, OsslDeleter<BN_free>>;
using GenNamesPtr = std::unique_ptr<GENERAL_NAMES, OsslDeleter<GENERAL_NAMES_free>>;
using GenNamePtr = std::unique_ptr<GENERAL_NAME, OsslDeleter<GENERAL_NAME_free>>;
using OctetPtr = std::unique_ptr<ASN1_OCTET_STRING, OsslDeleter<ASN1_OCTET_STRING_free>>;
using Ia5Ptr = std::unique_ptr<ASN1_IA5STRING, OsslDeleter<ASN1_IA5STRING_free>>;

void freeExtStack(STACK_OF(X509_EXTENSION) * s) {
  sk_X509_EXTENSION_pop_free(s, X509_EXTENSION_free);
}
using ExtStackPtr = std::unique_ptr<STACK_OF(X509_EXTENSION), OsslDeleter<freeExtStack>>;

// A std::string that wipes its contents when it goes away (for private key PEM).
struct WipedString {
  std::string s;
  ~WipedString() {
    if (!s.empty()) OPENSSL_cleanse(s.data(), s.size());
  }
};

// --- errors -----------------------------------------------------------------------------------

// Drains the OpenSSL error queue into one string.
std::string drainOpensslErrors() {
  std::string out;
  while (unsigned long e = ERR_get_error()) {
    char buf[256];
    ERR_error_string_n(e, buf, sizeof(buf));
    if (!out.empty()) out += "; ";
    out += buf;
  }
  return out.empty() ? "no OpenSSL error detail" : out;
}

Error sslError(const std::string& what, Code code = Code::Internal) {
  return kube::makeError(code, "pki: " + what + ": " + drainOpensslErrors());
}

// --- PEM in/out -------------------------------------------------------------------------------

std::string bioToString(BIO* bio) {
  char* data = nullptr;
  long n = BIO_get_mem_data(bio, &data);
  return n > 0 ? std::string(data, static_cast<size_t>(n)) : std::string();
}

BioPtr memReader(const std::string& pem) {
  return BioPtr(BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())));
}

Result<std::string> certToPem(X509* cert) {
  BioPtr bio(BIO_new(BIO_s_mem()));
  if (!bio || PEM_write_bio_X509(bio.get(), cert) != 1) return sslError("writing certificate");
  return bioToString(bio.get());
}

Result<std::string> keyToPem(EVP_PKEY* key) {
  BioPtr bio(BIO_new(BIO_s_secmem()));
  if (!bio ||
      PEM_write_bio_PrivateKey(bio.get(), key, nullptr, nullptr, 0, nullptr, nullptr) != 1) {
    return sslError("writing private key");
  }
  return bioToString(bio.get());
}

Result<X509Ptr> certFromPem(const std::string& pem, const char* what) {
  BioPtr bio = memReader(pem);
  X509Ptr cert(bio ? PEM_read_bio_X509(bio.get(), nullptr, nullptr, nullptr) : nullptr);
  if (!cert) {
    std::string msg = "reading ";
    msg.append(what).append(" certificate");
    return sslError(msg, Code::Invalid);
  }
  return cert;
}

Result<PKeyPtr> keyFromPem(const std::string& pem, const char* what) {
  BioPtr bio = memReader(pem);
  PKeyPtr key(bio ? PEM_read_bio_PrivateKey(bio.get(), nullptr, nullptr, nullptr) : nullptr);
  if (!key) {
    std::string msg = "reading ";
    msg.append(what).append(" private key");
    return sslError(msg, Code::Invalid);
  }
  return key;
}

// --- certificate building ---------------------------------------------------------------------

Result<PKeyPtr> newEcKey() {
  PKeyPtr key(EVP_EC_gen("P-256"));
  if (!key) return sslError("generating EC P-256 key");
  return key;
}

// A random positive 128-bit serial number.
Status setRandomSerial(X509* cert) {
  unsigned char bytes[16];
  if (RAND_bytes(bytes, sizeof(bytes)) != 1) return sslError("random serial");
  bytes[0] &= 0x7f;  // positive
  bytes[0] |= 0x40;  // and full length, so it encodes in 16 bytes
  BnPtr bn(BN_bin2bn(bytes, sizeof(bytes), nullptr));
  if (!bn || !BN_to_ASN1_INTEGER(bn.get(), X509_get_serialNumber(cert))) {
    return sslError("setting serial");
  }
  return Status::OK();
}

// A v3 certificate with serial, validity (from now-5min to now+seconds), subject and public key.
Result<X509Ptr> newCertSeconds(const X509_NAME* subject, EVP_PKEY* publicKey, long seconds) {
  if (seconds <= 0) return kube::makeError(Code::Invalid, "pki: validity must be positive");
  X509Ptr cert(X509_new());
  if (!cert || X509_set_version(cert.get(), 2) != 1) return sslError("creating certificate");
  if (Status s = setRandomSerial(cert.get()); !s.ok()) return s.error();
  if (!X509_gmtime_adj(X509_getm_notBefore(cert.get()), -5 * 60) ||
      !X509_time_adj_ex(X509_getm_notAfter(cert.get()), static_cast<int>(seconds / 86400),
                        seconds % 86400, nullptr)) {
    return sslError("setting validity");
  }
  if (X509_set_subject_name(cert.get(), subject) != 1 ||
      X509_set_pubkey(cert.get(), publicKey) != 1) {
    return sslError("setting subject");
  }
  return cert;
}

Result<X509Ptr> newCert(const X509_NAME* subject, EVP_PKEY* publicKey, int days) {
  if (days <= 0) return kube::makeError(Code::Invalid, "pki: validity days must be positive");
  return newCertSeconds(subject, publicKey, static_cast<long>(days) * 86400);
}

// Adds an extension given in OpenSSL config syntax ("critical,CA:TRUE"). `issuer` is the
// signing certificate (the certificate itself when self-signed).
Status addExt(X509* cert, X509* issuer, int nid, const char* value) {
  X509V3_CTX ctx;
  X509V3_set_ctx_nodb(&ctx);
  X509V3_set_ctx(&ctx, issuer, cert, nullptr, nullptr, 0);
  ExtPtr ext(X509V3_EXT_conf_nid(nullptr, &ctx, nid, value));
  if (!ext || X509_add_ext(cert, ext.get(), -1) != 1) {
    return sslError(std::string("adding extension ") + OBJ_nid2sn(nid) + "=" + value);
  }
  return Status::OK();
}

Status addName(X509_NAME* name, const char* field, const std::string& value) {
  if (X509_NAME_add_entry_by_txt(name, field, MBSTRING_UTF8,
                                 reinterpret_cast<const unsigned char*>(value.data()),
                                 static_cast<int>(value.size()), -1, 0) != 1) {
    return sslError(std::string("adding subject ") + field + "=" + value, Code::Invalid);
  }
  return Status::OK();
}

// subjectAltName from DNS names and IP literals (IPv4 or IPv6); built as GENERAL_NAMEs rather
// than config text so names cannot smuggle in extra entries.
Result<GenNamesPtr> makeSans(const std::vector<std::string>& dnsNames,
                             const std::vector<std::string>& ips) {
  GenNamesPtr names(GENERAL_NAMES_new());
  if (!names) return sslError("allocating subjectAltName");
  for (const std::string& dns : dnsNames) {
    Ia5Ptr str(ASN1_IA5STRING_new());
    GenNamePtr gn(GENERAL_NAME_new());
    if (!str || !gn || ASN1_STRING_set(str.get(), dns.data(), static_cast<int>(dns.size())) != 1) {
      return sslError("adding DNS name " + dns);
    }
    GENERAL_NAME_set0_value(gn.get(), GEN_DNS, str.release());
    if (sk_GENERAL_NAME_push(names.get(), gn.get()) == 0) return sslError("adding DNS name");
    gn.release();
  }
  for (const std::string& ip : ips) {
    OctetPtr addr(a2i_IPADDRESS(ip.c_str()));
    if (!addr) {
      ERR_clear_error();
      return kube::makeError(Code::Invalid, "pki: not an IP address: \"" + ip + "\"");
    }
    GenNamePtr gn(GENERAL_NAME_new());
    if (!gn) return sslError("adding IP " + ip);
    GENERAL_NAME_set0_value(gn.get(), GEN_IPADD, addr.release());
    if (sk_GENERAL_NAME_push(names.get(), gn.get()) == 0) return sslError("adding IP");
    gn.release();
  }
  return names;
}

Status addSans(X509* cert, const std::vector<std::string>& dnsNames,
               const std::vector<std::string>& ips) {
  if (dnsNames.empty() && ips.empty()) return Status::OK();
  Result<GenNamesPtr> names = makeSans(dnsNames, ips);
  if (!names.ok()) return names.error();
  if (X509_add1_ext_i2d(cert, NID_subject_alt_name, names->get(), 0, X509V3_ADD_DEFAULT) != 1) {
    return sslError("adding subjectAltName");
  }
  return Status::OK();
}

// The extensions every leaf certificate carries: key usage, EKU, key identifiers.
Status addLeafExts(X509* cert, X509* caCert, bool server) {
  if (Status s = addExt(cert, caCert, NID_basic_constraints, "critical,CA:FALSE"); !s.ok()) {
    return s;
  }
  if (Status s = addExt(cert, caCert, NID_key_usage, "critical,digitalSignature,keyEncipherment");
      !s.ok()) {
    return s;
  }
  if (Status s = addExt(cert, caCert, NID_ext_key_usage, server ? "serverAuth" : "clientAuth");
      !s.ok()) {
    return s;
  }
  if (Status s = addExt(cert, caCert, NID_subject_key_identifier, "hash"); !s.ok()) return s;
  return addExt(cert, caCert, NID_authority_key_identifier, "keyid:always");
}

Status sign(X509* cert, EVP_PKEY* key) {
  if (X509_sign(cert, key, EVP_sha256()) <= 0) return sslError("signing certificate");
  return Status::OK();
}

struct LoadedCa {
  X509Ptr cert;
  PKeyPtr key;
};

Result<LoadedCa> loadCa(const KeyPair& ca) {
  Result<X509Ptr> cert = certFromPem(ca.certPem, "CA");
  if (!cert.ok()) return cert.error();
  Result<PKeyPtr> key = keyFromPem(ca.keyPem, "CA");
  if (!key.ok()) return key.error();
  if (X509_check_private_key(cert->get(), key->get()) != 1) {
    return sslError("CA key does not match CA certificate", Code::Invalid);
  }
  return LoadedCa{std::move(*cert), std::move(*key)};
}

// --- kubeconfig -------------------------------------------------------------------------------


Error fileError(const std::string& what, const std::string& path, int err) {
  return kube::makeError(Code::Internal,
                         "kubeconfig: " + what + " " + path + ": " + std::strerror(err));
}

}  // namespace

std::string opensslErrors() { return drainOpensslErrors(); }

Result<KeyPair> makeCa(const std::string& commonName, int days) {
  ERR_clear_error();
  Result<PKeyPtr> key = newEcKey();
  if (!key.ok()) return key.error();
  NamePtr name(X509_NAME_new());
  if (!name) return sslError("allocating name");
  if (Status s = addName(name.get(), "CN", commonName); !s.ok()) return s.error();
  Result<X509Ptr> cert = newCert(name.get(), key->get(), days);
  if (!cert.ok()) return cert.error();
  X509* c = cert->get();
  if (X509_set_issuer_name(c, name.get()) != 1) return sslError("setting issuer");
  for (auto [nid, value] :
       {std::pair{NID_basic_constraints, "critical,CA:TRUE"},
        std::pair{NID_key_usage, "critical,keyCertSign,cRLSign,digitalSignature"},
        std::pair{NID_subject_key_identifier, "hash"},
        std::pair{NID_authority_key_identifier, "keyid:always"}}) {
    if (Status s = addExt(c, c, nid, value); !s.ok()) return s.error();
  }
  if (Status s = sign(c, key->get()); !s.ok()) return s.error();
  Result<std::string> certPem = certToPem(c);
  if (!certPem.ok()) return certPem.error();
  Result<std::string> keyPem = keyToPem(key->get());
  if (!keyPem.ok()) return keyPem.error();
  return KeyPair{std::move(*certPem), std::move(*keyPem)};
}

Result<KeyPair> issueCert(const KeyPair& ca, const std::string& commonName,
                          const std::vector<std::string>& organizations,
                          const std::vector<std::string>& dnsNames,
                          const std::vector<std::string>& ips, bool server, int days) {
  ERR_clear_error();
  Result<LoadedCa> issuer = loadCa(ca);
  if (!issuer.ok()) return issuer.error();
  Result<PKeyPtr> key = newEcKey();
  if (!key.ok()) return key.error();
  NamePtr name(X509_NAME_new());
  if (!name) return sslError("allocating name");
  for (const std::string& o : organizations) {
    if (Status s = addName(name.get(), "O", o); !s.ok()) return s.error();
  }
  if (Status s = addName(name.get(), "CN", commonName); !s.ok()) return s.error();
  Result<X509Ptr> cert = newCert(name.get(), key->get(), days);
  if (!cert.ok()) return cert.error();
  X509* c = cert->get();
  if (X509_set_issuer_name(c, X509_get_subject_name(issuer->cert.get())) != 1) {
    return sslError("setting issuer");
  }
  if (Status s = addLeafExts(c, issuer->cert.get(), server); !s.ok()) return s.error();
  if (Status s = addSans(c, dnsNames, ips); !s.ok()) return s.error();
  if (Status s = sign(c, issuer->key.get()); !s.ok()) return s.error();
  Result<std::string> certPem = certToPem(c);
  if (!certPem.ok()) return certPem.error();
  Result<std::string> keyPem = keyToPem(key->get());
  if (!keyPem.ok()) return keyPem.error();
  return KeyPair{std::move(*certPem), std::move(*keyPem)};
}

Result<std::string> signCsr(const KeyPair& ca, const std::string& csrPem, bool server, int days) {
  if (days <= 0) return kube::makeError(Code::Invalid, "pki: validity days must be positive");
  return signCsrFor(ca, csrPem, server, std::chrono::seconds(static_cast<long>(days) * 86400));
}

namespace {
// A PEM CSR whose self-signature verifies.
Result<ReqPtr> loadCsr(const std::string& csrPem) {
  ERR_clear_error();
  BioPtr bio = memReader(csrPem);
  ReqPtr req(bio ? PEM_read_bio_X509_REQ(bio.get(), nullptr, nullptr, nullptr) : nullptr);
  if (!req) return sslError("CSR is not a PEM certificate request", Code::Invalid);
  EVP_PKEY* csrKey = X509_REQ_get0_pubkey(req.get());
  if (!csrKey) return sslError("CSR has no usable public key", Code::Invalid);
  if (X509_REQ_verify(req.get(), csrKey) != 1) {
    return sslError("CSR signature does not verify", Code::Invalid);
  }
  return req;
}

// The CSR's subjectAltName extension, parsed (re-encoding through the parsed form rejects a
// malformed SAN instead of copying it); null when the CSR has none.
Result<GenNamesPtr> csrSans(X509_REQ* req) {
  ExtStackPtr exts(X509_REQ_get_extensions(req));
  for (int i = 0; exts && i < sk_X509_EXTENSION_num(exts.get()); ++i) {
    X509_EXTENSION* ext = sk_X509_EXTENSION_value(exts.get(), i);
    if (OBJ_obj2nid(X509_EXTENSION_get_object(ext)) != NID_subject_alt_name) continue;
    GenNamesPtr names(static_cast<GENERAL_NAMES*>(X509V3_EXT_d2i(ext)));
    if (!names) return sslError("CSR subjectAltName is malformed", Code::Invalid);
    return names;
  }
  return GenNamesPtr();
}
}  // namespace

Result<CsrInfo> parseCsr(const std::string& csrPem) {
  Result<ReqPtr> loaded = loadCsr(csrPem);
  if (!loaded.ok()) return loaded.error();
  const ReqPtr& req = *loaded;
  CsrInfo info;
  const X509_NAME* subject = X509_REQ_get_subject_name(req.get());
  for (int i = 0; subject && i < X509_NAME_entry_count(subject); ++i) {
    const X509_NAME_ENTRY* e = X509_NAME_get_entry(subject, i);
    int nid = OBJ_obj2nid(X509_NAME_ENTRY_get_object(e));
    const ASN1_STRING* data = X509_NAME_ENTRY_get_data(e);
    std::string value(reinterpret_cast<const char*>(ASN1_STRING_get0_data(data)),
                      static_cast<size_t>(ASN1_STRING_length(data)));
    if (nid == NID_commonName) info.commonName = value;
    if (nid == NID_organizationName) info.organizations.push_back(value);
  }
  Result<GenNamesPtr> names = csrSans(req.get());
  if (!names.ok()) return names.error();
  for (int j = 0; *names && j < sk_GENERAL_NAME_num(names->get()); ++j) {
    const GENERAL_NAME* gn = sk_GENERAL_NAME_value(names->get(), j);
    if (gn->type == GEN_DNS) {
      const ASN1_STRING* d = gn->d.dNSName;
      info.dnsNames.emplace_back(reinterpret_cast<const char*>(ASN1_STRING_get0_data(d)),
                                 static_cast<size_t>(ASN1_STRING_length(d)));
    } else if (gn->type == GEN_IPADD) {
      const ASN1_OCTET_STRING* ip = gn->d.iPAddress;
      char buf[64] = {0};
      int af = ASN1_STRING_length(ip) == 4 ? AF_INET : AF_INET6;
      if (inet_ntop(af, ASN1_STRING_get0_data(ip), buf, sizeof(buf))) info.ips.push_back(buf);
    } else {
      info.otherSans = true;
    }
  }
  return info;
}

Result<std::string> signCsrFor(const KeyPair& ca, const std::string& csrPem, bool server,
                               std::chrono::seconds validity) {
  Result<ReqPtr> loaded = loadCsr(csrPem);
  if (!loaded.ok()) return loaded.error();
  const ReqPtr& req = *loaded;
  EVP_PKEY* csrKey = X509_REQ_get0_pubkey(req.get());
  Result<LoadedCa> issuer = loadCa(ca);
  if (!issuer.ok()) return issuer.error();
  Result<X509Ptr> cert =
      newCertSeconds(X509_REQ_get_subject_name(req.get()), csrKey, validity.count());
  if (!cert.ok()) return cert.error();
  X509* c = cert->get();
  if (X509_set_issuer_name(c, X509_get_subject_name(issuer->cert.get())) != 1) {
    return sslError("setting issuer");
  }
  if (Status s = addLeafExts(c, issuer->cert.get(), server); !s.ok()) return s.error();
  if (server) {
    Result<GenNamesPtr> names = csrSans(req.get());
    if (!names.ok()) return names.error();
    if (*names &&
        X509_add1_ext_i2d(c, NID_subject_alt_name, names->get(), 0, X509V3_ADD_DEFAULT) != 1) {
      return sslError("copying subjectAltName");
    }
  }
  if (Status s = sign(c, issuer->key.get()); !s.ok()) return s.error();
  return certToPem(c);
}

Result<KeyAndCsr> makeKeyAndCsr(const std::string& commonName,
                                const std::vector<std::string>& organizations,
                                const std::vector<std::string>& dnsNames,
                                const std::vector<std::string>& ips) {
  ERR_clear_error();
  Result<PKeyPtr> key = newEcKey();
  if (!key.ok()) return key.error();
  ReqPtr req(X509_REQ_new());
  NamePtr name(X509_NAME_new());
  if (!req || !name) return sslError("allocating CSR");
  for (const std::string& o : organizations) {
    if (Status s = addName(name.get(), "O", o); !s.ok()) return s.error();
  }
  if (Status s = addName(name.get(), "CN", commonName); !s.ok()) return s.error();
  if (X509_REQ_set_version(req.get(), 0) != 1 || X509_REQ_set_subject_name(req.get(), name.get()) != 1 ||
      X509_REQ_set_pubkey(req.get(), key->get()) != 1) {
    return sslError("building CSR");
  }
  if (!dnsNames.empty() || !ips.empty()) {
    Result<GenNamesPtr> sans = makeSans(dnsNames, ips);
    if (!sans.ok()) return sans.error();
    X509_EXTENSION* ext = X509V3_EXT_i2d(NID_subject_alt_name, 0, sans->get());
    STACK_OF(X509_EXTENSION)* exts = sk_X509_EXTENSION_new_null();
    bool ok = ext && exts && sk_X509_EXTENSION_push(exts, ext) != 0;
    if (ok) ext = nullptr;  // owned by exts now
    ok = ok && X509_REQ_add_extensions(req.get(), exts) == 1;
    X509_EXTENSION_free(ext);
    sk_X509_EXTENSION_pop_free(exts, X509_EXTENSION_free);
    if (!ok) return sslError("adding subjectAltName to CSR");
  }
  if (X509_REQ_sign(req.get(), key->get(), EVP_sha256()) <= 0) return sslError("signing CSR");
  BioPtr bio(BIO_new(BIO_s_mem()));
  if (!bio || PEM_write_bio_X509_REQ(bio.get(), req.get()) != 1) return sslError("writing CSR");
  Result<std::string> keyPem = keyToPem(key->get());
  if (!keyPem.ok()) return keyPem.error();
  return KeyAndCsr{std::move(*keyPem), bioToString(bio.get())};
}

namespace {
std::chrono::system_clock::time_point asn1Time(const ASN1_TIME* t) {
  struct tm tm {};
  if (!t || ASN1_TIME_to_tm(t, &tm) != 1) return {};
  return std::chrono::system_clock::from_time_t(timegm(&tm));
}

std::string nameEntry(const X509_NAME* name, int nid) {
  int idx = X509_NAME_get_index_by_NID(name, nid, -1);
  if (idx < 0) return {};
  ASN1_STRING* data = X509_NAME_ENTRY_get_data(X509_NAME_get_entry(name, idx));
  unsigned char* utf8 = nullptr;
  int n = ASN1_STRING_to_UTF8(&utf8, data);
  if (n < 0) return {};
  std::string out(reinterpret_cast<char*>(utf8), static_cast<size_t>(n));
  OPENSSL_free(utf8);
  return out;
}
}  // namespace

Result<CertificateInfo> certificateInfo(const std::string& certPem) {
  ERR_clear_error();
  Result<X509Ptr> cert = certFromPem(certPem, "the");
  if (!cert.ok()) return cert.error();
  CertificateInfo info;
  info.commonName = nameEntry(X509_get_subject_name(cert->get()), NID_commonName);
  info.issuerCommonName = nameEntry(X509_get_issuer_name(cert->get()), NID_commonName);
  info.notBefore = asn1Time(X509_get0_notBefore(cert->get()));
  info.notAfter = asn1Time(X509_get0_notAfter(cert->get()));
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int mdLen = 0;
  if (X509_digest(cert->get(), EVP_sha256(), md, &mdLen) != 1) return sslError("fingerprint");
  static const char* hex = "0123456789abcdef";
  for (unsigned int i = 0; i < mdLen; ++i) {
    info.sha256Fingerprint += hex[md[i] >> 4];
    info.sha256Fingerprint += hex[md[i] & 15];
  }
  return info;
}

Status verifyIssuedBy(const std::string& caPem, const std::string& certPem) {
  ERR_clear_error();
  Result<X509Ptr> ca = certFromPem(caPem, "CA");
  if (!ca.ok()) return ca.error();
  Result<X509Ptr> cert = certFromPem(certPem, "leaf");
  if (!cert.ok()) return cert.error();
  EVP_PKEY* caKey = X509_get0_pubkey(ca->get());
  if (!caKey || X509_verify(cert->get(), caKey) != 1) {
    ERR_clear_error();
    return kube::makeError(Code::Unauthorized, "pki: certificate is not signed by this CA");
  }
  return Status::OK();
}

Status writeKubeconfig(const std::string& path, const std::string& clusterName,
                       const std::string& serverUrl, const std::string& caPem,
                       const std::string& userName, const KeyPair& client) {
  WipedString keyData{base64Encode(client.keyPem)};
  YAML::Emitter out;
  out << YAML::BeginMap;
  out << YAML::Key << "apiVersion" << YAML::Value << "v1";
  out << YAML::Key << "kind" << YAML::Value << "Config";
  out << YAML::Key << "clusters" << YAML::Value << YAML::BeginSeq << YAML::BeginMap;
  out << YAML::Key << "name" << YAML::Value << clusterName;
  out << YAML::Key << "cluster" << YAML::Value << YAML::BeginMap;
  out << YAML::Key << "server" << YAML::Value << serverUrl;
  out << YAML::Key << "certificate-authority-data" << YAML::Value << base64Encode(caPem);
  out << YAML::EndMap << YAML::EndMap << YAML::EndSeq;
  out << YAML::Key << "users" << YAML::Value << YAML::BeginSeq << YAML::BeginMap;
  out << YAML::Key << "name" << YAML::Value << userName;
  out << YAML::Key << "user" << YAML::Value << YAML::BeginMap;
  out << YAML::Key << "client-certificate-data" << YAML::Value << base64Encode(client.certPem);
  out << YAML::Key << "client-key-data" << YAML::Value << keyData.s;
  out << YAML::EndMap << YAML::EndMap << YAML::EndSeq;
  out << YAML::Key << "contexts" << YAML::Value << YAML::BeginSeq << YAML::BeginMap;
  out << YAML::Key << "name" << YAML::Value << clusterName;
  out << YAML::Key << "context" << YAML::Value << YAML::BeginMap;
  out << YAML::Key << "cluster" << YAML::Value << clusterName;
  out << YAML::Key << "user" << YAML::Value << userName;
  out << YAML::EndMap << YAML::EndMap << YAML::EndSeq;
  out << YAML::Key << "current-context" << YAML::Value << clusterName;
  out << YAML::EndMap;
  if (!out.good()) {
    return kube::makeError(Code::Internal, "kubeconfig: YAML emit failed: " + out.GetLastError());
  }
  WipedString text{std::string(out.c_str(), out.size())};
  text.s += '\n';

  // Write beside the target with mode 0600, then rename: a reader sees nothing or all.
  std::string tmpl = path + ".tmp.XXXXXX";
  int fd = ::mkstemp(tmpl.data());  // creates with mode 0600
  if (fd < 0) return fileError("creating temp file for", path, errno);
  auto fail = [&](const char* what) {
    int err = errno;
    ::close(fd);
    ::unlink(tmpl.c_str());
    return fileError(what, tmpl, err);
  };
  if (::fchmod(fd, 0600) != 0) return fail("chmod");
  size_t done = 0;
  while (done < text.s.size()) {
    ssize_t n = ::write(fd, text.s.data() + done, text.s.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return fail("writing");
    done += static_cast<size_t>(n);
  }
  if (::fsync(fd) != 0) return fail("syncing");
  if (::close(fd) != 0) {
    int err = errno;
    ::unlink(tmpl.c_str());
    return fileError("closing", tmpl, err);
  }
  if (::rename(tmpl.c_str(), path.c_str()) != 0) {
    int err = errno;
    ::unlink(tmpl.c_str());
    return fileError("renaming temp file to", path, err);
  }
  return Status::OK();
}

}  // namespace strait::kube

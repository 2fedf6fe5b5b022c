#pragma once
// A private CA and a server certificate it signed, made in memory with OpenSSL (EC P-256, one
// day), for TLS tests that must not depend on the system's trust store.
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <string>

namespace toolbridge::testing {

struct Certificates {
  std::string ca_pem;      // the CA's certificate (what a client trusts)
  std::string server_pem;  // the server's certificate
  std::string key_pem;     // the server's private key
};

namespace detail {
using Key = std::unique_ptr<EVP_PKEY, decltype(&EVP_PKEY_free)>;
using Cert = std::unique_ptr<X509, decltype(&X509_free)>;

inline std::string to_pem(X509* cert) {
  BIO* bio = BIO_new(BIO_s_mem());
  PEM_write_bio_X509(bio, cert);
  char* data = nullptr;
  const long n = BIO_get_mem_data(bio, &data);
  std::string out(data, static_cast<std::size_t>(n));
  BIO_free(bio);
  return out;
}

inline std::string to_pem(EVP_PKEY* key) {
  BIO* bio = BIO_new(BIO_s_mem());
  PEM_write_bio_PrivateKey(bio, key, nullptr, nullptr, 0, nullptr, nullptr);
  char* data = nullptr;
  const long n = BIO_get_mem_data(bio, &data);
  std::string out(data, static_cast<std::size_t>(n));
  BIO_free(bio);
  return out;
}

inline void add_ext(X509* cert, X509* issuer, int nid, const char* value) {
  X509V3_CTX ctx;
  X509V3_set_ctx(&ctx, issuer, cert, nullptr, nullptr, 0);
  X509_EXTENSION* ext = X509V3_EXT_conf_nid(nullptr, &ctx, nid, value);
  X509_add_ext(cert, ext, -1);
  X509_EXTENSION_free(ext);
}

inline Cert make_cert(EVP_PKEY* key, const char* cn, long serial, X509* issuer,
                      EVP_PKEY* issuer_key, const char* alt_names) {
  Cert cert(X509_new(), &X509_free);
  X509_set_version(cert.get(), 2);
  ASN1_INTEGER_set(X509_get_serialNumber(cert.get()), serial);
  X509_gmtime_adj(X509_getm_notBefore(cert.get()), -3600);
  X509_gmtime_adj(X509_getm_notAfter(cert.get()), 24 * 3600);
  X509_set_pubkey(cert.get(), key);
  X509_NAME* name = X509_get_subject_name(cert.get());
  X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC, reinterpret_cast<const unsigned char*>(cn),
                             -1, -1, 0);
  X509* signer = issuer ? issuer : cert.get();
  X509_set_issuer_name(cert.get(), X509_get_subject_name(signer));
  if (alt_names) {
    add_ext(cert.get(), signer, NID_subject_alt_name, alt_names);
  } else {
    add_ext(cert.get(), signer, NID_basic_constraints, "critical,CA:TRUE");
    add_ext(cert.get(), signer, NID_key_usage, "critical,keyCertSign,cRLSign");
  }
  X509_sign(cert.get(), issuer_key ? issuer_key : key, EVP_sha256());
  return cert;
}
}  // namespace detail

// `alt_names` as in openssl's subjectAltName, e.g. "IP:127.0.0.1".
inline Certificates make_certificates(const char* alt_names) {
  detail::Key ca_key(EVP_EC_gen("P-256"), &EVP_PKEY_free);
  detail::Key server_key(EVP_EC_gen("P-256"), &EVP_PKEY_free);
  auto ca = detail::make_cert(ca_key.get(), "toolbridge test CA", 1, nullptr, nullptr, nullptr);
  auto server = detail::make_cert(server_key.get(), "toolbridge test server", 2, ca.get(),
                                  ca_key.get(), alt_names);
  return {detail::to_pem(ca.get()), detail::to_pem(server.get()), detail::to_pem(server_key.get())};
}

// Writes `text` to a new file under /tmp and returns its path.
inline std::string write_temp_file(const std::string& text) {
  char path[] = "/tmp/toolbridge-test-XXXXXX";
  const int fd = mkstemp(path);
  if (fd >= 0) ::close(fd);
  std::ofstream(path) << text;
  return path;
}

}  // namespace toolbridge::testing

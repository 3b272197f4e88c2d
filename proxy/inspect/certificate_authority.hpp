// The gate's own certificate authority, for inspection: made with OpenSSL on first use (an EC
// P-256 key and a self-signed CA certificate valid for a year, in a folder of mode 0700 with the
// key at mode 0600), and the leaf certificates it mints for inspected hosts.
//
// Leaves are short-lived (valid from an hour ago to a day ahead, re-minted when less than an
// hour is left), carry exactly the host as their subject alternative name (a DNS name, or an IP
// address), are for server authentication only, and share one P-256 key made when the gate
// starts (minting is then one signature). They are kept in a bounded cache, oldest use evicted.
//
// The key never leaves this process and its folder: `sandgate run` hides the folder from the
// confined command. Rotation (`sandgate ca --rotate`) writes a new key and certificate; a running
// gate keeps the one it loaded until it restarts.
//
// Thread-safe: every worker mints through one CertificateAuthority.
#pragma once

#include <openssl/types.h>

#include <chrono>
#include <cstddef>
#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>

#include "rules/expected.hpp"
#include "rules/host.hpp"

namespace sandgate::inspect {

// The files of a CA folder.
struct CaPaths {
  std::string folder;
  std::string certificate;  // ca.pem: what clients trust
  std::string key;          // ca-key.pem: mode 0600
};
CaPaths ca_paths(const std::string& folder);

// A leaf certificate and the key it certifies, for one host.
struct Leaf {
  std::shared_ptr<X509> certificate;
  std::shared_ptr<EVP_PKEY> key;
  std::chrono::system_clock::time_point not_after;
};

class CertificateAuthority {
 public:
  static constexpr std::size_t kDefaultCacheSize = 1024;

  // Loads the CA in `folder`, creating the folder, key and certificate when there is none.
  // Refuses a key file that others can read, or a folder that others can write. The error
  // names the file and what is wrong.
  static Expected<std::unique_ptr<CertificateAuthority>, std::string> open(
      const std::string& folder, std::size_t cache_size = kDefaultCacheSize);
  // Writes a new key and certificate in `folder` (the old ones are replaced atomically).
  static Expected<CaPaths, std::string> rotate(const std::string& folder);

  ~CertificateAuthority();
  CertificateAuthority(const CertificateAuthority&) = delete;
  CertificateAuthority& operator=(const CertificateAuthority&) = delete;

  // The leaf for `host` (its normal form), minted or from the cache. Fails only when OpenSSL
  // does (out of memory).
  Expected<std::shared_ptr<const Leaf>, std::string> leaf_for(const rules::Host& host);

  X509* certificate() const { return certificate_.get(); }
  const CaPaths& paths() const { return paths_; }
  std::string subject() const;  // "CN=sandgate inspection CA (...)"
  std::size_t cached() const;

 private:
  CertificateAuthority(CaPaths paths, std::shared_ptr<X509> certificate,
                       std::shared_ptr<EVP_PKEY> key, std::shared_ptr<EVP_PKEY> leaf_key,
                       std::size_t cache_size);
  Expected<std::shared_ptr<const Leaf>, std::string> mint(const rules::Host& host);

  CaPaths paths_;
  std::shared_ptr<X509> certificate_;
  std::shared_ptr<EVP_PKEY> key_;
  std::shared_ptr<EVP_PKEY> leaf_key_;
  std::size_t cache_size_;

  mutable std::mutex mutex_;
  // Most recently used first; the map points into the list.
  std::list<std::pair<std::string, std::shared_ptr<const Leaf>>> recent_;
  std::unordered_map<std::string, decltype(recent_)::iterator> index_;
};

// Writes `FOLDER-bundle.pem` beside the CA's folder (which `run` hides from the command): the
// system's roots (SSL_CERT_FILE, else OpenSSL's default file; none when neither can be read)
// followed by the CA's certificate, for the tools that trust exactly one file. Its path.
Expected<std::string, std::string> write_trust_bundle(const CertificateAuthority& ca);

// Writes the certificates of the PEM file `bundle` as a PKCS12 trust store for Java
// (`javax.net.ssl.trustStore`, type PKCS12, password kJavaTrustStorePassword: it holds no
// secret) beside it, `NAME.p12` for `NAME.pem`. Java trusts a PKCS12 certificate only when its
// bag carries Oracle's trusted-key-usage attribute, which `keytool -importcert` sets and OpenSSL
// 3.0's command line cannot; it is set here on each. Its path.
Expected<std::string, std::string> write_java_trust_store(const std::string& bundle);
inline constexpr const char* kJavaTrustStorePassword = "changeit";

// The folder the CA lives in by default: $XDG_DATA_HOME/sandgate/ca, or
// ~/.local/share/sandgate/ca.
std::string default_ca_folder(const std::string& home);

}  // namespace sandgate::inspect

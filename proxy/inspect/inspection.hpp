// What an inspected connection needs from the gate, made once and shared by every worker: the
// TLS context that faces clients (the gate's leaf certificates, HTTP/1.1 only), the TLS context
// that faces origins (the system's roots plus --inspect-extra-ca, peer verification, HTTP/1.1
// only), and the certificate authority, opened (and made, the first time) when the first
// connection is inspected, so a gate that never inspects never writes a key.
//
// Both contexts refuse renegotiation and anything older than TLS 1.2. Thread-safe.
#pragma once

#include <openssl/types.h>

#include <boost/asio/ssl/context.hpp>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "proxy/inspect/certificate_authority.hpp"
#include "rules/expected.hpp"
#include "rules/host.hpp"

namespace sandgate::inspect {

class Inspection {
 public:
  // `extra_ca_files`: PEM files of certificates origins may chain to besides the system's roots.
  // Fails, naming the file, when one cannot be read.
  static Expected<std::unique_ptr<Inspection>, std::string> create(
      std::string ca_folder, const std::vector<std::string>& extra_ca_files);

  boost::asio::ssl::context& client_facing() { return client_facing_; }
  boost::asio::ssl::context& origin_facing() { return origin_facing_; }

  // The CA, opened on first use. Thread-safe; a failure is kept and returned again.
  Expected<CertificateAuthority*, std::string> authority();

  // Makes `ssl`, a client-facing SSL, present the leaf for `host` with the CA behind it.
  std::optional<std::string> present_leaf(SSL* ssl, const rules::Host& host);

  // Makes `ssl`, an origin-facing SSL, ask for `host` (SNI) and accept only a certificate
  // valid for it (its name or address), chaining to a trusted root.
  static void expect_origin(SSL* ssl, const rules::Host& host);

  const std::string& ca_folder() const { return ca_folder_; }

 private:
  Inspection(std::string ca_folder);

  std::string ca_folder_;
  boost::asio::ssl::context client_facing_;
  boost::asio::ssl::context origin_facing_;
  std::mutex mutex_;
  std::unique_ptr<CertificateAuthority> authority_;
  std::string authority_error_;
};

// The subject of a certificate, one line ("CN=example.com, O=...").
std::string subject_of(X509* certificate);

}  // namespace sandgate::inspect

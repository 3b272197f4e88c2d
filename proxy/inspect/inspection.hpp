// What an inspected connection needs from the gate, made once and shared by every worker: the
// TLS context that faces clients (the gate's leaf certificates), the TLS context that faces
// origins (the system's roots plus --inspect-extra-ca, peer verification); ALPN: HTTP/1.1, or
// h2 on both sides when the client offers it and the origin chooses it, and the certificate
// authority, opened (and made, the first time) when the first connection is inspected, so a gate
// that never inspects never writes a key.
//
// Both contexts refuse renegotiation and anything older than TLS 1.2. Thread-safe.
#pragma once

#include <openssl/types.h>

#include <boost/asio/ssl/context.hpp>
#include <chrono>
#include <cstdint>
#include <deque>
#include <map>
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
  ~Inspection();
  Inspection(const Inspection&) = delete;
  Inspection& operator=(const Inspection&) = delete;

  boost::asio::ssl::context& client_facing() { return client_facing_; }
  boost::asio::ssl::context& origin_facing() { return origin_facing_; }

  // The CA, opened on first use. Thread-safe; a failure is kept and returned again.
  Expected<CertificateAuthority*, std::string> authority();

  // Makes `ssl`, a client-facing SSL, present the leaf for `host` with the CA behind it.
  std::optional<std::string> present_leaf(SSL* ssl, const rules::Host& host);

  // Makes `ssl`, an origin-facing SSL, ask for `host` (SNI) and accept only a certificate
  // valid for it (its name or address), chaining to a trusted root; and offers the session last
  // made with host:port, if any, to resume.
  void expect_origin(SSL* ssl, const rules::Host& host, std::uint16_t port);
  // ALPN on an inspected connection follows the origin: an origin-facing `ssl` offers h2 (and
  // HTTP/1.1) only when the client offered h2 too (offer_origin_h2, before the handshake); when
  // the origin chose it (origin_chose_h2), the client-facing SSL answers h2
  // (answer_client_with_h2, before the client's handshake). Otherwise both sides speak HTTP/1.1:
  // no request is ever carried from one version to the other.
  static void offer_origin_h2(SSL* ssl);
  static bool origin_chose_h2(SSL* ssl);
  static void answer_client_with_h2(SSL* ssl);
  // A handshake with `ssl` failed: the session it offered is not offered again.
  void forget_origin_session(SSL* ssl);
  std::size_t origin_sessions() const;  // how many are kept
  // Keeps `session` (and the reference the caller held) as the one to offer to `key`
  // ("host:port"); OpenSSL's new-session callback calls it.
  void remember_origin_session(const std::string& key, SSL_SESSION* session);

  // The origin sessions kept, at most: one per host:port, the oldest dropped first.
  static constexpr std::size_t kOriginSessions = 1024;
  // The longest a session is resumed: past it, a full handshake verifies the origin's
  // certificate again (an origin that keeps its ticket keys across a certificate change would
  // otherwise be resumed for as long as it accepts them).
  static constexpr std::chrono::seconds kOriginSessionLifetime{3600};

  const std::string& ca_folder() const { return ca_folder_; }

 private:
  Inspection(std::string ca_folder);

  std::string ca_folder_;
  boost::asio::ssl::context client_facing_;
  boost::asio::ssl::context origin_facing_;
  std::mutex mutex_;
  std::unique_ptr<CertificateAuthority> authority_;
  std::string authority_error_;

  // Sessions with origins, by "host:port". Resuming one skips the origin's handshake: most of a
  // new inspected connection's CPU was that handshake, its certificate chain decoded and
  // verified again for each client connection (bench/results/2026-11-27-inspection/). A
  // session is only ever offered for the host:port it was verified for (OpenSSL keeps the
  // verification with it, as a browser's resumption does); one that fails is dropped.
  static int on_new_origin_session(SSL* ssl, SSL_SESSION* session);
  mutable std::mutex sessions_mutex_;
  std::map<std::string, SSL_SESSION*, std::less<>> origin_sessions_;
  std::deque<std::string> origin_session_order_;  // oldest first
};

// The subject of a certificate, one line ("CN=example.com, O=...").
std::string subject_of(X509* certificate);

}  // namespace sandgate::inspect

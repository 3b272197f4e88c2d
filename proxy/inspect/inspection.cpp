// The shared TLS set-up of inspection (inspection.hpp).
#include "proxy/inspect/inspection.hpp"

#include <openssl/ssl.h>
#include <openssl/x509v3.h>

#include <cstring>
#include <ctime>

namespace sandgate::inspect {
namespace {

constexpr unsigned char kHttp11[] = {8, 'h', 't', 't', 'p', '/', '1', '.', '1'};
constexpr unsigned char kH2[] = {2, 'h', '2'};
constexpr unsigned char kH2OrHttp11[] = {2, 'h', '2', 8, 'h', 't', 't', 'p', '/', '1', '.', '1'};

// Where a client-facing SSL keeps whether the origin chose h2 (answer_client_with).
int client_protocol_index() {
  static const int index = SSL_get_ex_new_index(0, nullptr, nullptr, nullptr, nullptr);
  return index;
}

// ALPN for clients: what the origin chose (h2 when it did and the client offers it), otherwise
// HTTP/1.1 when offered, otherwise no protocol (the client then speaks HTTP/1.1 by default; one
// that insists on h2 fails its handshake, as it would with a server that only speaks HTTP/1.1).
int select_protocol(SSL* ssl, const unsigned char** out, unsigned char* out_length,
                    const unsigned char* offered, unsigned int offered_length, void*) {
  unsigned char* chosen = nullptr;
  if (SSL_get_ex_data(ssl, client_protocol_index()) != nullptr &&
      SSL_select_next_proto(&chosen, out_length, kH2, sizeof kH2, offered, offered_length) ==
          OPENSSL_NPN_NEGOTIATED) {
    *out = chosen;
    return SSL_TLSEXT_ERR_OK;
  }
  if (SSL_select_next_proto(&chosen, out_length, kHttp11, sizeof kHttp11, offered,
                            offered_length) == OPENSSL_NPN_NEGOTIATED) {
    *out = chosen;
    return SSL_TLSEXT_ERR_OK;
  }
  return SSL_TLSEXT_ERR_NOACK;
}

// Where an origin-facing SSL keeps the Inspection and the "host:port" its session is filed
// under, for the new-session callback (which may run during the first read: TLS 1.3 sends its
// tickets after the handshake).
struct OriginSessionKey {
  Inspection* inspection;
  std::string key;
};

void free_origin_session_key(void*, void* pointer, CRYPTO_EX_DATA*, int, long, void*) {
  delete static_cast<OriginSessionKey*>(pointer);
}

int origin_session_key_index() {
  static const int index =
      SSL_get_ex_new_index(0, nullptr, nullptr, nullptr, free_origin_session_key);
  return index;
}

void common_settings(SSL_CTX* context) {
  SSL_CTX_set_min_proto_version(context, TLS1_2_VERSION);
  SSL_CTX_set_options(context, SSL_OP_NO_RENEGOTIATION | SSL_OP_NO_COMPRESSION);
  SSL_CTX_set_mode(context, SSL_MODE_RELEASE_BUFFERS);
}

}  // namespace

std::string subject_of(X509* certificate) {
  if (certificate == nullptr) {
    return "(no certificate)";
  }
  BIO* bio = BIO_new(BIO_s_mem());
  X509_NAME_print_ex(bio, X509_get_subject_name(certificate), 0,
                     XN_FLAG_ONELINE & ~ASN1_STRFLGS_ESC_MSB);
  char* data = nullptr;
  const long size = BIO_get_mem_data(bio, &data);
  std::string text(data, static_cast<std::size_t>(size > 0 ? size : 0));
  BIO_free(bio);
  return text;
}

Inspection::Inspection(std::string ca_folder)
    : ca_folder_(std::move(ca_folder)),
      client_facing_(boost::asio::ssl::context::tls_server),
      origin_facing_(boost::asio::ssl::context::tls_client) {}

Expected<std::unique_ptr<Inspection>, std::string> Inspection::create(
    std::string ca_folder, const std::vector<std::string>& extra_ca_files) {
  std::unique_ptr<Inspection> inspection(new Inspection(std::move(ca_folder)));
  SSL_CTX* server = inspection->client_facing_.native_handle();
  common_settings(server);
  SSL_CTX_set_alpn_select_cb(server, select_protocol, nullptr);
  // Every connection gets a fresh handshake: nothing about one client's session is kept.
  SSL_CTX_set_session_cache_mode(server, SSL_SESS_CACHE_OFF);
  SSL_CTX_set_num_tickets(server, 0);

  SSL_CTX* client = inspection->origin_facing_.native_handle();
  common_settings(client);
  // The system's roots; OpenSSL reads SSL_CERT_FILE / SSL_CERT_DIR here when they are set.
  inspection->origin_facing_.set_default_verify_paths();
  for (const std::string& file : extra_ca_files) {
    if (SSL_CTX_load_verify_locations(client, file.c_str(), nullptr) != 1) {
      return Unexpected{"inspect_extra_ca: " + file +
                        ": cannot read it as PEM certificates (it must exist and hold at least "
                        "one CERTIFICATE block)"};
    }
  }
  SSL_CTX_set_verify(client, SSL_VERIFY_PEER, nullptr);
  SSL_CTX_set_alpn_protos(client, kHttp11, sizeof kHttp11);
  // Sessions are kept by host:port here, not in OpenSSL's cache (which files them by session
  // id, for servers).
  SSL_CTX_set_session_cache_mode(client, SSL_SESS_CACHE_CLIENT | SSL_SESS_CACHE_NO_INTERNAL_STORE);
  SSL_CTX_sess_set_new_cb(client, on_new_origin_session);
  return inspection;
}

void Inspection::offer_origin_h2(SSL* ssl) {
  SSL_set_alpn_protos(ssl, kH2OrHttp11, sizeof kH2OrHttp11);
}

bool Inspection::origin_chose_h2(SSL* ssl) {
  const unsigned char* chosen = nullptr;
  unsigned int length = 0;
  SSL_get0_alpn_selected(ssl, &chosen, &length);
  return length == 2 && std::memcmp(chosen, "h2", 2) == 0;
}

void Inspection::answer_client_with_h2(SSL* ssl) {
  // Any non-null pointer says yes; the SSL keeps no ownership of it.
  static int yes = 1;
  SSL_set_ex_data(ssl, client_protocol_index(), &yes);
}

Expected<CertificateAuthority*, std::string> Inspection::authority() {
  std::lock_guard lock(mutex_);
  if (authority_) {
    return authority_.get();
  }
  if (!authority_error_.empty()) {
    return Unexpected{authority_error_};
  }
  auto opened = CertificateAuthority::open(ca_folder_);
  if (!opened) {
    authority_error_ = opened.error();
    return Unexpected{authority_error_};
  }
  authority_ = std::move(*opened);
  return authority_.get();
}

std::optional<std::string> Inspection::present_leaf(SSL* ssl, const rules::Host& host) {
  auto ca = authority();
  if (!ca) {
    return ca.error();
  }
  auto leaf = (*ca)->leaf_for(host);
  if (!leaf) {
    return leaf.error();
  }
  if (SSL_use_certificate(ssl, (*leaf)->certificate.get()) != 1 ||
      SSL_use_PrivateKey(ssl, (*leaf)->key.get()) != 1 ||
      SSL_add1_chain_cert(ssl, (*ca)->certificate()) != 1) {
    return std::string("cannot set the certificate for ") + host.display();
  }
  return std::nullopt;
}

Inspection::~Inspection() {
  for (auto& [key, session] : origin_sessions_) {
    SSL_SESSION_free(session);
  }
}

int Inspection::on_new_origin_session(SSL* ssl, SSL_SESSION* session) {
  auto* filed = static_cast<OriginSessionKey*>(SSL_get_ex_data(ssl, origin_session_key_index()));
  if (filed == nullptr || SSL_get_verify_result(ssl) != X509_V_OK) {
    return 0;
  }
  // A copy: `session` stays the connection's own, and OpenSSL marks it not resumable when the
  // connection ends without a close_notify (as an origin connection often does).
  if (SSL_SESSION* copy = SSL_SESSION_dup(session)) {
    filed->inspection->remember_origin_session(filed->key, copy);
  }
  return 0;  // OpenSSL keeps its reference to `session`
}

void Inspection::remember_origin_session(const std::string& key, SSL_SESSION* session) {
  std::lock_guard lock(sessions_mutex_);
  auto [at, added] = origin_sessions_.try_emplace(key, session);
  if (!added) {
    SSL_SESSION_free(at->second);
    at->second = session;
    return;
  }
  origin_session_order_.push_back(key);
  while (origin_sessions_.size() > kOriginSessions && !origin_session_order_.empty()) {
    auto oldest = origin_sessions_.find(origin_session_order_.front());
    origin_session_order_.pop_front();
    if (oldest != origin_sessions_.end()) {
      SSL_SESSION_free(oldest->second);
      origin_sessions_.erase(oldest);
    }
  }
}

void Inspection::forget_origin_session(SSL* ssl) {
  auto* filed = static_cast<OriginSessionKey*>(SSL_get_ex_data(ssl, origin_session_key_index()));
  if (filed == nullptr) {
    return;
  }
  std::lock_guard lock(sessions_mutex_);
  auto at = origin_sessions_.find(filed->key);
  if (at != origin_sessions_.end()) {
    SSL_SESSION_free(at->second);
    origin_sessions_.erase(at);
    std::erase(origin_session_order_, filed->key);
  }
}

std::size_t Inspection::origin_sessions() const {
  std::lock_guard lock(sessions_mutex_);
  return origin_sessions_.size();
}

void Inspection::expect_origin(SSL* ssl, const rules::Host& host, std::uint16_t port) {
  auto filed = std::make_unique<OriginSessionKey>(
      OriginSessionKey{this, host.display() + ":" + std::to_string(port)});
  {
    std::lock_guard lock(sessions_mutex_);
    auto at = origin_sessions_.find(filed->key);
    if (at != origin_sessions_.end() &&
        SSL_SESSION_get_time(at->second) + kOriginSessionLifetime.count() < std::time(nullptr)) {
      // Too old: the origin's certificate is verified afresh at least this often.
      SSL_SESSION_free(at->second);
      origin_sessions_.erase(at);
      std::erase(origin_session_order_, filed->key);
      at = origin_sessions_.end();
    }
    if (at != origin_sessions_.end()) {
      // A copy again: the connection marks its session not resumable when it ends uncleanly.
      if (SSL_SESSION* copy = SSL_SESSION_dup(at->second)) {
        SSL_set_session(ssl, copy);  // takes its own reference
        SSL_SESSION_free(copy);
      }
    }
  }
  SSL_set_ex_data(ssl, origin_session_key_index(), filed.release());
  if (host.is_ip()) {
    X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl), host.name.c_str());
  } else {
    SSL_set_tlsext_host_name(ssl, host.name.c_str());
    SSL_set1_host(ssl, host.name.c_str());
    // A name matches itself or a wildcard for its left-most label, never a partial one.
    SSL_set_hostflags(ssl, X509_CHECK_FLAG_NO_PARTIAL_WILDCARDS);
  }
}

}  // namespace sandgate::inspect

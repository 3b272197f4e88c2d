// Idle verified TLS connections to inspected origins, per worker. See origin_pool.hpp.
#include "proxy/session/origin_pool.hpp"

#include <openssl/bio.h>
#include <openssl/ssl.h>

#include <algorithm>

namespace sandgate::session {

namespace asio = boost::asio;

bool nothing_unread(OriginTls& tls) {
  SSL* ssl = tls.native_handle();
  // Decrypted application data, a record read ahead, or bytes the stream passed to OpenSSL's
  // side of its BIO pair that no record has taken yet. (Asio's stream also holds what it read
  // from the socket until OpenSSL's side takes it; it hands all of it over after each read
  // unless that side is full, which BIO_ctrl_pending then shows.)
  return SSL_pending(ssl) == 0 && SSL_has_pending(ssl) == 0 &&
         BIO_ctrl_pending(SSL_get_rbio(ssl)) == 0;
}

bool serves(const SecuredOrigin& origin, ClientAlpn alpn) {
  switch (alpn) {
    case ClientAlpn::unknown:
      return true;
    case ClientAlpn::http1:
      return !origin.h2_chosen;
    case ClientAlpn::h2:
      return origin.h2_offered;  // chosen (h2), or declined (HTTP/1.1 either way)
  }
  return false;
}

OriginPool::Parked::Parked(std::unique_ptr<SecuredOrigin> o, std::string k)
    : origin(std::move(o)), key(std::move(k)), expiry(origin->socket.get_executor()) {}

OriginPool::~OriginPool() { close(); }

void OriginPool::end(Parked& parked) {
  parked.gone = true;
  boost::system::error_code ignored;
  parked.expiry.cancel();
  if (parked.origin) {
    parked.origin->socket.close(ignored);  // completes its watch as aborted
  }
}

void OriginPool::park(std::string key, std::unique_ptr<SecuredOrigin> origin) {
  boost::system::error_code ignored;
  if (closed_ || origin == nullptr || origin->epoch != epoch_ || !origin->socket.is_open() ||
      !origin->tls || !nothing_unread(*origin->tls)) {
    if (origin != nullptr) {
      origin->socket.close(ignored);
    }
    return;
  }
  const auto found = shelves_.find(key);
  if (found != shelves_.end() && found->second.size() >= kPerOrigin) {
    const std::shared_ptr<Parked> oldest = found->second.front();
    drop(oldest);  // the oldest of this origin makes room
  } else if (total_ >= kTotal) {
    origin->socket.close(ignored);
    return;
  }
  auto parked = std::make_shared<Parked>(std::move(origin), std::move(key));
  shelves_[parked->key].push_back(parked);
  ++total_;
  watch(parked);
}

void OriginPool::watch(const std::shared_ptr<Parked>& parked) {
  // Anything the origin sends while nobody asked (its close, an alert, stray bytes) ends the
  // connection; so does the idle lifetime. A connection taken or dropped first has `gone` set.
  parked->origin->socket.async_wait(asio::socket_base::wait_read,
                                    [this, parked](boost::system::error_code) {
                                      if (!parked->gone) {
                                        drop(parked);
                                      }
                                    });
  parked->expiry.expires_after(idle_lifetime_);
  parked->expiry.async_wait([this, parked](boost::system::error_code) {
    if (!parked->gone) {
      drop(parked);
    }
  });
}

void OriginPool::drop(const std::shared_ptr<Parked>& parked) {
  auto found = shelves_.find(parked->key);
  if (found != shelves_.end()) {
    Shelf& shelf = found->second;
    const auto at = std::find(shelf.begin(), shelf.end(), parked);
    if (at != shelf.end()) {
      shelf.erase(at);
      --total_;
    }
    if (shelf.empty()) {
      shelves_.erase(found);
    }
  }
  end(*parked);
}

std::unique_ptr<SecuredOrigin> OriginPool::take(std::string_view key, ClientAlpn alpn) {
  auto found = shelves_.find(key);
  if (found == shelves_.end()) {
    return nullptr;
  }
  Shelf& shelf = found->second;
  std::unique_ptr<SecuredOrigin> taken;
  // The most recently used first; those that do not serve `alpn` stay.
  for (auto at = shelf.rbegin(); at != shelf.rend() && taken == nullptr;) {
    std::shared_ptr<Parked> parked = *at;
    if (!serves(*parked->origin, alpn)) {
      ++at;
      continue;
    }
    at = std::make_reverse_iterator(shelf.erase(std::next(at).base()));
    --total_;
    // Its watch may not have run yet: the origin may have closed it or sent something since.
    char byte;
    const ssize_t n =
        ::recv(parked->origin->socket.native_handle(), &byte, 1, MSG_PEEK | MSG_DONTWAIT);
    const bool idle = n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK);
    if (!idle) {
      end(*parked);
      continue;
    }
    parked->gone = true;
    parked->expiry.cancel();
    boost::system::error_code ignored;
    parked->origin->socket.cancel(ignored);  // its watch completes as aborted, touching nothing
    taken = std::move(parked->origin);
  }
  if (shelf.empty()) {
    shelves_.erase(found);
  }
  return taken;
}

void OriginPool::forget_all() {
  ++epoch_;
  auto shelves = std::move(shelves_);
  shelves_.clear();
  total_ = 0;
  for (auto& [key, shelf] : shelves) {
    for (auto& parked : shelf) {
      end(*parked);
    }
  }
}

void OriginPool::close() {
  closed_ = true;
  forget_all();
}

}  // namespace sandgate::session

// The shared HTTP/2 origin connections of a worker (h2_origin_pool.hpp).
#include "proxy/session/h2_origin_pool.hpp"

#include <algorithm>
#include <utility>

namespace sandgate::session {

H2OriginPool::~H2OriginPool() {
  close();
  for (auto& [key, shelf] : shelves_) {
    for (auto& origin : shelf.connections) {
      origin->forget_keeper();
    }
  }
}

std::shared_ptr<H2Origin> H2OriginPool::adopt(std::string key,
                                              std::unique_ptr<SecuredOrigin> secured,
                                              bool may_share, std::uint64_t epoch_now) {
  const bool shared = may_share && secured->epoch == epoch_now && has_room_for(key);
  auto origin = std::make_shared<H2Origin>(static_cast<H2OriginKeeper&>(*this), std::move(key),
                                           std::move(secured), shared, idle_lifetime_);
  shelves_[origin->key()].connections.push_back(origin);
  if (shared) {
    ++shared_total_;
  }
  origin->start();
  room_changed(origin->key());
  return origin;
}

std::shared_ptr<H2Origin> H2OriginPool::take(std::string_view key) const {
  const auto found = shelves_.find(key);
  if (found == shelves_.end()) {
    return nullptr;
  }
  std::shared_ptr<H2Origin> busiest;
  for (const auto& origin : found->second.connections) {
    if (origin->shared() && origin->available_streams() > 0 &&
        (busiest == nullptr || origin->borrowed_streams() > busiest->borrowed_streams())) {
      busiest = origin;
    }
  }
  return busiest;
}

std::shared_ptr<H2Origin> H2OriginPool::any(std::string_view key) const {
  const auto found = shelves_.find(key);
  if (found == shelves_.end()) {
    return nullptr;
  }
  for (const auto& origin : found->second.connections) {
    if (origin->shared() && origin->usable()) {
      return origin;
    }
  }
  return nullptr;
}

bool H2OriginPool::has_room_for(std::string_view key) const {
  if (closed_ || shared_total_ >= kTotal) {
    return false;
  }
  const auto found = shelves_.find(key);
  if (found == shelves_.end()) {
    return true;
  }
  // (Retired ones count against the total until they go, not against their origin's own.)
  const auto& connections = found->second.connections;
  return static_cast<std::size_t>(std::count_if(
             connections.begin(), connections.end(),
             [](const auto& origin) { return origin->shared() && origin->usable(); })) < kPerOrigin;
}

bool H2OriginPool::allows_connect_protocol(std::string_view key) const {
  const auto found = shelves_.find(key);
  if (found == shelves_.end()) {
    return false;
  }
  const auto& connections = found->second.connections;
  return std::any_of(connections.begin(), connections.end(), [](const auto& origin) {
    return origin->shared() && origin->usable() && origin->allows_connect_protocol();
  });
}

void H2OriginPool::watch(const std::string& key, H2OriginWatcher& watcher) {
  shelves_[key].watchers.push_back(&watcher);
}

void H2OriginPool::unwatch(const std::string& key, H2OriginWatcher& watcher) {
  const auto found = shelves_.find(key);
  if (found == shelves_.end()) {
    return;
  }
  auto& watchers = found->second.watchers;
  watchers.erase(std::remove(watchers.begin(), watchers.end(), &watcher), watchers.end());
  if (watchers.empty() && found->second.connections.empty()) {
    shelves_.erase(found);
  }
}

void H2OriginPool::room_changed(const std::string& key) {
  const auto found = shelves_.find(key);
  if (found == shelves_.end()) {
    return;
  }
  // (A watcher only wakes its streams when told: none stops watching meanwhile.)
  for (H2OriginWatcher* watcher : found->second.watchers) {
    watcher->on_origin_room();
  }
}

void H2OriginPool::settings_changed(const std::string& key) {
  const auto found = shelves_.find(key);
  if (found == shelves_.end()) {
    return;
  }
  for (H2OriginWatcher* watcher : found->second.watchers) {
    watcher->on_origin_settings();
  }
}

void H2OriginPool::ended(H2Origin& origin) {
  const auto found = shelves_.find(origin.key());
  if (found == shelves_.end()) {
    return;
  }
  auto& connections = found->second.connections;
  const auto at = std::find_if(connections.begin(), connections.end(),
                               [&](const auto& kept) { return kept.get() == &origin; });
  if (at == connections.end()) {
    return;
  }
  const std::shared_ptr<H2Origin> keep_alive = *at;  // while the watchers are told
  if (origin.shared()) {
    --shared_total_;
  }
  connections.erase(at);
  room_changed(origin.key());
  if (connections.empty() && found->second.watchers.empty()) {
    shelves_.erase(origin.key());
  }
}

void H2OriginPool::forget_all() {
  std::vector<std::shared_ptr<H2Origin>> all;
  for (auto& [key, shelf] : shelves_) {
    all.insert(all.end(), shelf.connections.begin(), shelf.connections.end());
  }
  for (auto& origin : all) {
    origin->retire();
  }
}

void H2OriginPool::close() {
  closed_ = true;
  std::vector<std::shared_ptr<H2Origin>> all;
  for (auto& [key, shelf] : shelves_) {
    all.insert(all.end(), shelf.connections.begin(), shelf.connections.end());
  }
  for (auto& origin : all) {
    origin->close("the gate is shutting down");
  }
}

}  // namespace sandgate::session

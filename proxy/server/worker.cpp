// A worker's per-thread state. See worker.hpp.
#include "proxy/server/worker.hpp"

namespace sandgate::server {

Worker::Worker(SharedState& shared_state, std::shared_ptr<const rules::Policy> initial_policy)
    : shared(shared_state), policy(std::move(initial_policy)) {}

void Worker::attach(LiveConnection& connection) {
  connection.prev = nullptr;
  connection.next = live_;
  if (live_ != nullptr) {
    live_->prev = &connection;
  }
  live_ = &connection;
  ++live_count_;
}

void Worker::detach(LiveConnection& connection) {
  if (connection.prev != nullptr) {
    connection.prev->next = connection.next;
  } else {
    live_ = connection.next;
  }
  if (connection.next != nullptr) {
    connection.next->prev = connection.prev;
  }
  connection.prev = connection.next = nullptr;
  --live_count_;
}

void Worker::close_all() {
  boost::system::error_code ignored;
  for (LiveConnection* c = live_; c != nullptr; c = c->next) {
    if (c->client != nullptr) {
      c->client->close(ignored);
    }
    if (c->upstream != nullptr) {
      c->upstream->close(ignored);
    }
  }
}

}  // namespace sandgate::server

// The admin listener (`--admin ADDR:PORT`, loopback only, off by default), served with Beast on
// a thread and io_context of its own so that a slow scraper never touches the workers:
//   GET /metrics  Prometheus text format
//   GET /healthz  200 while the process runs
//   GET /readyz   200 once rules are loaded and the listener is up, else 503
//   GET /denials  the most recent denials, newest first (JSON)
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "rules/expected.hpp"

namespace sandgate::admin {

struct AdminHandlers {
  std::function<std::string()> metrics;
  std::function<std::string()> denials;
  std::function<bool()> ready;
};

class AdminServer {
 public:
  explicit AdminServer(AdminHandlers handlers);
  ~AdminServer();  // stops and joins
  AdminServer(const AdminServer&) = delete;
  AdminServer& operator=(const AdminServer&) = delete;

  // Binds `listen` (`ADDR:PORT`, `[V6]:PORT`; loopback only) and starts serving. Returns the
  // bound `ADDR:PORT`, or an error naming the address.
  Expected<std::string, std::string> start(const std::string& listen);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace sandgate::admin

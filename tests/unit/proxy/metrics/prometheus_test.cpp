// The scrape's text (proxy/metrics/prometheus.hpp): each file the gate reloads has its own ok and
// failed counts, so a failed reload of any of them (the request rules and budgets too) shows.
#include "proxy/metrics/prometheus.hpp"

#include <gtest/gtest.h>

#include <string>

namespace sandgate::metrics {
namespace {

TEST(Prometheus, EveryReloadedFileIsCountedByResult) {
  GaugeValues gauges;
  gauges.blocklist_reloads = {1, 2};
  gauges.allowlist_reloads = {3, 4};
  gauges.request_rules_reloads = {5, 6};
  gauges.budgets_reloads = {7, 8};
  gauges.config_reloads = {9, 10};
  gauges.version = "1.2.3";
  const std::string text = render_prometheus({}, gauges);
  for (const char* line : {"sandgate_reloads_total{file=\"blocklist\",result=\"failed\"} 2\n",
                           "sandgate_reloads_total{file=\"allowlist\",result=\"ok\"} 3\n",
                           "sandgate_reloads_total{file=\"request-rules\",result=\"ok\"} 5\n",
                           "sandgate_reloads_total{file=\"request-rules\",result=\"failed\"} 6\n",
                           "sandgate_reloads_total{file=\"budgets\",result=\"ok\"} 7\n",
                           "sandgate_reloads_total{file=\"budgets\",result=\"failed\"} 8\n",
                           "sandgate_reloads_total{file=\"config\",result=\"failed\"} 10\n"}) {
    EXPECT_NE(text.find(line), std::string::npos) << line << text;
  }
}

}  // namespace
}  // namespace sandgate::metrics

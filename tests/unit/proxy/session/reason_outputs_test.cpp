// What the proxy makes of the reason table (rules/reason.hpp): the reply for every reason that
// has one (session/replies), and the decision counters and their /metrics series
// (metrics/metrics, metrics/prometheus), one per reason, indexed without a look-up.
#include <gtest/gtest.h>

#include <string>

#include "proxy/metrics/metrics.hpp"
#include "proxy/metrics/prometheus.hpp"
#include "proxy/session/wire/replies.hpp"
#include "rules/reason.hpp"

namespace sandgate {
namespace {

using rules::kReasons;
using rules::Reason;
using rules::ReasonInfo;
using rules::Verdict;

std::string field(const std::string& reply, std::string_view name) {
  const std::string prefix = "\r\n" + std::string(name) + ": ";
  const auto at = reply.find(prefix);
  if (at == std::string::npos) {
    return {};
  }
  const auto start = at + prefix.size();
  return reply.substr(start, reply.find("\r\n", start) - start);
}

TEST(ReasonReplies, EveryReasonWithAReplyGetsItsRowsStatusAndError) {
  for (const ReasonInfo& row : kReasons) {
    if (row.status == 0) {
      continue;
    }
    SCOPED_TRACE(std::string(row.code));
    const std::string reply = session::build_reply(row.reason, "a sentence.");
    const std::string status_line = "HTTP/1.1 " + std::to_string(row.status) + " " +
                                    std::string(session::status_text(row.status)) + "\r\n";
    EXPECT_TRUE(reply.starts_with(status_line)) << reply;
    EXPECT_NE(session::status_text(row.status), "Error") << "no reason phrase for the status";
    EXPECT_EQ(field(reply, "Proxy-Status"),
              "sandgate; error=" + std::string(row.proxy_status_error) + "; details=\"" +
                  std::string(row.code) + ": a sentence.\"");
    EXPECT_EQ(field(reply, "Connection"), "close");
    EXPECT_EQ(field(reply, "Proxy-Authenticate").empty(), row.status != 407);
    const std::string body = reply.substr(reply.find("\r\n\r\n") + 4);
    EXPECT_EQ(field(reply, "Content-Length"), std::to_string(body.size()));
    EXPECT_EQ(body, std::string("sandgate: ") +
                        (row.status >= 500 ? "could not connect" : "refused") + " (" +
                        std::string(row.code) + "): a sentence.\n");
  }
}

TEST(ReasonReplies, AResolvedAddressIsProhibitedWhateverTheRule) {
  const std::string reply = session::build_reply(Reason::blocklist, "x resolves to y.",
                                                 session::DeniedAt::resolved_address);
  EXPECT_TRUE(reply.starts_with("HTTP/1.1 403 Forbidden\r\n")) << reply;
  EXPECT_EQ(field(reply, "Proxy-Status"),
            "sandgate; error=destination_ip_prohibited; details=\"blocklist: x resolves to y.\"");
  EXPECT_NE(session::build_reply(Reason::blocklist, "s").find("error=http_request_denied;"),
            std::string::npos);
}

TEST(ReasonReplies, TheAuthChallengeIsExact) {
  const std::string reply = session::build_reply(Reason::auth_required, "a token.");
  EXPECT_TRUE(reply.starts_with("HTTP/1.1 407 Proxy Authentication Required\r\n")) << reply;
  EXPECT_EQ(field(reply, "Proxy-Authenticate"), "Basic realm=\"sandgate\"");
}

TEST(ReasonReplies, AReasonWithoutAReplyStillGivesAValidResponse) {
  const std::string reply = session::build_reply(Reason::internal_error, "s");
  EXPECT_TRUE(reply.starts_with("HTTP/1.1 500 Internal Server Error\r\n")) << reply;
  EXPECT_NE(reply.find("error=proxy_internal_error;"), std::string::npos);
}

// ---- Metrics ----

std::string decision_series(Verdict verdict, const ReasonInfo& row) {
  return "sandgate_decisions_total{verdict=\"" + std::string(rules::verdict_name(verdict)) +
         "\",reason=\"" + std::string(row.code) + "\",enforced=\"true\"} ";
}

TEST(ReasonMetrics, EveryRowIsRenderedWithItsOwnVerdictEvenAtZero) {
  metrics::WorkerMetrics worker;
  const std::string text = metrics::render_prometheus({&worker}, {});
  for (const ReasonInfo& row : kReasons) {
    EXPECT_NE(text.find(decision_series(row.verdict, row) + "0\n"), std::string::npos) << row.code;
  }
  EXPECT_EQ(text.find("reason=\"other\""), std::string::npos);
}

TEST(ReasonMetrics, EachReasonIsCountedUnderItsOwnLabelAcrossWorkers) {
  metrics::WorkerMetrics first;
  metrics::WorkerMetrics second;
  for (std::size_t i = 0; i < kReasons.size(); ++i) {
    const ReasonInfo& row = kReasons[i];
    // A different count per reason, so that a mix-up of two rows shows.
    for (std::size_t n = 0; n <= i; ++n) {
      (n % 2 == 0 ? first : second).count_decision(row.verdict, row.reason);
    }
  }
  // A denial after an allow (a revocation) under a verdict that is not the row's own.
  first.count_decision(Verdict::deny, Reason::allowed);
  const std::string text = metrics::render_prometheus({&first, &second}, {});
  for (std::size_t i = 0; i < kReasons.size(); ++i) {
    const ReasonInfo& row = kReasons[i];
    EXPECT_NE(text.find(decision_series(row.verdict, row) + std::to_string(i + 1) + "\n"),
              std::string::npos)
        << row.code << " in:\n"
        << text;
    EXPECT_EQ(
        first.decisions[metrics::reason_index(row.code)][static_cast<std::size_t>(row.verdict)]
                .get() +
            second.decisions[rules::reason_index(row.reason)][static_cast<std::size_t>(row.verdict)]
                .get(),
        i + 1);
  }
  EXPECT_NE(text.find(decision_series(Verdict::deny, kReasons[0]) + "1\n"), std::string::npos);
  // Verdicts a reason was never counted under stay out.
  EXPECT_EQ(text.find(decision_series(Verdict::error, kReasons[0])), std::string::npos);
}

TEST(ReasonMetrics, ReasonIndexOfAnUnknownCodeThrows) {
  EXPECT_EQ(metrics::reason_index("blocklist"), rules::reason_index(Reason::blocklist));
  EXPECT_THROW(metrics::reason_index("other"), std::out_of_range);
}

}  // namespace
}  // namespace sandgate

// The one reason table (rules/reason.hpp): its rows are well-formed and consistent with each
// other, the look-ups agree with it, and the docs (docs/*.md) document exactly its codes, each
// with the reply the table gives it.
#include "rules/reason.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "rules/policy.hpp"

namespace sandgate::rules {
namespace {

bool is_code(std::string_view text) {
  static const std::regex kCode("[a-z][a-z0-9]*(-[a-z0-9]+)*");
  return std::regex_match(text.begin(), text.end(), kCode);
}

// ---- The table ----

TEST(ReasonTable, RowsAreInEnumeratorOrder) {
  ASSERT_EQ(kReasons.size(), kReasonCount);
  for (std::size_t i = 0; i < kReasons.size(); ++i) {
    EXPECT_EQ(reason_index(kReasons[i].reason), i) << kReasons[i].code;
    EXPECT_EQ(&reason_info(kReasons[i].reason), &kReasons[i]);
  }
}

TEST(ReasonTable, CodesAreUniqueAndLowercaseHyphenated) {
  std::set<std::string_view> seen;
  for (const ReasonInfo& row : kReasons) {
    EXPECT_TRUE(is_code(row.code)) << "'" << row.code << "' is not lower-case-hyphenated";
    EXPECT_TRUE(seen.insert(row.code).second) << row.code << " appears twice";
    EXPECT_EQ(reason_code(row.reason), row.code);
  }
}

TEST(ReasonTable, FindReasonIsTheInverseOfReasonCode) {
  for (const ReasonInfo& row : kReasons) {
    EXPECT_EQ(find_reason(row.code), row.reason) << row.code;
  }
  for (std::string_view unknown :
       {"", "other", "Blocklist", "blocklist ", "upstream-failure", "unknown", "dns_error"}) {
    EXPECT_EQ(find_reason(unknown), std::nullopt) << "'" << unknown << "'";
  }
}

TEST(ReasonTable, EveryRowsReplyIsConsistent) {
  // The RFC 9209 error types the gate uses, and the statuses each may come with.
  const std::map<std::string_view, std::set<unsigned>> kErrorStatuses = {
      {"http_request_denied", {403, 407, 429}},
      {"destination_ip_prohibited", {403}},
      {"http_request_error", {400, 408, 431}},
      {"dns_error", {502}},
      {"dns_timeout", {504}},
      {"connection_refused", {502}},
      {"connection_timeout", {504}},
      {"destination_unavailable", {502}},
      {"http_response_incomplete", {502}},
      {"connection_limit_reached", {503}},
      {"tls_certificate_error", {502}},
  };
  for (const ReasonInfo& row : kReasons) {
    SCOPED_TRACE(std::string(row.code));
    EXPECT_FALSE(row.description.empty());
    EXPECT_FALSE(row.description.ends_with('.')) << "a line, not a sentence";
    if (row.status == 0) {
      EXPECT_TRUE(row.proxy_status_error.empty()) << "no reply, so no error type";
      continue;
    }
    const auto known = kErrorStatuses.find(row.proxy_status_error);
    ASSERT_NE(known, kErrorStatuses.end()) << "unknown error type " << row.proxy_status_error;
    EXPECT_TRUE(known->second.contains(row.status))
        << row.status << " with " << row.proxy_status_error;
    // The verdict and the status class agree: a refusal is 4xx, a failure to carry it 5xx.
    switch (row.verdict) {
      case Verdict::allow:
        ADD_FAILURE() << "an allow has no reply of the gate's own";
        break;
      case Verdict::deny:
        EXPECT_GE(row.status, 400u);
        EXPECT_LT(row.status, 500u);
        break;
      case Verdict::error:
        EXPECT_GE(row.status, 500u);
        EXPECT_LT(row.status, 600u);
        break;
    }
  }
}

TEST(ReasonTable, VerdictNames) {
  EXPECT_EQ(verdict_name(Verdict::allow), "allow");
  EXPECT_EQ(verdict_name(Verdict::deny), "deny");
  EXPECT_EQ(verdict_name(Verdict::error), "error");
  EXPECT_EQ(reason_info(Reason::allowed).verdict, Verdict::allow);
  for (const ReasonInfo& row : kReasons) {
    EXPECT_EQ(row.verdict == Verdict::allow, row.reason == Reason::allowed) << row.code;
  }
}

// The codes released before the table existed: logs, dashboards and the tests key on them, so
// they must never change.
TEST(ReasonTable, ReleasedCodesAreUnchanged) {
  const std::vector<std::pair<Reason, std::string_view>> released = {
      {Reason::allowed, "allowed"},
      {Reason::invalid_host, "invalid-host"},
      {Reason::loopback, "loopback"},
      {Reason::local_address, "local-address"},
      {Reason::ip_address, "ip-address"},
      {Reason::metadata_address, "metadata-address"},
      {Reason::private_address, "private-address"},
      {Reason::reserved_address, "reserved-address"},
      {Reason::blocklist, "blocklist"},
      {Reason::port_not_allowed, "port-not-allowed"},
      {Reason::ssh_disabled, "ssh-disabled"},
      {Reason::ssh_non_git_host, "ssh-non-git-host"},
      {Reason::not_allowlisted, "not-allowlisted"},
      {Reason::launchdarkly, "launchdarkly"},
      {Reason::launchdarkly_unreachable, "launchdarkly-unreachable"},
      {Reason::sni_mismatch, "sni-mismatch"},
      {Reason::sni_missing, "sni-missing"},
      {Reason::protocol_mismatch, "protocol-mismatch"},
      {Reason::unknown_destination, "unknown-destination"},
      {Reason::ask_denied, "ask-denied"},
      {Reason::ask_timeout, "ask-timeout"},
      {Reason::ask_unavailable, "ask-unavailable"},
      {Reason::host_mismatch, "host-mismatch"},
      {Reason::dns_refused, "dns-refused"},
      {Reason::request_denied, "request-denied"},
      {Reason::request_not_allowed, "request-not-allowed"},
      {Reason::origin_certificate, "origin-certificate"},
      {Reason::client_tls_failed, "client-tls-failed"},
      {Reason::not_inspectable, "not-inspectable"},
      {Reason::secret_refused, "secret-refused"},
      {Reason::budget_exhausted, "budget-exhausted"},
      {Reason::auth_required, "auth-required"},
      {Reason::auth_failed, "auth-failed"},
      {Reason::bad_request, "bad-request"},
      {Reason::origin_form, "origin-form"},
      {Reason::https_absolute_form, "https-absolute-form"},
      {Reason::unsupported_scheme, "unsupported-scheme"},
      {Reason::request_timeout, "request-timeout"},
      {Reason::header_too_large, "header-too-large"},
      {Reason::socks4_refused, "socks4-refused"},
      {Reason::socks_command_unsupported, "socks-command-unsupported"},
      {Reason::dns_not_found, "dns-not-found"},
      {Reason::dns_timeout, "dns-timeout"},
      {Reason::dns_error, "dns-error"},
      {Reason::connection_refused, "connection-refused"},
      {Reason::connection_timeout, "connection-timeout"},
      {Reason::destination_unavailable, "destination-unavailable"},
      {Reason::parent_refused, "parent-refused"},
      {Reason::parent_unreachable, "parent-unreachable"},
      {Reason::upstream_closed, "upstream-closed"},
      {Reason::bad_response, "bad-response"},
      {Reason::response_timeout, "response-timeout"},
      {Reason::connection_limit, "connection-limit"},
      {Reason::shutting_down, "shutting-down"},
      {Reason::client_closed, "client-closed"},
      {Reason::no_request, "no-request"},
      {Reason::internal_error, "internal-error"},
  };
  ASSERT_EQ(released.size(), kReasonCount) << "a new reason: add its code here too";
  for (const auto& [reason, code] : released) {
    EXPECT_EQ(reason_code(reason), code);
  }
}

// The policy's explain() has a sentence for every reason, its own and (from the table's line)
// the proxy's.
TEST(ReasonTable, ExplainHasASentenceForEveryReason) {
  const Policy policy(PolicyOptions{}, DomainSet{}, std::nullopt);
  const Host host = *parse_host("example.com");
  for (const ReasonInfo& row : kReasons) {
    Decision decision;
    decision.verdict = row.verdict == Verdict::allow ? Verdict::allow : Verdict::deny;
    decision.reason = row.reason;
    const std::string sentence = policy.explain(decision, host, 443);
    EXPECT_FALSE(sentence.empty()) << row.code;
    EXPECT_TRUE(sentence.ends_with('.')) << row.code << ": " << sentence;
  }
}

// ---- The docs ----

// A reason code list in the docs: where it is, and each backticked code in it with the row of
// the docs' table it sits in.
struct Mention {
  std::string code;
  std::string section;
  std::string status;  // the client table's status cell ("403", "—"); empty elsewhere
  std::string error;   // the client table's error cell without backticks ("—" for none)
};

// Every page of docs/, in name order, one after the other: the reason lists live in several
// (clients.md, policy.md, operations.md), and a list that moves between pages is still found.
std::string read_docs() {
  std::vector<std::filesystem::path> pages;
  for (const auto& entry :
       std::filesystem::directory_iterator(std::string(SANDGATE_SOURCE_DIR) + "/docs")) {
    if (entry.path().extension() == ".md") {
      pages.push_back(entry.path());
    }
  }
  std::sort(pages.begin(), pages.end());
  std::stringstream text;
  for (const auto& page : pages) {
    std::ifstream in(page);
    text << in.rdbuf() << '\n';
  }
  return text.str();
}

std::vector<std::string> split_cells(const std::string& row) {
  std::vector<std::string> cells;
  std::string cell;
  bool in_code = false;
  for (std::size_t i = 1; i < row.size(); ++i) {  // after the leading '|'
    const char c = row[i];
    if (c == '`') {
      in_code = !in_code;
    }
    if (c == '|' && !in_code) {
      const auto first = cell.find_first_not_of(' ');
      const auto last = cell.find_last_not_of(' ');
      cells.push_back(first == std::string::npos ? "" : cell.substr(first, last - first + 1));
      cell.clear();
    } else {
      cell += c;
    }
  }
  return cells;
}

std::vector<std::string> backticked(const std::string& text) {
  std::vector<std::string> out;
  for (std::size_t open = text.find('`'); open != std::string::npos;) {
    const std::size_t close = text.find('`', open + 1);
    if (close == std::string::npos) {
      break;
    }
    out.push_back(text.substr(open + 1, close - open - 1));
    open = text.find('`', close + 1);
  }
  return out;
}

// The table rows (lines starting with '|') after the line that starts with `header`, its
// separator line skipped.
std::vector<std::string> table_after(const std::string& docs, std::string_view header) {
  std::vector<std::string> rows;
  std::istringstream lines(docs);
  std::string line;
  bool found = false;
  while (std::getline(lines, line)) {
    if (!found) {
      found = line.starts_with(header);
      continue;
    }
    if (!line.starts_with('|')) {
      break;
    }
    if (!line.starts_with("| ---")) {
      rows.push_back(line);
    }
  }
  return rows;
}

// Every code-like backticked word in the three reason lists: the table "What a client sees when
// it is denied" (docs/clients.md), the reason column of "The decision" (docs/policy.md), and the
// log's `reason` field (docs/operations.md).
std::vector<Mention> docs_mentions() {
  const std::string docs = read_docs();
  std::vector<Mention> mentions;
  auto add_codes = [&mentions](const std::string& cell, const std::string& section,
                               const std::string& status, const std::string& error) {
    for (const std::string& word : backticked(cell)) {
      if (is_code(word) || word.ends_with("-*")) {
        mentions.push_back({word, section, status, error});
      }
    }
  };

  const auto client = table_after(docs, "| status | Proxy-Status `error=` |");
  EXPECT_GE(client.size(), 10u) << "the table 'What a client sees when it is denied' moved";
  for (const std::string& row : client) {
    const auto cells = split_cells(row);
    EXPECT_EQ(cells.size(), 3u) << row;
    if (cells.size() == 3) {
      std::string error = cells[1];
      std::erase(error, '`');
      add_codes(cells[2], "client table", cells[0], error);
    }
  }

  const auto decision = table_after(docs, "| # | check | reason code |");
  EXPECT_GE(decision.size(), 9u) << "the table of 'The decision' moved";
  for (const std::string& row : decision) {
    const auto cells = split_cells(row);
    EXPECT_EQ(cells.size(), 3u) << row;
    if (!cells.empty()) {
      add_codes(cells.back(), "decision table", "", "");
    }
  }

  bool log_row = false;
  std::istringstream lines(docs);
  for (std::string line; std::getline(lines, line);) {
    if (line.starts_with("| `reason` |")) {
      log_row = true;
      add_codes(split_cells(line).back(), "log reason field", "", "");
    }
  }
  EXPECT_TRUE(log_row) << "the log's `reason` field row moved";
  return mentions;
}

TEST(ReasonDocs, EveryCodeInTheTableIsDocumented) {
  std::set<std::string> documented;
  for (const Mention& mention : docs_mentions()) {
    documented.insert(mention.code);
  }
  for (const ReasonInfo& row : kReasons) {
    EXPECT_TRUE(documented.contains(std::string(row.code)))
        << row.code
        << " is in rules/reason.hpp but in none of the docs' reason lists (docs/clients.md, "
        << "docs/policy.md, docs/operations.md)";
  }
}

TEST(ReasonDocs, EveryCodeInTheDocsIsInTheTable) {
  for (const Mention& mention : docs_mentions()) {
    if (mention.code.ends_with("-*")) {
      const std::string prefix = mention.code.substr(0, mention.code.size() - 1);
      bool matched = false;
      for (const ReasonInfo& row : kReasons) {
        matched = matched || row.code.starts_with(prefix);
      }
      EXPECT_TRUE(matched) << mention.code << " (" << mention.section << ") matches no code";
      continue;
    }
    EXPECT_TRUE(find_reason(mention.code).has_value())
        << mention.code << " (" << mention.section << ") is not in rules/reason.hpp";
  }
}

// The client table lists each code under the status and error type its row gives it, and every
// code the gate replies for is there.
TEST(ReasonDocs, TheClientTableMatchesEachRowsReply) {
  std::set<std::string> in_client_table;
  for (const Mention& mention : docs_mentions()) {
    if (mention.section != "client table") {
      continue;
    }
    const auto reason = find_reason(mention.code);
    if (!reason) {
      continue;  // reported by EveryCodeInTheDocsIsInTheTable
    }
    in_client_table.insert(mention.code);
    const ReasonInfo& row = reason_info(*reason);
    if (row.status == 0) {
      EXPECT_EQ(mention.status, "—") << mention.code << " has no reply";
      EXPECT_EQ(mention.error, "—") << mention.code << " has no reply";
    } else {
      EXPECT_EQ(mention.status, std::to_string(row.status)) << mention.code;
      EXPECT_EQ(mention.error, row.proxy_status_error) << mention.code;
    }
  }
  for (const ReasonInfo& row : kReasons) {
    if (row.status != 0) {
      EXPECT_TRUE(in_client_table.contains(std::string(row.code)))
          << row.code << " gets a " << row.status << " but is not in the client table";
    }
  }
}

}  // namespace
}  // namespace sandgate::rules

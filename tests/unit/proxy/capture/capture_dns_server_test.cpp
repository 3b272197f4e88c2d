// The capture DNS server's logic (proxy/capture/dns_server): what each query is answered with
// and the decision it logs, with queries built by c-ares (an independent encoder) and answers
// read back by c-ares' parsers; the port-less decision of a name; the shared address book.
#include "proxy/capture/dns_server.hpp"

#include <ares.h>
#include <arpa/inet.h>
#include <arpa/nameser.h>
#include <gtest/gtest.h>
#include <netdb.h>

#include <string>
#include <thread>
#include <vector>

#include "rules/domain_set.hpp"
#include "rules/host.hpp"

namespace sandgate::capture {
namespace {

using Bytes = std::vector<std::uint8_t>;
constexpr std::array<std::uint8_t, 8> kPrefix = {0xfd, 1, 2, 3, 4, 5, 0, 0};

Bytes query(const char* name, int type, unsigned short id = 0x4242) {
  unsigned char* buffer = nullptr;
  int length = 0;
  EXPECT_EQ(ares_create_query(name, ns_c_in, type, id, 1, &buffer, &length, 0), ARES_SUCCESS);
  Bytes out(buffer, buffer + length);
  ares_free_string(buffer);
  return out;
}

int rcode(const Bytes& reply) { return reply.size() >= 4 ? (reply[3] & 0x0f) : -1; }
int answers(const Bytes& reply) { return reply.size() >= 8 ? (reply[6] << 8) | reply[7] : -1; }

std::string a_answer(const Bytes& reply) {
  hostent* host = nullptr;
  if (ares_parse_a_reply(reply.data(), static_cast<int>(reply.size()), &host, nullptr, nullptr) !=
      ARES_SUCCESS) {
    return "unreadable";
  }
  char text[INET_ADDRSTRLEN] = {};
  ::inet_ntop(AF_INET, host->h_addr_list[0], text, sizeof text);
  ares_free_hostent(host);
  return text;
}

std::string aaaa_answer(const Bytes& reply) {
  hostent* host = nullptr;
  if (ares_parse_aaaa_reply(reply.data(), static_cast<int>(reply.size()), &host, nullptr,
                            nullptr) != ARES_SUCCESS) {
    return "unreadable";
  }
  char text[INET6_ADDRSTRLEN] = {};
  ::inet_ntop(AF_INET6, host->h_addr_list[0], text, sizeof text);
  ares_free_hostent(host);
  return text;
}

rules::Policy policy_with(std::string_view blocklist, std::optional<std::string_view> allowlist,
                          rules::PolicyOptions options = {}) {
  std::vector<rules::LoadIssue> issues;
  auto blocked = rules::DomainSet::parse(blocklist, "blocked.txt", issues);
  std::optional<rules::DomainSet> allowed;
  if (allowlist) {
    allowed = rules::DomainSet::parse(*allowlist, "allow.txt", issues);
  }
  EXPECT_TRUE(issues.empty());
  return rules::Policy(std::move(options), std::move(blocked), std::move(allowed));
}

TEST(CaptureDnsServer, AnAllowedNameGetsItsSyntheticAddressesAndTheSameOnesAgain) {
  const auto policy = policy_with("evil.com\n", std::nullopt);
  AddressBook book(kPrefix, 16);
  const auto a = answer_query(query("Example.COM.", ns_t_a), policy, book);
  EXPECT_EQ(rcode(a.bytes), 0);
  EXPECT_EQ(a_answer(a.bytes), "198.18.0.1");
  ASSERT_TRUE(a.decision);
  EXPECT_EQ(a.decision->name, "example.com");
  EXPECT_EQ(a.decision->type, "A");
  EXPECT_EQ(a.decision->reason, rules::Reason::allowed);
  const auto aaaa = answer_query(query("example.com", ns_t_aaaa), policy, book);
  EXPECT_EQ(aaaa_answer(aaaa.bytes), "fd01:203:405::1");
  EXPECT_EQ(a_answer(answer_query(query("other.org", ns_t_a), policy, book).bytes), "198.18.0.2");
  EXPECT_EQ(a_answer(answer_query(query("example.com", ns_t_a), policy, book).bytes), "198.18.0.1");
  EXPECT_EQ(book.name_of(rules::parse_host("198.18.0.2")->address), "other.org");
}

TEST(CaptureDnsServer, ADeniedNameIsRefusedWithThePolicysReasonAndRule) {
  const auto policy = policy_with("evil.com\n", std::nullopt);
  AddressBook book(kPrefix, 16);
  const auto reply = answer_query(query("api.evil.com", ns_t_a), policy, book);
  EXPECT_EQ(rcode(reply.bytes), 5);  // REFUSED
  EXPECT_EQ(answers(reply.bytes), 0);
  ASSERT_TRUE(reply.decision);
  EXPECT_EQ(reply.decision->reason, rules::Reason::blocklist);
  EXPECT_EQ(reply.decision->rule, "blocked.txt:1 evil.com");
  EXPECT_NE(reply.decision->detail.find("blocked by the blocklist entry 'evil.com'"),
            std::string::npos);
  // Nothing was assigned for it.
  EXPECT_EQ(a_answer(answer_query(query("ok.org", ns_t_a), policy, book).bytes), "198.18.0.1");
  // Names the policy denies by themselves: this machine, metadata services.
  EXPECT_EQ(answer_query(query("localhost", ns_t_a), policy, book).decision->reason,
            rules::Reason::loopback);
  EXPECT_EQ(answer_query(query("metadata.google.internal", ns_t_a), policy, book).decision->reason,
            rules::Reason::metadata_address);
}

TEST(CaptureDnsServer, ANameToAskAboutIsAnsweredSoThatItsConnectionCanBeAsked) {
  rules::PolicyOptions options;
  options.unknown = rules::UnknownMode::ask;
  const auto policy = policy_with("evil.com\n", std::nullopt, options);
  AddressBook book(kPrefix, 16);
  const auto reply = answer_query(query("new.example.dev", ns_t_a), policy, book);
  EXPECT_EQ(rcode(reply.bytes), 0);
  EXPECT_EQ(a_answer(reply.bytes), "198.18.0.1");
  ASSERT_TRUE(reply.decision);
  EXPECT_EQ(reply.decision->reason, rules::Reason::allowed);
  EXPECT_NE(reply.decision->detail.find("held on a question"), std::string::npos);
  // The blocklist still wins over asking.
  EXPECT_EQ(rcode(answer_query(query("api.evil.com", ns_t_a), policy, book).bytes), 5);
}

TEST(CaptureDnsServer, ReportOnlyAnswersAReportableDenialAndKeepsTheEnforcedOnes) {
  const auto policy = policy_with("evil.com\n", std::nullopt);
  AddressBook book(kPrefix, 16);
  const auto reply = answer_query(query("api.evil.com", ns_t_a), policy, book, true);
  EXPECT_EQ(rcode(reply.bytes), 0);
  EXPECT_EQ(a_answer(reply.bytes), "198.18.0.1");
  ASSERT_TRUE(reply.decision);
  EXPECT_TRUE(reply.decision->would_deny);
  EXPECT_EQ(reply.decision->reason, rules::Reason::blocklist);
  EXPECT_EQ(reply.decision->rule, "blocked.txt:1 evil.com");
  // Enforced: without report-only, and for this machine and metadata names even with it.
  EXPECT_EQ(rcode(answer_query(query("api.evil.com", ns_t_a), policy, book, false).bytes), 5);
  const auto local = answer_query(query("localhost", ns_t_a), policy, book, true);
  EXPECT_EQ(rcode(local.bytes), 5);
  EXPECT_FALSE(local.decision->would_deny);
  EXPECT_EQ(
      rcode(answer_query(query("metadata.google.internal", ns_t_a), policy, book, true).bytes), 5);
}

TEST(CaptureDnsServer, OnlyAddressQueriesAreAnsweredAndHttpsIsEmpty) {
  const auto policy = policy_with("", std::nullopt);
  AddressBook book(kPrefix, 16);
  for (const int type : {ns_t_txt, ns_t_mx, ns_t_any, ns_t_ptr, ns_t_ns, ns_t_srv, ns_t_cname}) {
    const auto reply = answer_query(query("example.com", type), policy, book);
    EXPECT_EQ(rcode(reply.bytes), 5) << type;
    ASSERT_TRUE(reply.decision) << type;
    EXPECT_EQ(reply.decision->reason, rules::Reason::dns_refused) << type;
  }
  const auto https = answer_query(query("example.com", 65), policy, book);
  EXPECT_EQ(rcode(https.bytes), 0);
  EXPECT_EQ(answers(https.bytes), 0);
  EXPECT_FALSE(https.decision);  // the A and AAAA queries beside it carry the decision
  const auto svcb = answer_query(query("example.com", 64), policy, book);
  EXPECT_EQ(rcode(svcb.bytes), 0);
  EXPECT_EQ(answers(svcb.bytes), 0);
  // HTTPS for a denied name is refused like its addresses.
  const auto denied = answer_query(query("localhost", 65), policy, book);
  EXPECT_EQ(rcode(denied.bytes), 5);
}

TEST(CaptureDnsServer, NamesThatCarryDataAndMalformedQueriesAreRefused) {
  const auto policy = policy_with("", std::nullopt);
  AddressBook book(kPrefix, 16);
  const auto encoded = answer_query(
      query("nbswy3dpeb3w64tmmqqgc3tbnfzwc2lunbzg2ylflvqxiy3uo5xw4ztbmu.example.com", ns_t_a),
      policy, book);
  EXPECT_EQ(rcode(encoded.bytes), 5);
  EXPECT_EQ(encoded.decision->reason, rules::Reason::dns_refused);
  EXPECT_NE(encoded.decision->detail.find("budget"), std::string::npos);

  Bytes broken = query("example.com", ns_t_a);
  broken.resize(broken.size() - 3);  // the question cut short
  const auto formerr = answer_query(broken, policy, book);
  EXPECT_EQ(rcode(formerr.bytes), 1);  // FORMERR, to the query's ID
  EXPECT_EQ(formerr.bytes[0], 0x42);
  EXPECT_EQ(formerr.decision->reason, rules::Reason::dns_refused);
  Bytes response = query("example.com", ns_t_a);
  response[2] |= 0x80;  // QR: an answer, sent to the gate
  const auto unanswered = answer_query(response, policy, book);
  EXPECT_TRUE(unanswered.bytes.empty());  // an answer to an answer could bounce for ever
  ASSERT_TRUE(unanswered.decision);
  EXPECT_NE(unanswered.decision->detail.find("a response"), std::string::npos);
  const Bytes stub = {0x42};
  const auto nothing = answer_query(stub, policy, book);
  EXPECT_TRUE(nothing.bytes.empty());  // no header: nowhere to send an answer
  EXPECT_EQ(nothing.decision->reason, rules::Reason::dns_refused);
}

TEST(CaptureDnsServer, ANameIsAnsweredWhenSomePortIsAllowed) {
  // A port-specific entry leaves the name's other ports open: it resolves.
  const auto port_blocked = policy_with("pastebin.com:443\n", std::nullopt);
  std::uint16_t port = 0;
  EXPECT_TRUE(decide_name(port_blocked, *rules::parse_host("pastebin.com"), &port).allowed());
  EXPECT_EQ(port, 80);
  // An allowlist entry for SSH only: a git host still resolves.
  const auto ssh_only = policy_with("", std::string_view("github.com:22\n"));
  EXPECT_TRUE(decide_name(ssh_only, *rules::parse_host("github.com"), &port).allowed());
  EXPECT_EQ(port, 22);
  const auto denied = decide_name(ssh_only, *rules::parse_host("gitlab.com"), &port);
  EXPECT_EQ(denied.reason, rules::Reason::not_allowlisted);
  EXPECT_EQ(port, 443);  // the first candidate's decision is the one reported
  // SANDGATE_ALLOWED_PORTS: its ports are the candidates.
  rules::PolicyOptions options;
  options.allowed_ports = {8443};
  const auto custom = policy_with("example.com:8443\n", std::nullopt, options);
  EXPECT_FALSE(decide_name(custom, *rules::parse_host("example.com")).allowed());
  EXPECT_TRUE(decide_name(custom, *rules::parse_host("example.org")).allowed());
}

TEST(CaptureDnsServer, TheBookIsSharedSafelyBetweenThreads) {
  AddressBook book(kPrefix, 64);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&book, t] {
      for (int i = 0; i < 1000; ++i) {
        const auto pair = book.assign("name" + std::to_string((i + t) % 100) + ".test");
        (void)book.name_of(pair.v4);
      }
    });
  }
  for (auto& thread : threads) {
    thread.join();
  }
  // Full beyond 64 names: the least recently used gave their addresses up.
  EXPECT_EQ(book.name_of(book.assign("last.test").v4), "last.test");
}

}  // namespace
}  // namespace sandgate::capture

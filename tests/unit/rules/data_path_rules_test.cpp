// Issue 27's rules: the tolerant SSH identification watch, the one rule for HTTP head lines, and
// this machine's own addresses in the decision.
#include <gtest/gtest.h>

#include <string>
#include <string_view>

#include "rules/http_lines.hpp"
#include "rules/local_addresses.hpp"
#include "rules/policy.hpp"
#include "rules/ssh_identification.hpp"

namespace sandgate::rules {
namespace {

using Verdict = SshIdentificationWatch::Verdict;

Verdict judge(std::string_view bytes, bool end = false) {
  SshIdentificationWatch watch;
  Verdict verdict = watch.feed(bytes);
  return end ? watch.finish() : verdict;
}

// Issue 27: "\r\n" before "SSH-2.0-..." passed to a non-git host; Go's x/crypto/ssh skips it.
TEST(SshIdentification, LinesBeforeTheIdentificationAreSkipped) {
  EXPECT_EQ(judge("SSH-2.0-OpenSSH_9.2\r\n"), Verdict::ssh);
  EXPECT_EQ(judge("\r\nSSH-2.0-x\r\n"), Verdict::ssh);
  EXPECT_EQ(judge("\nSSH-2.0-x\r\n"), Verdict::ssh);
  EXPECT_EQ(judge("hello\r\nwho\nSSH-2.0-x"), Verdict::ssh);
  EXPECT_EQ(judge("\rS\rS\rH\r-2.0"), Verdict::ssh);  // Dropbear ignores every CR
  // Dropbear cuts a line at 255 bytes: what follows is read as a line of its own.
  EXPECT_EQ(judge(std::string(255, 'a') + "SSH-2.0-x"), Verdict::ssh);
  // Within Paramiko's 100 lines.
  std::string lines;
  for (int i = 0; i < 99; ++i) {
    lines += "x\r\n";
  }
  EXPECT_EQ(judge(lines + "SSH-2.0-x"), Verdict::ssh);
}

TEST(SshIdentification, OtherProtocolsAreNotSsh) {
  EXPECT_EQ(judge("GET / HTTP/1.1\r\nHost: a\r\n\r\n"), Verdict::undecided);  // watched on
  EXPECT_EQ(judge("GET / HTTP/1.1\r\nHost: a\r\n\r\n", true), Verdict::not_ssh);
  EXPECT_EQ(judge("xSSH-2.0"), Verdict::undecided);
  EXPECT_EQ(judge("xSSH-2.0", true), Verdict::not_ssh);
  std::string lines;
  for (std::size_t i = 0; i < SshIdentificationWatch::kMaxLines; ++i) {
    lines += "x\n";
  }
  EXPECT_EQ(judge(lines + "SSH-2.0-x"), Verdict::not_ssh);  // past the bound
  EXPECT_EQ(judge(std::string(SshIdentificationWatch::kMaxBytes, '\r') + "SSH-"), Verdict::not_ssh);
}

// A prefix of "SSH-" is held back, and only it; a client that stops there is taken for SSH.
TEST(SshIdentification, HoldsOnlyAPrefix) {
  SshIdentificationWatch watch;
  EXPECT_EQ(watch.feed("GET / HTTP/1.1\r\n"), Verdict::undecided);
  EXPECT_EQ(watch.hold(), 0u);
  EXPECT_EQ(watch.feed("\r\nS\rS"), Verdict::undecided);
  EXPECT_EQ(watch.hold(), 3u);  // "S\rS"
  EXPECT_EQ(watch.finish(), Verdict::ssh);
  SshIdentificationWatch other;
  other.feed("SS");
  other.feed("x");
  EXPECT_EQ(other.hold(), 0u);
}

TEST(HttpLines, EveryLineEndsInCrlf) {
  EXPECT_EQ(scan_head("GET / HTTP/1.1\r\nHost: a\r\n\r\nrest", 1024).status,
            HeadScan::Status::complete);
  EXPECT_EQ(scan_head("GET / HTTP/1.1\r\nHost: a\r\n\r\nrest", 1024).length, 27u);
  EXPECT_EQ(scan_head("GET / HTTP/1.1\r\nHost: a\r", 1024).status, HeadScan::Status::need_more);
  // Issue 27's smuggle: a bare LF ends a line for nginx and Python, not for the gate.
  const HeadScan lf = scan_head(
      "GET / HTTP/1.1\nHost: blocked.test\n\nGET / HTTP/1.1\r\nHost: origin.test\r\n\r\n", 1024);
  EXPECT_EQ(lf.status, HeadScan::Status::malformed);
  EXPECT_NE(lf.problem.find("bare LF"), std::string::npos) << lf.problem;
  EXPECT_EQ(scan_head("GET / HTTP/1.1\r\nHost: a\rb\r\n\r\n", 1024).status,
            HeadScan::Status::malformed);
  EXPECT_EQ(scan_head("HTTP/1.1 200 OK\r\nX: y\n\r\n", 1024).status, HeadScan::Status::malformed);
}

// Issue 27: a literal (or a resolved address) that is one of this machine's own non-loopback
// addresses reached a host service bound to 0.0.0.0.
TEST(LocalAddresses, RefusedLikeLoopback) {
  const auto lan = *parse_ipv6("::ffff:10.77.0.1");
  IpAddress v4;
  ASSERT_EQ(parse_ipv4("10.77.0.1", v4), Ipv4Parse::ok);
  this_machine().replace({v4});
  PolicyOptions options;
  options.allow_ip = true;
  const Policy policy(options, DomainSet{}, std::nullopt);
  const auto literal = parse_host("10.77.0.1");
  ASSERT_TRUE(literal);
  EXPECT_EQ(policy.decide(*literal, 80).reason, Reason::local_address);
  EXPECT_EQ(policy.decide_resolved(v4, 80).reason, Reason::local_address);
  EXPECT_EQ(policy.decide_resolved(lan, 80).reason, Reason::local_address);
  IpAddress elsewhere;
  ASSERT_EQ(parse_ipv4("10.77.0.2", elsewhere), Ipv4Parse::ok);
  EXPECT_TRUE(policy.decide_resolved(elsewhere, 80).allowed());
  ASSERT_TRUE(policy.enforced_anyway(*literal, 80));
  EXPECT_EQ(policy.enforced_anyway(*literal, 80)->reason, Reason::local_address);
  // Lifted with loopback.
  options.block_loopback = false;
  const Policy open(options, DomainSet{}, std::nullopt);
  EXPECT_TRUE(open.decide_resolved(v4, 80).allowed());
  this_machine().replace({});
  EXPECT_TRUE(policy.decide_resolved(v4, 80).allowed());
}

}  // namespace
}  // namespace sandgate::rules

// Table-driven tests for rules/policy: the decision for every case goose tested, for every bypass
// category of the landscape's "Security pitfalls" (taken through parse_authority() exactly as the
// proxy does), for sandgate's own options (allowlist, ports, private networks, metadata), for
// addresses that names resolve to, and for the stable reason codes and sentences.
#include "rules/policy.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace sandgate::rules {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

// ---- Helpers ----

// PolicyOptions with chainable setters, so a table row reads as the options it changes.
struct Opts {
  PolicyOptions o;

  Opts& block_loopback(bool v) {
    o.block_loopback = v;
    return *this;
  }
  Opts& allow_ip(bool v = true) {
    o.allow_ip = v;
    return *this;
  }
  Opts& allow_ssh(bool v) {
    o.allow_ssh = v;
    return *this;
  }
  Opts& ssh_all_hosts(bool v = true) {
    o.ssh_all_hosts = v;
    return *this;
  }
  Opts& git_hosts(std::vector<std::string> v) {
    o.git_hosts = std::move(v);
    return *this;
  }
  Opts& ssh_ports(std::vector<std::uint16_t> v) {
    o.ssh_ports = std::move(v);
    return *this;
  }
  Opts& allowed_ports(std::vector<std::uint16_t> v) {
    o.allowed_ports = std::move(v);
    return *this;
  }
  Opts& block_private(bool v = true) {
    o.block_private = v;
    return *this;
  }
  Opts& allow_metadata(bool v = true) {
    o.allow_metadata = v;
    return *this;
  }
};

// Rules files are parsed exactly as the loader does; a test list must load without issues.
DomainSet load_clean(std::string_view text, std::string_view source) {
  std::vector<LoadIssue> issues;
  DomainSet set = DomainSet::parse(text, source, issues);
  for (const LoadIssue& issue : issues) {
    ADD_FAILURE() << source << ":" << issue.line << " '" << issue.text << "': " << issue.message;
  }
  return set;
}

Policy make_policy(const Opts& opts, std::string_view blocked = "",
                   std::optional<std::string_view> allowed = std::nullopt) {
  std::optional<DomainSet> allowlist;
  if (allowed) {
    allowlist = load_clean(*allowed, "allow.txt");
  }
  return Policy(opts.o, load_clean(blocked, "blocked.txt"), std::move(allowlist));
}

// What the proxy does with a CONNECT target: parse it strictly, then decide. A target that does
// not parse is denied as invalid-host (what `sandgate check` and the session both report).
struct Outcome {
  std::string code;   // reason code
  std::string rule;   // "file:line" of the deciding rule, or "" when none
  std::string entry;  // the rule as written, or ""
  Decision decision;
  std::optional<HostError> parse_error;
};

Outcome decide_text(const Policy& policy, std::string_view authority) {
  Outcome out;
  auto parsed = parse_authority(authority);
  if (!parsed) {
    out.code = std::string(reason_code(Reason::invalid_host));
    out.parse_error = parsed.error();
    out.decision =
        Decision{Verdict::deny, Reason::invalid_host, std::nullopt, AddressClass::public_address};
    return out;
  }
  out.decision = policy.decide(parsed->host, parsed->port);
  out.code = std::string(reason_code(out.decision.reason));
  if (out.decision.rule) {
    out.rule =
        std::string(out.decision.rule->source) + ":" + std::to_string(out.decision.rule->line);
    out.entry = std::string(out.decision.rule->entry);
  }
  return out;
}

Host host_of(std::string_view text) {
  auto host = parse_host(text);
  EXPECT_TRUE(host.has_value()) << "test host does not parse: " << text;
  return host ? *host : Host{};
}

IpAddress address_of(std::string_view text) { return host_of(text).address; }

// A row: options, the CONNECT target, and what must come out.
struct Row {
  std::string_view target;
  Opts opts;
  std::string_view code;
  std::string_view rule = "";  // "blocked.txt:3" or "" for no rule
};

// Runs a table against one blocklist (and allowlist, if given).
void run_table(const std::vector<Row>& rows, std::string_view blocked = "",
               std::optional<std::string_view> allowed = std::nullopt) {
  for (const Row& row : rows) {
    SCOPED_TRACE(::testing::Message() << "target '" << row.target << "'");
    const Policy policy = make_policy(row.opts, blocked, allowed);
    const Outcome out = decide_text(policy, row.target);
    EXPECT_EQ(out.code, row.code);
    EXPECT_EQ(out.rule, row.rule);
    EXPECT_EQ(out.decision.allowed(), row.code == "allowed");
    EXPECT_EQ(out.decision.verdict == Verdict::allow, row.code == "allowed");
  }
}

Opts defaults() { return Opts{}; }

// Reason codes: pinned in reason_test.cpp (the table is rules/reason.hpp).

TEST(PolicyRuleText, FileLineAndEntryOrNothing) {
  Decision none;
  EXPECT_EQ(rule_text(none), "");
  Decision listed;
  listed.rule = RuleMatch{"/etc/blocked.txt", 7, "*.evil.test", {}};
  EXPECT_EQ(rule_text(listed), "/etc/blocked.txt:7 *.evil.test");
}

TEST(PolicyDefaults, OptionsMatchTheDocumentedDefaults) {
  const PolicyOptions o;
  EXPECT_TRUE(o.block_loopback);  // goose's default was false; sandgate's is stricter
  EXPECT_FALSE(o.allow_ip);
  EXPECT_TRUE(o.allow_ssh);
  EXPECT_FALSE(o.ssh_all_hosts);
  EXPECT_EQ(o.git_hosts, (std::vector<std::string>{"github.com", "gitlab.com", "bitbucket.org",
                                                   "ssh.dev.azure.com"}));
  EXPECT_EQ(o.ssh_ports, (std::vector<std::uint16_t>{22, 2222, 7999}));
  EXPECT_TRUE(o.allowed_ports.empty());
  EXPECT_FALSE(o.block_private);
  EXPECT_FALSE(o.allow_metadata);
}

// ---- goose's cases ----

TEST(PolicyGoose, LoopbackIsBlockedByDefaultAndAllowedWhenBlockLoopbackIsFalse) {
  run_table({
      // sandgate's default blocks loopback (goose allowed it unless GOOSE_SANDBOX_BLOCK_LOOPBACK).
      {"localhost:80", defaults(), "loopback"},
      {"127.0.0.1:80", defaults(), "loopback"},
      {"[::1]:80", defaults(), "loopback"},
      {"localhost:443", Opts{}.block_loopback(true), "loopback"},
      // Loopback is checked first: before the IP rule, even when IPs are allowed.
      {"127.0.0.1:8080", Opts{}.allow_ip(), "loopback"},
      // GOOSE_SANDBOX_BLOCK_LOOPBACK=false: loopback names pass; literals still meet the IP rule.
      {"localhost:80", Opts{}.block_loopback(false), "allowed"},
      {"api.localhost:80", Opts{}.block_loopback(false), "allowed"},
      {"127.0.0.1:80", Opts{}.block_loopback(false), "ip-address"},
      {"[::1]:80", Opts{}.block_loopback(false), "ip-address"},
      {"127.0.0.1:80", Opts{}.block_loopback(false).allow_ip(), "allowed"},
      {"[::1]:80", Opts{}.block_loopback(false).allow_ip(), "allowed"},
      {"0.0.0.0:80", Opts{}.block_loopback(false).allow_ip(), "allowed"},
      // A loopback destination still meets the SSH rule when loopback is allowed.
      {"localhost:22", Opts{}.block_loopback(false), "ssh-non-git-host"},
  });
}

TEST(PolicyGoose, IpLiteralsAreDeniedUnlessAllowIp) {
  run_table({
      {"8.8.8.8:443", defaults(), "ip-address"},
      {"1.1.1.1:80", defaults(), "ip-address"},
      {"[2606:4700:4700::1111]:443", defaults(), "ip-address"},
      {"8.8.8.8:443", Opts{}.allow_ip(), "allowed"},
      {"[2606:4700:4700::1111]:443", Opts{}.allow_ip(), "allowed"},
      {"example.com:443", defaults(), "allowed"},
  });
}

TEST(PolicyGoose, BlocklistMatchesTheHostAndEveryParentDomain) {
  constexpr std::string_view kBlocked =
      "# goose's bundled examples\n"
      "evil.com\n"
      "pastebin.com\n"
      "transfer.sh\n"
      "webhook.site\n";
  run_table(
      {
          {"evil.com:443", defaults(), "blocklist", "blocked.txt:2"},
          {"api.evil.com:443", defaults(), "blocklist", "blocked.txt:2"},
          {"a.b.c.evil.com:80", defaults(), "blocklist", "blocked.txt:2"},
          {"pastebin.com:443", defaults(), "blocklist", "blocked.txt:3"},
          {"transfer.sh:443", defaults(), "blocklist", "blocked.txt:4"},
          {"x.webhook.site:443", defaults(), "blocklist", "blocked.txt:5"},
          // A suffix that is not at a label boundary is another domain.
          {"notevil.com:443", defaults(), "allowed"},
          {"evil.com.example:443", defaults(), "allowed"},
          {"evil.co:443", defaults(), "allowed"},
          {"com:443", defaults(), "allowed"},
          // The blocklist applies on every port, SSH ports included (it comes first).
          {"evil.com:22", defaults(), "blocklist", "blocked.txt:2"},
          {"evil.com:22", Opts{}.ssh_all_hosts(), "blocklist", "blocked.txt:2"},
      },
      kBlocked);
}

TEST(PolicyGoose, SshPortsReachOnlyGitHosts) {
  run_table({
      // Default git hosts, on each SSH port.
      {"github.com:22", defaults(), "allowed"},
      {"github.com:2222", defaults(), "allowed"},
      {"github.com:7999", defaults(), "allowed"},
      {"gitlab.com:22", defaults(), "allowed"},
      {"bitbucket.org:7999", defaults(), "allowed"},
      {"ssh.dev.azure.com:22", defaults(), "allowed"},
      // Equal, or a subdomain.
      {"ssh.github.com:22", defaults(), "allowed"},
      {"altssh.gitlab.com:2222", defaults(), "allowed"},
      // Not a git host: a suffix without a label boundary, a git host as a prefix, a parent.
      {"example.com:22", defaults(), "ssh-non-git-host"},
      {"github.com.evil.com:22", defaults(), "ssh-non-git-host"},
      {"evilgithub.com:22", defaults(), "ssh-non-git-host"},
      {"notgitlab.com:2222", defaults(), "ssh-non-git-host"},
      {"dev.azure.com:22", defaults(), "ssh-non-git-host"},
      {"azure.com:7999", defaults(), "ssh-non-git-host"},
      {"github.co:22", defaults(), "ssh-non-git-host"},
      // Other ports are not SSH ports.
      {"example.com:443", defaults(), "allowed"},
      {"example.com:23", defaults(), "allowed"},
      {"example.com:2223", defaults(), "allowed"},
      // An allowed IP literal is no git host: it has no name to match.
      {"140.82.112.3:22", Opts{}.allow_ip(), "ssh-non-git-host"},
      {"140.82.112.3:22", Opts{}.allow_ip().ssh_all_hosts(), "allowed"},
  });
}

TEST(PolicyGoose, SshDisabledDeniesEverySshPortToEveryHost) {
  run_table({
      {"github.com:22", Opts{}.allow_ssh(false), "ssh-disabled"},
      {"gitlab.com:2222", Opts{}.allow_ssh(false), "ssh-disabled"},
      {"bitbucket.org:7999", Opts{}.allow_ssh(false), "ssh-disabled"},
      {"example.com:22", Opts{}.allow_ssh(false), "ssh-disabled"},
      // ssh_all_hosts does not override ssh disabled.
      {"example.com:22", Opts{}.allow_ssh(false).ssh_all_hosts(), "ssh-disabled"},
      {"github.com:443", Opts{}.allow_ssh(false), "allowed"},
  });
}

TEST(PolicyGoose, CustomGitHostsReplaceTheDefaults) {
  const Opts custom = Opts{}.git_hosts({"git.corp.example", "code.example.org"});
  run_table({
      {"git.corp.example:22", custom, "allowed"},
      {"eu.git.corp.example:22", custom, "allowed"},
      {"code.example.org:7999", custom, "allowed"},
      {"github.com:22", custom, "ssh-non-git-host"},
      {"gitlab.com:2222", custom, "ssh-non-git-host"},
      {"corp.example:22", custom, "ssh-non-git-host"},
      {"github.com:443", custom, "allowed"},
  });
}

TEST(PolicyGoose, SshAllHostsLiftsTheGitHostRestriction) {
  run_table({
      {"example.com:22", Opts{}.ssh_all_hosts(), "allowed"},
      {"github.com.evil.com:2222", Opts{}.ssh_all_hosts(), "allowed"},
      {"example.com:7999", Opts{}.ssh_all_hosts(), "allowed"},
  });
}

TEST(PolicyGoose, SshPortsAreConfigurable) {
  const Opts ports = Opts{}.ssh_ports({2200});
  run_table({
      {"example.com:2200", ports, "ssh-non-git-host"},
      {"github.com:2200", ports, "allowed"},
      {"example.com:22", ports, "allowed"},
      {"example.com:7999", ports, "allowed"},
      {"example.com:22", Opts{}.ssh_ports({}), "allowed"},
  });
}

TEST(PolicySsh, DecideSshAppliesTheSshRulesWhateverThePort) {
  // decide_ssh() is asked when a client turns out to speak SSH on a port that is no SSH port
  // (SSH to any host on 443 was goose's weakness 3).
  struct Case {
    std::string_view host;
    Opts opts;
    std::string_view code;
  };
  const std::vector<Case> cases = {
      {"github.com", defaults(), "allowed"},
      {"ssh.github.com", defaults(), "allowed"},
      {"altssh.gitlab.com", defaults(), "allowed"},
      {"ssh.dev.azure.com", defaults(), "allowed"},
      {"example.com", defaults(), "ssh-non-git-host"},
      {"github.com.evil.com", defaults(), "ssh-non-git-host"},
      {"evilgithub.com", defaults(), "ssh-non-git-host"},
      {"140.82.112.3", defaults(), "ssh-non-git-host"},
      {"2606:4700::1", defaults(), "ssh-non-git-host"},
      {"example.com", Opts{}.ssh_all_hosts(), "allowed"},
      {"140.82.112.3", Opts{}.ssh_all_hosts(), "allowed"},
      {"github.com", Opts{}.allow_ssh(false), "ssh-disabled"},
      {"example.com", Opts{}.allow_ssh(false).ssh_all_hosts(), "ssh-disabled"},
      {"github.com", Opts{}.git_hosts({"git.corp.example"}), "ssh-non-git-host"},
      {"eu.git.corp.example", Opts{}.git_hosts({"git.corp.example"}), "allowed"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.host);
    const Decision d = make_policy(c.opts).decide_ssh(host_of(c.host));
    EXPECT_EQ(reason_code(d.reason), c.code);
    EXPECT_EQ(d.allowed(), c.code == "allowed");
  }
}

TEST(PolicySsh, SshOnATlsPortIsNotExplainedAsAnSshPort) {
  const Policy policy = make_policy(defaults());
  const Host host = host_of("example.com");
  const Decision d = policy.decide_ssh(host);
  ASSERT_EQ(d.reason, Reason::ssh_non_git_host);
  const std::string sentence = policy.explain(d, host, 443);
  EXPECT_THAT(sentence, HasSubstr("example.com is not a git host"));
  EXPECT_THAT(sentence, Not(HasSubstr("port 443 is an SSH port")));
  EXPECT_THAT(sentence, HasSubstr("the client speaks SSH on port 443"));
}

// ---- Bypass categories: every spelling parses to the address it names ----

TEST(PolicyBypass, AlternateIpv4SpellingsOfLoopbackAreLoopback) {
  for (std::string_view target : {
           "127.0.0.1:80",
           "127.1:80",
           "127.0.1:80",
           "2130706433:80",
           "0x7f000001:80",
           "0x7f.1:80",
           "0X7F.0.0.1:80",
           "0177.0.0.1:80",
           "0177.1:80",
           "017700000001:80",
           "127.0.0.1.:80",
           "127.255.255.254:80",
           "127.0.0.2:443",
           "0x7f.0x0.0x0.0x1:80",
       }) {
    SCOPED_TRACE(target);
    for (const Opts& opts : {defaults(), Opts{}.allow_ip()}) {
      const Outcome out = decide_text(make_policy(opts), target);
      EXPECT_EQ(out.code, "loopback");
      EXPECT_EQ(out.decision.address_class, AddressClass::loopback);
    }
    // With loopback allowed the literal falls to the IP rule, never to "allowed" by accident.
    EXPECT_EQ(decide_text(make_policy(Opts{}.block_loopback(false)), target).code, "ip-address");
  }
}

TEST(PolicyBypass, AlternateSpellingsOfMetadataAreMetadata) {
  for (std::string_view target : {
           "169.254.169.254:80",
           "2852039166:80",
           "0xa9fea9fe:80",
           "0xa9.0xfe.0xa9.0xfe:80",
           "0251.0376.0251.0376:80",
           "169.254.43518:80",
           "169.16689662:80",
           "[::ffff:169.254.169.254]:80",
           "[::ffff:a9fe:a9fe]:80",
           "[64:ff9b::a9fe:a9fe]:80",
           "[64:ff9b::169.254.169.254]:80",
           "[2002:a9fe:a9fe::]:80",
           "[fd00:ec2::254]:80",
           "100.100.100.200:80",
           "169.254.170.2:80",
       }) {
    SCOPED_TRACE(target);
    // Without allow_ip, any literal is an IP literal first.
    EXPECT_EQ(decide_text(make_policy(defaults()), target).code, "ip-address");
    const Outcome out = decide_text(make_policy(Opts{}.allow_ip()), target);
    EXPECT_EQ(out.code, "metadata-address");
    EXPECT_EQ(out.decision.address_class, AddressClass::metadata);
    // The opt-out lets it through.
    EXPECT_EQ(decide_text(make_policy(Opts{}.allow_ip().allow_metadata()), target).code, "allowed");
  }
}

TEST(PolicyBypass, Ipv6FormsEmbeddingLoopbackAreLoopback) {
  for (std::string_view target : {
           "[::ffff:127.0.0.1]:80",  // IPv4-mapped, dotted
           "[::ffff:7f00:1]:80",     // IPv4-mapped, hex
           "[0:0:0:0:0:ffff:127.0.0.1]:80",
           "[::127.0.0.1]:80",  // IPv4-compatible
           "[::7f00:1]:80",
           "[64:ff9b::127.0.0.1]:80",  // NAT64 well-known prefix
           "[64:ff9b::7f00:1]:80",
           "[64:ff9b:1::7f00:1]:80",  // NAT64 local-use prefix
           "[2002:7f00:1::]:80",      // 6to4
           "[2002:7f00:1:1::1]:80",
           "[2001:0:4136:e378:8000:63bf:80ff:fffe]:80",  // Teredo, client 127.0.0.1 inverted
           "[::1]:80",
           "[0:0:0:0:0:0:0:1]:80",
           "[::0001]:80",
       }) {
    SCOPED_TRACE(target);
    const Outcome out = decide_text(make_policy(Opts{}.allow_ip()), target);
    EXPECT_EQ(out.code, "loopback");
    EXPECT_EQ(out.decision.address_class, AddressClass::loopback);
    EXPECT_EQ(decide_text(make_policy(defaults()), target).code, "loopback");
  }
}

TEST(PolicyBypass, Ipv6FormsEmbeddingPrivateAddressesArePrivate) {
  for (std::string_view target : {
           "[::ffff:10.0.0.1]:80",
           "[::ffff:192.168.1.1]:80",
           "[64:ff9b::a00:1]:80",
           "[2002:c0a8:101::]:80",
           "[::ffff:172.16.0.1]:80",
       }) {
    SCOPED_TRACE(target);
    EXPECT_EQ(decide_text(make_policy(Opts{}.allow_ip()), target).code, "allowed");
    const Outcome out = decide_text(make_policy(Opts{}.allow_ip().block_private()), target);
    EXPECT_EQ(out.code, "private-address");
    EXPECT_EQ(out.decision.address_class, AddressClass::private_network);
  }
}

TEST(PolicyBypass, UnspecifiedAddressesAreThisMachine) {
  for (std::string_view target :
       {"0.0.0.0:80", "0:80", "0.0.0.0.:80", "0x0:80", "0.0.0.1:80", "[::]:80", "[0::0]:80"}) {
    SCOPED_TRACE(target);
    for (const Opts& opts : {defaults(), Opts{}.allow_ip(), Opts{}.allow_ip().allow_metadata()}) {
      const Outcome out = decide_text(make_policy(opts), target);
      EXPECT_EQ(out.code, "loopback");
      EXPECT_EQ(out.decision.address_class, AddressClass::unspecified);
    }
  }
}

TEST(PolicyBypass, LocalhostNamesAreLoopback) {
  run_table({
      {"localhost:80", defaults(), "loopback"},
      {"LOCALHOST:80", defaults(), "loopback"},
      {"localhost.:80", defaults(), "loopback"},
      {"LocalHost.:443", defaults(), "loopback"},
      {"app.localhost:3000", defaults(), "loopback"},
      {"a.b.localhost:3000", defaults(), "loopback"},
      {"API.LOCALHOST.:3000", defaults(), "loopback"},
      // Only a `localhost` label at the end makes a name loopback.
      {"localhost.example.com:443", defaults(), "allowed"},
      {"notlocalhost:443", defaults(), "allowed"},
      {"mylocalhost.com:443", defaults(), "allowed"},
      {"localhostx:443", defaults(), "allowed"},
  });
  EXPECT_TRUE(is_localhost_name("localhost"));
  EXPECT_TRUE(is_localhost_name("x.localhost"));
  EXPECT_FALSE(is_localhost_name("xlocalhost"));
  EXPECT_FALSE(is_localhost_name("localhost.com"));
  EXPECT_FALSE(is_localhost_name(""));
  // Loopback wins over a blocklist entry for the same name: it is checked first.
  run_table({{"localhost:80", defaults(), "loopback"}}, "localhost\n");
  run_table({{"localhost:80", Opts{}.block_loopback(false), "blocklist", "blocked.txt:1"}},
            "localhost\n");
}

TEST(PolicyBypass, CaseAndTrailingDotMatchTheBlocklist) {
  constexpr std::string_view kBlocked =
      "Evil.COM.\n"  // entries are normalised too
      "tracker.example\n";
  run_table(
      {
          {"evil.com:443", defaults(), "blocklist", "blocked.txt:1"},
          {"EVIL.COM:443", defaults(), "blocklist", "blocked.txt:1"},
          {"evil.com.:443", defaults(), "blocklist", "blocked.txt:1"},
          {"Api.Evil.Com.:443", defaults(), "blocklist", "blocked.txt:1"},
          {"TRACKER.EXAMPLE.:80", defaults(), "blocklist", "blocked.txt:2"},
          // Two trailing dots are no host at all, never a way around the list.
          {"evil.com..:443", defaults(), "invalid-host"},
          {".evil.com:443", defaults(), "invalid-host"},
      },
      kBlocked);
}

TEST(PolicyBypass, IdnAndPunycodeAreOneNameInTheBlocklist) {
  // évil.com is xn--vil-9la.com; bücher.example is xn--bcher-kva.example.
  constexpr std::string_view kBlocked =
      "ÉVIL.com.\n"
      "xn--bcher-kva.example\n";
  run_table(
      {
          {"évil.com:443", defaults(), "blocklist", "blocked.txt:1"},
          {"xn--vil-9la.com:443", defaults(), "blocklist", "blocked.txt:1"},
          {"XN--VIL-9LA.COM.:443", defaults(), "blocklist", "blocked.txt:1"},
          {"api.évil.com:443", defaults(), "blocklist", "blocked.txt:1"},
          {"e\xcc\x81vil.com:443", defaults(), "blocklist", "blocked.txt:1"},  // decomposed é
          {"bücher.example:443", defaults(), "blocklist", "blocked.txt:2"},
          {"BÜCHER.example:443", defaults(), "blocklist", "blocked.txt:2"},
          {"xn--bcher-kva.example:443", defaults(), "blocklist", "blocked.txt:2"},
          // Look-alikes are other names.
          {"evil.com:443", defaults(), "allowed"},
          {"xn--vil-bma.com:443", defaults(), "allowed"},
          {"bucher.example:443", defaults(), "allowed"},
      },
      kBlocked);
  // The rule is reported as written.
  const Outcome out = decide_text(make_policy(defaults(), kBlocked), "xn--vil-9la.com:443");
  EXPECT_EQ(out.entry, "ÉVIL.com.");
}

TEST(PolicyBypass, AuthoritiesThatSmuggleAHostAreRejectedAtParse) {
  struct Case {
    std::string_view target;
    HostError error;
  };
  const std::vector<Case> cases = {
      {"evil.com@github.com:22", HostError::userinfo},
      {"user:pass@github.com:22", HostError::userinfo},
      {"github.com/.attacker.example:22", HostError::path},
      {"github.com\\.attacker.example:22", HostError::path},
      {"github.com?.attacker.example:22", HostError::path},
      {"github.com#.attacker.example:22", HostError::path},
      {std::string_view("github.com\0.evil.com:22", 23), HostError::nul},
      {"github.com%00.evil.com:22", HostError::percent_escape},
      {"github.com%2f.evil.com:22", HostError::percent_escape},
      {"github.com .evil.com:22", HostError::whitespace},
      {"github.com\t:22", HostError::whitespace},
      {"github.com\r\n:22", HostError::whitespace},
      {"github.com:022", HostError::bad_port},
      {"github.com:0", HostError::bad_port},
      {"github.com:65536", HostError::bad_port},
      {"github.com:22a", HostError::bad_port},
      {"github.com:+22", HostError::bad_port},
      {"github.com:", HostError::missing_port},
      {"github.com", HostError::missing_port},
      {":22", HostError::empty},
      {"", HostError::empty},
      {"::1:22", HostError::bad_character},  // unbracketed IPv6
      {"[::1:22", HostError::unbalanced_bracket},
      {"[::zz]:22", HostError::bad_ipv6},
      {"1.2.3.256:80", HostError::bad_ipv4},
      {"example.123:80", HostError::bad_ipv4},
      {"-github.com:22", HostError::bad_hyphen},
      {"git*hub.com:22", HostError::bad_character},
      // Full-width look-alikes map to the ASCII they imitate, and are refused like it.
      {"evil.com\xef\xbc\xa0github.com:22", HostError::userinfo},       // U+FF20 '@'
      {"github.com\xef\xbc\x8f.attacker.example:22", HostError::path},  // U+FF0F '/'
      {"github.com\xef\xbc\x9a"
       "22",
       HostError::bad_character},  // U+FF1A ':'
  };
  const Policy policy = make_policy(Opts{}.allow_ip().ssh_all_hosts().block_loopback(false));
  for (const Case& c : cases) {
    SCOPED_TRACE(::testing::Message()
                 << "target of " << c.target.size() << " bytes: '" << std::string(c.target) << "'");
    const Outcome out = decide_text(policy, c.target);
    EXPECT_EQ(out.code, "invalid-host");
    ASSERT_TRUE(out.parse_error.has_value());
    EXPECT_EQ(*out.parse_error, c.error)
        << "got '" << to_string(*out.parse_error) << "', want '" << to_string(c.error) << "'";
  }
}

// ---- Allowlist mode ----

TEST(PolicyAllowlist, OnlyAllowlistedHostsPassAndTheBlocklistWins) {
  constexpr std::string_view kBlocked = "bad.example.com\n";
  constexpr std::string_view kAllowed =
      "# corporate allowlist\n"
      "example.com\n"
      "*.api.example.net\n"
      "pypi.org:443\n"
      "github.com\n";
  run_table(
      {
          {"example.com:443", defaults(), "allowed", "allow.txt:2"},
          {"www.example.com:443", defaults(), "allowed", "allow.txt:2"},
          {"v1.api.example.net:443", defaults(), "allowed", "allow.txt:3"},
          {"pypi.org:443", defaults(), "allowed", "allow.txt:4"},
          {"github.com:22", defaults(), "allowed", "allow.txt:5"},
          // Not on the list.
          {"pypi.org:80", defaults(), "not-allowlisted"},
          {"api.example.net:443", defaults(), "not-allowlisted"},  // `*.` is subdomains only
          {"notexample.com:443", defaults(), "not-allowlisted"},
          {"evil.com:443", defaults(), "not-allowlisted"},
          // The blocklist wins over an allowlist entry that covers the same host.
          {"bad.example.com:443", defaults(), "blocklist", "blocked.txt:1"},
          {"x.bad.example.com:443", defaults(), "blocklist", "blocked.txt:1"},
          // Rules that come before the allowlist still apply to allowlisted hosts.
          {"example.com:22", defaults(), "ssh-non-git-host"},
          {"example.com:8080", Opts{}.allowed_ports({443}), "port-not-allowed"},
          {"8.8.8.8:443", defaults(), "ip-address"},
          {"8.8.8.8:443", Opts{}.allow_ip(), "not-allowlisted"},
          {"localhost:443", defaults(), "loopback"},
      },
      kBlocked, kAllowed);
}

TEST(PolicyAllowlist, AnEmptyAllowlistAllowsNothingAndNoAllowlistAllowsEverything) {
  run_table({{"example.com:443", defaults(), "not-allowlisted"}}, "", "# nothing yet\n");
  run_table({{"example.com:443", defaults(), "allowed"}}, "", std::nullopt);
}

TEST(PolicyAllowlist, IpEntriesMatchAnyIpSpelling) {
  run_table({{"8.8.8.8:443", Opts{}.allow_ip(), "allowed", "allow.txt:1"},
             {"134744072:443", Opts{}.allow_ip(), "allowed", "allow.txt:1"},
             {"8.8.4.4:443", Opts{}.allow_ip(), "not-allowlisted"}},
            "", "8.8.8.8\n");
}

// ---- Ports ----

TEST(PolicyPorts, AllowedPortsRestrictEveryHost) {
  const Opts web = Opts{}.allowed_ports({80, 443});
  run_table(
      {
          {"example.com:443", web, "allowed"},
          {"example.com:80", web, "allowed"},
          {"example.com:8443", web, "port-not-allowed"},
          {"example.com:1", web, "port-not-allowed"},
          {"example.com:65535", web, "port-not-allowed"},
          // Port policy comes before the SSH rule: a git host on 22 is not an allowed port.
          {"github.com:22", web, "port-not-allowed"},
          {"github.com:22", Opts{}.allowed_ports({22, 443}), "allowed"},
          {"example.com:22", Opts{}.allowed_ports({22, 443}), "ssh-non-git-host"},
          // The blocklist comes before the port policy.
          {"evil.com:8443", web, "blocklist", "blocked.txt:1"},
          // Loopback comes before everything.
          {"localhost:8443", web, "loopback"},
          {"example.com:65535", Opts{}.allowed_ports({65535}), "allowed"},
      },
      "evil.com\n");
}

TEST(PolicyPorts, PortScopedBlocklistEntries) {
  constexpr std::string_view kBlocked =
      "pastebin.com:443\n"
      "transfer.sh:80,443\n";
  run_table(
      {
          {"pastebin.com:443", defaults(), "blocklist", "blocked.txt:1"},
          {"www.pastebin.com:443", defaults(), "blocklist", "blocked.txt:1"},
          {"pastebin.com:80", defaults(), "allowed"},
          {"transfer.sh:80", defaults(), "blocklist", "blocked.txt:2"},
          {"transfer.sh:443", defaults(), "blocklist", "blocked.txt:2"},
          {"transfer.sh:8080", defaults(), "allowed"},
      },
      kBlocked);
}

TEST(PolicyPorts, PortZeroIsInvalid) {
  const Policy policy = make_policy(Opts{}.ssh_all_hosts());
  const Decision d = policy.decide(host_of("example.com"), 0);
  EXPECT_FALSE(d.allowed());
  EXPECT_EQ(d.reason, Reason::invalid_host);
}

// ---- Address classes of allowed IP literals ----

TEST(PolicyAddressClass, AllowedIpLiteralsAreHeldToTheAddressRules) {
  struct Case {
    std::string_view target;
    AddressClass cls;
    std::string_view by_default;     // allow_ip
    std::string_view with_private;   // allow_ip + block_private
    std::string_view with_metadata;  // allow_ip + allow_metadata
  };
  const std::vector<Case> cases = {
      {"10.0.0.1:80", AddressClass::private_network, "allowed", "private-address", "allowed"},
      {"172.16.0.1:80", AddressClass::private_network, "allowed", "private-address", "allowed"},
      {"172.31.255.255:80", AddressClass::private_network, "allowed", "private-address", "allowed"},
      {"192.168.1.1:80", AddressClass::private_network, "allowed", "private-address", "allowed"},
      {"100.64.0.1:80", AddressClass::carrier_nat, "allowed", "private-address", "allowed"},
      {"[fd12:3456::1]:80", AddressClass::unique_local, "allowed", "private-address", "allowed"},
      {"[fc00::1]:80", AddressClass::unique_local, "allowed", "private-address", "allowed"},
      {"169.254.1.1:80", AddressClass::link_local, "metadata-address", "metadata-address",
       "allowed"},
      {"[fe80::1]:80", AddressClass::link_local, "metadata-address", "metadata-address", "allowed"},
      {"169.254.169.254:80", AddressClass::metadata, "metadata-address", "metadata-address",
       "allowed"},
      {"224.0.0.1:80", AddressClass::multicast, "reserved-address", "reserved-address",
       "reserved-address"},
      {"239.255.255.250:1900", AddressClass::multicast, "reserved-address", "reserved-address",
       "reserved-address"},
      {"[ff02::1]:80", AddressClass::multicast, "reserved-address", "reserved-address",
       "reserved-address"},
      {"255.255.255.255:80", AddressClass::reserved, "reserved-address", "reserved-address",
       "reserved-address"},
      {"240.0.0.1:80", AddressClass::reserved, "reserved-address", "reserved-address",
       "reserved-address"},
      {"192.0.2.1:80", AddressClass::reserved, "reserved-address", "reserved-address",
       "reserved-address"},
      {"203.0.113.7:80", AddressClass::reserved, "reserved-address", "reserved-address",
       "reserved-address"},
      {"[2001:db8::1]:80", AddressClass::reserved, "reserved-address", "reserved-address",
       "reserved-address"},
      {"8.8.8.8:80", AddressClass::public_address, "allowed", "allowed", "allowed"},
      {"172.32.0.1:80", AddressClass::public_address, "allowed", "allowed", "allowed"},
      {"[2606:4700:4700::1111]:80", AddressClass::public_address, "allowed", "allowed", "allowed"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.target);
    const Outcome plain = decide_text(make_policy(Opts{}.allow_ip()), c.target);
    EXPECT_EQ(plain.code, c.by_default);
    EXPECT_EQ(plain.decision.address_class, c.cls);
    EXPECT_EQ(decide_text(make_policy(Opts{}.allow_ip().block_private()), c.target).code,
              c.with_private);
    EXPECT_EQ(decide_text(make_policy(Opts{}.allow_ip().allow_metadata()), c.target).code,
              c.with_metadata);
    // Without allow_ip every one of them is first of all an IP literal.
    EXPECT_EQ(decide_text(make_policy(Opts{}.block_private()), c.target).code, "ip-address");
  }
}

TEST(PolicyAddressClass, AnAddressRuleComesBeforeTheBlocklist) {
  // 203.0.113.7 is documentation space: reserved-address even when the blocklist names it.
  run_table({{"203.0.113.7:443", Opts{}.allow_ip(), "reserved-address"},
             {"8.8.8.8:443", Opts{}.allow_ip(), "blocklist", "blocked.txt:2"},
             {"0x08080808:443", Opts{}.allow_ip(), "blocklist", "blocked.txt:2"},
             {"8.8.8.8:443", defaults(), "ip-address"}},
            "203.0.113.7\n8.8.8.8\n");
}

TEST(PolicyBypass, BlocklistedIpv4IsBlockedInItsIpv4MappedSpelling) {
  // A dual-stack socket connecting to ::ffff:8.8.8.8 reaches 8.8.8.8 itself: the mapped form is
  // one more spelling of the blocked address, like 134744072 or 0x08080808.
  const Policy policy = make_policy(Opts{}.allow_ip(), "8.8.8.8\n");
  for (const char* spelling :
       {"[::ffff:8.8.8.8]:443", "[64:ff9b::808:808]:443", "[::ffff:808:808]:443"}) {
    const Outcome out = decide_text(policy, spelling);
    EXPECT_EQ(out.code, "blocklist") << spelling;
    EXPECT_EQ(out.rule, "blocked.txt:1") << spelling;
  }
}

TEST(PolicyBypass, BlocklistedAddressIsBlockedWhenANameResolvesToIt) {
  const Policy policy = make_policy(defaults(), "8.8.8.8\n");
  const auto decision = policy.decide_resolved(address_of("8.8.8.8"), 443);
  EXPECT_EQ(reason_code(decision.reason), "blocklist");
}

TEST(PolicyMetadataNames, MetadataHostNamesAreDeniedUnlessAllowed) {
  for (std::string_view target : {
           "metadata.google.internal:80",
           "METADATA.GOOGLE.INTERNAL.:80",
           "metadata.goog:80",
           "metadata:80",
           "instance-data:80",
           "instance-data.ec2.internal:80",
           "metadata.tencentyun.com:80",
       }) {
    SCOPED_TRACE(target);
    const Outcome out = decide_text(make_policy(defaults()), target);
    EXPECT_EQ(out.code, "metadata-address");
    EXPECT_EQ(out.decision.address_class, AddressClass::metadata);
    EXPECT_EQ(decide_text(make_policy(Opts{}.allow_metadata()), target).code, "allowed");
  }
  // Names that merely contain the word are ordinary names.
  run_table({{"metadata.example.com:443", defaults(), "allowed"},
             {"google.internal:443", defaults(), "allowed"},
             {"mymetadata.goog:443", defaults(), "allowed"}});
}

// ---- Resolved addresses ----

TEST(PolicyResolved, EachAddressClassUnderEachOption) {
  struct Case {
    std::string_view address;
    AddressClass cls;
    std::string_view by_default;
    std::string_view loopback_allowed;  // block_loopback = false
    std::string_view block_private;
    std::string_view allow_metadata;
  };
  const std::vector<Case> cases = {
      {"93.184.216.34", AddressClass::public_address, "allowed", "allowed", "allowed", "allowed"},
      {"2606:2800:220:1:248:1893:25c8:1946", AddressClass::public_address, "allowed", "allowed",
       "allowed", "allowed"},
      {"127.0.0.1", AddressClass::loopback, "loopback", "allowed", "loopback", "loopback"},
      {"127.53.0.1", AddressClass::loopback, "loopback", "allowed", "loopback", "loopback"},
      {"::1", AddressClass::loopback, "loopback", "allowed", "loopback", "loopback"},
      {"::ffff:127.0.0.1", AddressClass::loopback, "loopback", "allowed", "loopback", "loopback"},
      {"0.0.0.0", AddressClass::unspecified, "loopback", "allowed", "loopback", "loopback"},
      {"::", AddressClass::unspecified, "loopback", "allowed", "loopback", "loopback"},
      {"169.254.169.254", AddressClass::metadata, "metadata-address", "metadata-address",
       "metadata-address", "allowed"},
      {"fd00:ec2::254", AddressClass::metadata, "metadata-address", "metadata-address",
       "metadata-address", "allowed"},
      {"64:ff9b::a9fe:a9fe", AddressClass::metadata, "metadata-address", "metadata-address",
       "metadata-address", "allowed"},
      {"169.254.10.10", AddressClass::link_local, "metadata-address", "metadata-address",
       "metadata-address", "allowed"},
      {"fe80::1", AddressClass::link_local, "metadata-address", "metadata-address",
       "metadata-address", "allowed"},
      {"10.1.2.3", AddressClass::private_network, "allowed", "allowed", "private-address",
       "allowed"},
      {"192.168.0.10", AddressClass::private_network, "allowed", "allowed", "private-address",
       "allowed"},
      {"::ffff:10.1.2.3", AddressClass::private_network, "allowed", "allowed", "private-address",
       "allowed"},
      {"100.127.255.254", AddressClass::carrier_nat, "allowed", "allowed", "private-address",
       "allowed"},
      {"fd00::1", AddressClass::unique_local, "allowed", "allowed", "private-address", "allowed"},
      {"224.0.0.251", AddressClass::multicast, "reserved-address", "reserved-address",
       "reserved-address", "reserved-address"},
      {"ff02::fb", AddressClass::multicast, "reserved-address", "reserved-address",
       "reserved-address", "reserved-address"},
      {"255.255.255.255", AddressClass::reserved, "reserved-address", "reserved-address",
       "reserved-address", "reserved-address"},
      {"198.18.0.1", AddressClass::reserved, "reserved-address", "reserved-address",
       "reserved-address", "reserved-address"},
      {"2001:db8::1", AddressClass::reserved, "reserved-address", "reserved-address",
       "reserved-address", "reserved-address"},
  };
  // allow_ip is irrelevant for resolved addresses: they are not literals the client chose.
  const Policy by_default = make_policy(defaults());
  const Policy loopback_allowed = make_policy(Opts{}.block_loopback(false));
  const Policy block_private = make_policy(Opts{}.block_private());
  const Policy allow_metadata = make_policy(Opts{}.allow_metadata());
  const Policy everything_open =
      make_policy(Opts{}.block_loopback(false).allow_ip().allow_metadata());
  for (const Case& c : cases) {
    SCOPED_TRACE(c.address);
    const IpAddress address = address_of(c.address);
    const Decision d = by_default.decide_resolved(address);
    EXPECT_EQ(reason_code(d.reason), c.by_default);
    EXPECT_EQ(d.address_class, c.cls);
    EXPECT_EQ(d.allowed(), c.by_default == "allowed");
    EXPECT_FALSE(d.rule.has_value());
    EXPECT_EQ(reason_code(loopback_allowed.decide_resolved(address).reason), c.loopback_allowed);
    EXPECT_EQ(reason_code(block_private.decide_resolved(address).reason), c.block_private);
    EXPECT_EQ(reason_code(allow_metadata.decide_resolved(address).reason), c.allow_metadata);
    // Reserved and multicast answers are never dialled, whatever is opened up.
    if (c.cls == AddressClass::multicast || c.cls == AddressClass::reserved) {
      EXPECT_EQ(everything_open.decide_resolved(address).reason, Reason::reserved_address);
    }
  }
}

// ---- explain() ----

TEST(PolicyExplain, BlocklistSentenceNamesTheEntryFileAndLine) {
  const Policy policy = make_policy(defaults(), "# header\n\nevil.com   # inline comment\n");
  const Host host = host_of("api.evil.com");
  const Decision d = policy.decide(host, 443);
  ASSERT_EQ(d.reason, Reason::blocklist);
  ASSERT_TRUE(d.rule.has_value());
  EXPECT_EQ(d.rule->source, "blocked.txt");
  EXPECT_EQ(d.rule->line, 3u);
  EXPECT_EQ(d.rule->entry, "evil.com");  // the comment is not part of the entry
  EXPECT_EQ(policy.explain(d, host, 443),
            "api.evil.com is blocked by the blocklist entry 'evil.com' (blocked.txt line 3).");
}

TEST(PolicyExplain, AllowlistSentenceNamesTheEntryFileAndLine) {
  const Policy policy = make_policy(defaults(), "", "# ok\nexample.com\n");
  const Host host = host_of("www.example.com");
  const Decision allowed = policy.decide(host, 443);
  ASSERT_TRUE(allowed.allowed());
  ASSERT_TRUE(allowed.rule.has_value());
  EXPECT_EQ(policy.explain(allowed, host, 443),
            "www.example.com:443 is allowed by the allowlist entry 'example.com' (allow.txt "
            "line 2).");
  const Host other = host_of("other.org");
  const Decision denied = policy.decide(other, 443);
  EXPECT_EQ(policy.explain(denied, other, 443),
            "other.org is not on the allowlist (SANDGATE_ALLOWLIST).");
}

TEST(PolicyExplain, EverySentenceNamesTheTargetAndTheSettingThatControlsIt) {
  struct Case {
    std::string_view target;
    Opts opts;
    std::vector<std::string_view> must_contain;
  };
  const std::vector<Case> cases = {
      {"example.com:443", defaults(), {"example.com:443 is allowed: no rule denies it."}},
      {"127.1:80", defaults(), {"127.0.0.1:80", "this machine", "(loopback)"}},
      {"[::]:80", defaults(), {"[::]:80", "(unspecified)"}},
      {"8.8.8.8:443", defaults(), {"8.8.8.8:443", "GOOSE_SANDBOX_ALLOW_IP"}},
      {"169.254.169.254:80", Opts{}.allow_ip(), {"169.254.169.254:80", "SANDGATE_ALLOW_METADATA"}},
      {"10.0.0.1:80",
       Opts{}.allow_ip().block_private(),
       {"10.0.0.1:80", "private network (private)", "SANDGATE_BLOCK_PRIVATE"}},
      {"224.0.0.1:80", Opts{}.allow_ip(), {"224.0.0.1:80", "(multicast)"}},
      {"example.com:8080", Opts{}.allowed_ports({443}), {"port 8080", "SANDGATE_ALLOWED_PORTS"}},
      {"github.com:22", Opts{}.allow_ssh(false), {"port 22", "GOOSE_SANDBOX_ALLOW_SSH"}},
      {"example.com:2222",
       defaults(),
       {"port 2222", "example.com is not a git host", "GOOSE_SANDBOX_GIT_HOSTS"}},
      {"[2606:4700::1]:22", Opts{}.allow_ip(), {"[2606:4700::1] is not a git host"}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.target);
    const Policy policy = make_policy(c.opts);
    auto parsed = parse_authority(c.target);
    ASSERT_TRUE(parsed.has_value());
    const Decision d = policy.decide(parsed->host, parsed->port);
    const std::string sentence = policy.explain(d, parsed->host, parsed->port);
    for (std::string_view part : c.must_contain) {
      EXPECT_THAT(sentence, HasSubstr(std::string(part)));
    }
    EXPECT_TRUE(sentence.ends_with(".")) << sentence;
  }
}

TEST(PolicyExplain, MetadataNameIsExplainedAsMetadata) {
  const Policy policy = make_policy(defaults());
  const Host host = host_of("metadata.google.internal");
  const Decision d = policy.decide(host, 80);
  EXPECT_EQ(policy.explain(d, host, 80),
            "metadata.google.internal:80 is a cloud metadata or link-local address (metadata), "
            "which is always blocked (SANDGATE_ALLOW_METADATA).");
}

// ---- The policy keeps what it was built from ----

TEST(PolicyAccessors, OptionsAndListsAreKept) {
  const Policy policy = make_policy(Opts{}.allow_ip().git_hosts({"git.example"}),
                                    "a.example\nb.example\n", "c.example\n");
  EXPECT_TRUE(policy.options().allow_ip);
  EXPECT_EQ(policy.options().git_hosts, std::vector<std::string>{"git.example"});
  EXPECT_EQ(policy.blocklist().size(), 2u);
  ASSERT_NE(policy.allowlist(), nullptr);
  EXPECT_EQ(policy.allowlist()->size(), 1u);
  EXPECT_EQ(make_policy(defaults()).allowlist(), nullptr);
}

TEST(PolicyAccessors, SharedSetsAreUsedAsGiven) {
  auto blocked = std::make_shared<const DomainSet>(load_clean("evil.com\n", "blocked.txt"));
  auto allowed = std::make_shared<const DomainSet>(load_clean("example.com\n", "allow.txt"));
  const Policy with_allowlist(Opts{}.o, blocked, allowed);
  const Policy without_allowlist(Opts{}.o, blocked, nullptr);
  EXPECT_EQ(with_allowlist.shared_blocklist(), blocked);
  EXPECT_EQ(with_allowlist.shared_allowlist(), allowed);
  EXPECT_EQ(without_allowlist.allowlist(), nullptr);
  EXPECT_EQ(decide_text(with_allowlist, "api.evil.com:443").code, "blocklist");
  EXPECT_EQ(decide_text(with_allowlist, "www.example.com:443").rule, "allow.txt:1");
  EXPECT_EQ(decide_text(with_allowlist, "other.org:443").code, "not-allowlisted");
  EXPECT_EQ(decide_text(without_allowlist, "other.org:443").code, "allowed");
  EXPECT_EQ(decide_text(without_allowlist, "evil.com:443").rule, "blocked.txt:1");
}

TEST(PolicyMessage, TheEntrysMessageFollowsTheGatesSentence) {
  const Policy policy =
      make_policy(Opts(),
                  "github.com:22  #! SSH pushes are blocked here; use an https:// remote\n"
                  "evil.example  #! ask the security team first!\n");
  Outcome ssh = decide_text(policy, "github.com:22");
  EXPECT_EQ(ssh.code, "blocklist");
  EXPECT_EQ(policy.explain(ssh.decision, *parse_host("github.com"), 22),
            "github.com is blocked by the blocklist entry 'github.com:22' (blocked.txt line 1). "
            "SSH pushes are blocked here; use an https:// remote.");
  Outcome evil = decide_text(policy, "api.evil.example:443");
  EXPECT_EQ(policy.explain(evil.decision, *parse_host("api.evil.example"), 443),
            "api.evil.example is blocked by the blocklist entry 'evil.example' (blocked.txt line "
            "2). ask the security team first!");
}

}  // namespace
}  // namespace sandgate::rules

// ---- Destinations no rule decides (SANDGATE_UNKNOWN) and report-only's enforced floor ----
namespace sandgate::rules {
namespace {

Policy unknown_policy(UnknownMode mode, bool allowlist) {
  PolicyOptions options;
  options.unknown = mode;
  std::vector<LoadIssue> issues;
  std::optional<DomainSet> allowed;
  if (allowlist) {
    allowed = DomainSet::parse("listed.example\n", "allow.txt", issues);
  }
  return Policy(options, DomainSet::parse("blocked.example\n", "blocked.txt", issues),
                std::move(allowed));
}

Decision decide_name(const Policy& policy, std::string_view name, std::uint16_t port = 443) {
  return policy.decide(*parse_host(name), port);
}

TEST(PolicyUnknown, TheDefaultKeepsTodaysBehaviourAndMarksUnknown) {
  const Policy blocklist_only = unknown_policy(UnknownMode::usual, false);
  Decision d = decide_name(blocklist_only, "new.example");
  EXPECT_TRUE(d.allowed());
  EXPECT_TRUE(d.unknown);
  EXPECT_FALSE(d.ask);
  const Policy allowlist_mode = unknown_policy(UnknownMode::usual, true);
  d = decide_name(allowlist_mode, "new.example");
  EXPECT_EQ(d.reason, Reason::not_allowlisted);
  EXPECT_TRUE(d.unknown);
  d = decide_name(allowlist_mode, "api.listed.example");
  EXPECT_TRUE(d.allowed());
  EXPECT_FALSE(d.unknown);
}

TEST(PolicyUnknown, DenyAskAndAllowDecideOnlyWhatNoRuleDecides) {
  for (bool allowlist : {false, true}) {
    const Policy deny = unknown_policy(UnknownMode::deny, allowlist);
    EXPECT_EQ(decide_name(deny, "new.example").reason,
              allowlist ? Reason::not_allowlisted : Reason::unknown_destination);
    const Policy ask = unknown_policy(UnknownMode::ask, allowlist);
    const Decision asked = decide_name(ask, "new.example");
    EXPECT_FALSE(asked.allowed());
    EXPECT_TRUE(asked.ask);
    EXPECT_EQ(asked.reason, Reason::unknown_destination);
    const Policy allow = unknown_policy(UnknownMode::allow, allowlist);
    EXPECT_TRUE(decide_name(allow, "new.example").allowed());
    // The blocklist, the address rules, ports and SSH always win; nothing of theirs is asked.
    for (const Policy* policy : {&deny, &ask, &allow}) {
      const Decision blocked = decide_name(*policy, "blocked.example");
      EXPECT_EQ(blocked.reason, Reason::blocklist);
      EXPECT_FALSE(blocked.unknown);
      EXPECT_FALSE(blocked.ask);
      EXPECT_EQ(decide_name(*policy, "localhost", 80).reason, Reason::loopback);
      EXPECT_EQ(decide_name(*policy, "metadata.google.internal", 80).reason,
                Reason::metadata_address);
      EXPECT_EQ(decide_name(*policy, "new.example", 22).reason, Reason::ssh_non_git_host);
      EXPECT_FALSE(decide_name(*policy, "new.example", 22).ask);
    }
  }
  EXPECT_EQ(to_string(UnknownMode::usual), "default");
  EXPECT_EQ(to_string(UnknownMode::ask), "ask");
}

TEST(PolicyReportOnly, TheEnforcedFloorIsLoopbackMetadataAndReservedAddresses) {
  const Policy policy = unknown_policy(UnknownMode::usual, false);
  auto floor = [&policy](std::string_view target) {
    auto authority = parse_authority(target);
    return policy.enforced_anyway(authority->host, authority->port);
  };
  EXPECT_EQ(floor("localhost:80")->reason, Reason::loopback);
  EXPECT_EQ(floor("127.0.0.1:80")->reason, Reason::loopback);
  EXPECT_EQ(floor("[::1]:80")->reason, Reason::loopback);
  EXPECT_EQ(floor("169.254.169.254:80")->reason, Reason::metadata_address);
  EXPECT_EQ(floor("metadata.google.internal:80")->reason, Reason::metadata_address);
  EXPECT_EQ(floor("224.0.0.1:80")->reason, Reason::reserved_address);
  EXPECT_FALSE(floor("blocked.example:443"));  // a list's verdict: reportable
  EXPECT_FALSE(floor("10.0.0.1:443"));         // private networks: a configured policy
  EXPECT_FALSE(floor("93.184.216.34:443"));    // a raw IP literal: reportable
  // Which reasons report-only mode lifts: the policy's, never the address floor or the protocol.
  EXPECT_TRUE(reportable(Reason::blocklist));
  EXPECT_TRUE(reportable(Reason::sni_mismatch));
  EXPECT_TRUE(reportable(Reason::ask_timeout));
  EXPECT_FALSE(reportable(Reason::loopback));
  EXPECT_FALSE(reportable(Reason::metadata_address));
  EXPECT_FALSE(reportable(Reason::reserved_address));
  EXPECT_FALSE(reportable(Reason::auth_required));
  EXPECT_FALSE(reportable(Reason::bad_request));
  EXPECT_FALSE(reportable(Reason::header_too_large));
  for (Reason reason : kReportableReasons) {
    EXPECT_EQ(reason_info(reason).verdict, Verdict::deny) << reason_code(reason);
  }
}

}  // namespace
}  // namespace sandgate::rules

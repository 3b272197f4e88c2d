// The Seatbelt profile: golden files for every combination of goose's three toggles (and for
// strict unix sockets with every flag), parsed back with a small SBPL reader; strings that round
// trip for awkward home folders; the rules each toggle and flag adds or removes; and the paths
// that must be refused.
//
// Regenerate the golden files after an intended change with
//   SANDGATE_UPDATE_GOLDEN=1 build/tests/sandbox_test --gtest_filter='ProfileGolden*'
// and review the diff.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <set>
#include <sstream>
#include <string>

#include "sandbox-profile/profile.hpp"
#include "sandbox-profile/protected_paths.hpp"
#include "tests/unit/sandbox/sbpl_reader.hpp"

namespace sandgate::sandbox {
namespace {

using testing::read_sbpl;
using testing::Sexp;

const std::string kGoldenDir = std::string(SANDGATE_SOURCE_DIR) + "/tests/unit/sandbox/golden/";

ProfileOptions base_options(const std::string& home = "/Users/ada") {
  ProfileOptions options;
  options.home = home;
  options.proxy_port = 9877;
  options.gate_files = {home + "/.config/goose/sandbox/blocked.txt"};
  return options;
}

std::vector<Sexp> parse(const std::string& text) {
  auto forms = read_sbpl(text);
  EXPECT_TRUE(forms) << (forms ? "" : forms.error()) << "\n" << text;
  return forms ? *forms : std::vector<Sexp>{};
}

std::string generate(const ProfileOptions& options) {
  auto profile = generate_profile(options);
  EXPECT_TRUE(profile) << (profile ? "" : profile.error());
  return profile ? *profile : std::string();
}

// The top-level forms, printed: order-free sets for "what did this toggle change".
std::multiset<std::string> form_set(const std::string& text) {
  std::multiset<std::string> out;
  for (const auto& form : parse(text)) {
    out.insert(form.print());
  }
  return out;
}

struct Diff {
  std::vector<std::string> added;
  std::vector<std::string> removed;
};

Diff diff(const std::string& before, const std::string& after) {
  const auto a = form_set(before);
  const auto b = form_set(after);
  Diff d;
  std::set_difference(b.begin(), b.end(), a.begin(), a.end(), std::back_inserter(d.added));
  std::set_difference(a.begin(), a.end(), b.begin(), b.end(), std::back_inserter(d.removed));
  return d;
}

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// --- golden files ---------------------------------------------------------------------------

struct GoldenCase {
  std::string name;
  ProfileOptions options;
};

std::vector<GoldenCase> golden_cases() {
  std::vector<GoldenCase> cases;
  for (int bits = 0; bits < 8; ++bits) {
    ProfileOptions options = base_options();
    options.protect_files = (bits & 4) != 0;
    options.block_raw_sockets = (bits & 2) != 0;
    options.block_tunneling = (bits & 1) != 0;
    const auto on = [](bool v) { return v ? "on" : "off"; };
    cases.push_back({std::string("protect-") + on(options.protect_files) + "_raw-" +
                         on(options.block_raw_sockets) + "_tunnel-" + on(options.block_tunneling),
                     options});
  }
  ProfileOptions strict = base_options();
  strict.strict_unix_sockets = true;
  strict.ssh_auth_sock = "/private/tmp/agent.sock";
  strict.allow_unix_sockets = {"/Users/ada/.colima/default/docker.sock", "/private/tmp/a.sock"};
  strict.allow_localhost_ports = {5432, 3000, 5432};
  strict.allow_inbound_ports = {8123};
  strict.gate_files.push_back("/etc/sandgate/allow.txt");
  cases.push_back({"strict-unix-sockets_with-flags", strict});
  cases.push_back(
      {"home-with-quotes-backslash-space-non-ascii", base_options("/Users/Zoë \"Q\" O\\Brien")});
  return cases;
}

TEST(ProfileGolden, EveryToggleCombinationMatchesItsGoldenFile) {
  const bool update = std::getenv("SANDGATE_UPDATE_GOLDEN") != nullptr;
  for (const auto& c : golden_cases()) {
    SCOPED_TRACE(c.name);
    const std::string text = generate(c.options);
    const std::string path = kGoldenDir + c.name + ".sb";
    if (update) {
      std::ofstream(path, std::ios::binary | std::ios::trunc) << text;
      continue;
    }
    EXPECT_EQ(read_file(path), text)
        << "golden file " << path << " differs; see the header of this test to regenerate";
    // And the golden file itself is well-formed SBPL.
    EXPECT_TRUE(read_sbpl(read_file(path)));
  }
}

TEST(ProfileGolden, GenerationIsDeterministic) {
  for (const auto& c : golden_cases()) {
    EXPECT_EQ(generate(c.options), generate(c.options)) << c.name;
  }
}

// --- structure --------------------------------------------------------------------------------

TEST(Profile, StartsAsGooseDidAndEndsWithTheKextRule) {
  const auto forms = parse(generate(base_options()));
  ASSERT_GE(forms.size(), 3u);
  EXPECT_EQ(forms[0].print(), "(version 1)");
  EXPECT_EQ(forms[1].print(), "(allow default)");
  EXPECT_EQ(forms.back().print(), "(deny system-kext-load)");
}

// SBPL's last matching rule wins: each exception must come after the denial it narrows.
TEST(Profile, ExceptionsComeAfterTheDenialsTheyNarrow) {
  ProfileOptions options = base_options();
  options.allow_unix_sockets = {"/var/run/docker.sock"};
  options.allow_localhost_ports = {5432};
  const auto forms = parse(generate(options));
  const auto index_of = [&](const std::string& printed) {
    for (std::size_t i = 0; i < forms.size(); ++i) {
      if (forms[i].print() == printed) {
        return static_cast<int>(i);
      }
    }
    ADD_FAILURE() << "missing " << printed;
    return -1;
  };
  const int deny_network = index_of("(deny network*)");
  const int gate = index_of("(allow network-outbound (remote ip \"localhost:9877\"))");
  const int extra = index_of("(allow network-outbound (remote ip \"localhost:5432\"))");
  const int unix_allow = index_of("(allow network-outbound (remote unix-socket))");
  const int listed = index_of(
      "(allow network-outbound (remote unix-socket (path-literal \"/var/run/docker.sock\")))");
  int container_deny = -1;
  for (std::size_t i = 0; i < forms.size(); ++i) {
    if (forms[i].print().starts_with("(deny network-outbound (remote unix-socket")) {
      container_deny = static_cast<int>(i);
    }
  }
  EXPECT_LT(deny_network, gate);
  EXPECT_LT(deny_network, extra);
  EXPECT_LT(deny_network, unix_allow);
  EXPECT_LT(unix_allow, container_deny);
  EXPECT_LT(container_deny, listed);
}

TEST(Profile, OnlyTheGatesPortIsReachableOnLocalhostByDefault) {
  const std::string text = generate(base_options());
  EXPECT_NE(text.find("(allow network-outbound (remote ip \"localhost:9877\"))"),
            std::string::npos);
  // goose's `localhost:*` is gone, outbound and inbound.
  EXPECT_EQ(text.find("localhost:*"), std::string::npos);
  EXPECT_EQ(text.find("network-inbound"), std::string::npos);
  EXPECT_EQ(text.find("(remote ip \"*"), std::string::npos);
}

TEST(Profile, TunnellingToolsAreDeniedByNameAnywhere) {
  const std::string text = generate(base_options());
  EXPECT_NE(text.find("(deny process-exec (regex #\"/(nc|ncat|netcat|socat|telnet)$\"))"),
            std::string::npos);
  EXPECT_EQ(text.find("\"/usr/bin/nc\""), std::string::npos);
}

// --- round trips ---------------------------------------------------------------------------

// Every string in the profile reads back as the path meant: the profile for an awkward home is
// the profile for a plain one with the home swapped, form for form, once parsed.
TEST(ProfileRoundTrip, AwkwardHomeFoldersReadBackExactly) {
  const std::string plain = "/Users/plain";
  const std::vector<std::string> homes = {
      "/Users/ada lovelace", "/Users/o\"brien",     "/Users/back\\slash",
      "/Users/\\\"",         "/Users/zoë",          "/Users/日本語",
      "/Users/a(b)c;d",      "/Users/#\"x\"",       "/Users/tab-free but  two  spaces",
      "/Users/emoji-🙂",   "/Users/trailing\\\\", "/Users/\"(deny default)\""};
  for (const auto& home : homes) {
    SCOPED_TRACE(home);
    ProfileOptions awkward = base_options(home);
    awkward.strict_unix_sockets = true;
    awkward.ssh_auth_sock = home + "/agent \"sock\"";
    awkward.allow_unix_sockets = {home + "/x\\y.sock"};
    ProfileOptions reference = base_options(plain);
    reference.strict_unix_sockets = true;
    reference.ssh_auth_sock = plain + "/agent \"sock\"";
    reference.allow_unix_sockets = {plain + "/x\\y.sock"};

    auto forms = parse(generate(awkward));
    const auto expected = parse(generate(reference));
    ASSERT_EQ(forms.size(), expected.size());
    // Swap the home back in every string, then the two profiles must be the same forms.
    std::function<void(Sexp&)> swap_home = [&](Sexp& form) {
      if (form.kind == Sexp::Kind::string && form.text.starts_with(home)) {
        form.text = plain + form.text.substr(home.size());
      }
      for (auto& item : form.items) {
        swap_home(item);
      }
    };
    for (auto& form : forms) {
      swap_home(form);
    }
    for (std::size_t i = 0; i < forms.size(); ++i) {
      EXPECT_EQ(forms[i].print(), expected[i].print()) << "form " << i;
    }
  }
}

// The protected paths in the profile are exactly protected_paths(), each as literal or subpath.
TEST(ProfileRoundTrip, ProtectedPathsAppearExactlyOnce) {
  const std::string home = "/Users/Zoë \"Q\" O\\Brien";
  const auto forms = parse(generate(base_options(home)));
  std::multiset<std::string> seen;
  for (const auto& form : forms) {
    if (form.items.size() >= 2 && form.items[0].is_symbol("deny") &&
        form.items[1].is_symbol("file-write*")) {
      testing::for_each_path_filter(std::vector<Sexp>{form},
                                    [&](const std::string& filter, const std::string& path) {
                                      seen.insert(filter + " " + path);
                                    });
    }
  }
  std::multiset<std::string> expected;
  for (const auto& p : protected_paths({.home = home,
                       .protect_files = true,
                       .platform = Platform::macos,
                       .gate_files = base_options(home).gate_files})) {
    expected.insert((p.tree ? "subpath " : "literal ") + p.path);
  }
  EXPECT_EQ(seen, expected);
  EXPECT_EQ(seen.count("subpath " + home + "/.ssh"), 1u);
  EXPECT_EQ(seen.count("literal " + home + "/.zshenv"), 1u);
  EXPECT_EQ(seen.count("subpath " + home + "/Library/LaunchAgents"), 1u);
}

// --- what each toggle and flag changes ------------------------------------------------------

TEST(ProfileToggles, ProtectFilesOffKeepsOnlyTheGatesConfiguration) {
  ProfileOptions off = base_options();
  off.protect_files = false;
  const auto d = diff(generate(base_options()), generate(off));
  // Removed: the protect_files denial, and the rename rule loses ~/Library (only LaunchAgents
  // needed it); added: that smaller rename rule.
  ASSERT_EQ(d.removed.size(), 2u);
  ASSERT_EQ(d.added.size(), 1u);
  const std::string& removed_writes =
      d.removed[0].starts_with("(deny file-write* ") ? d.removed[0] : d.removed[1];
  for (const char* path : {"/.ssh", "/.gnupg", "/.bashrc", "/.zshenv", "/.config/fish",
                           "/.config/goose\"", "/Library/LaunchAgents"}) {
    EXPECT_NE(removed_writes.find(std::string("\"/Users/ada") + path), std::string::npos) << path;
  }
  EXPECT_TRUE(d.added[0].starts_with("(deny file-write-unlink "));
  EXPECT_EQ(d.added[0].find("/Library"), std::string::npos);
  // The gate's configuration stays protected.
  const std::string text = generate(off);
  EXPECT_NE(text.find("(subpath \"/Users/ada/.config/sandgate\")"), std::string::npos);
  EXPECT_NE(text.find("(subpath \"/Users/ada/.config/goose/sandbox\")"), std::string::npos);
}

TEST(ProfileToggles, BlockRawSocketsOffRemovesExactlyTheTwoRawSocketRules) {
  ProfileOptions off = base_options();
  off.block_raw_sockets = false;
  const auto d = diff(generate(base_options()), generate(off));
  EXPECT_TRUE(d.added.empty());
  ASSERT_EQ(d.removed.size(), 2u);
  EXPECT_EQ(d.removed[0],
            "(deny system-socket (require-all (socket-domain AF_INET) (socket-type SOCK_RAW)))");
  EXPECT_EQ(d.removed[1],
            "(deny system-socket (require-all (socket-domain AF_INET6) (socket-type SOCK_RAW)))");
}

TEST(ProfileToggles, BlockTunnelingOffRemovesExactlyTheExecRule) {
  ProfileOptions off = base_options();
  off.block_tunneling = false;
  const auto d = diff(generate(base_options()), generate(off));
  EXPECT_TRUE(d.added.empty());
  ASSERT_EQ(d.removed.size(), 1u);
  EXPECT_EQ(d.removed[0], "(deny process-exec (regex #\"/(nc|ncat|netcat|socat|telnet)$\"))");
}

TEST(ProfileToggles, StrictUnixSocketsReplacesAllowAllWithTheSystemsOwn) {
  ProfileOptions strict = base_options();
  strict.strict_unix_sockets = true;
  strict.ssh_auth_sock = "/private/tmp/com.apple.launchd.abc/Listeners";
  const auto d = diff(generate(base_options()), generate(strict));
  ASSERT_EQ(d.removed.size(), 2u);
  EXPECT_EQ(d.removed[0], "(allow network-outbound (remote unix-socket))");
  EXPECT_TRUE(d.removed[1].starts_with("(deny network-outbound (remote unix-socket (path-regex"));
  ASSERT_EQ(d.added.size(), 1u);
  EXPECT_TRUE(
      d.added[0].starts_with("(allow network-outbound (remote unix-socket (path-literal "
                             "\"/private/var/run/syslog\"))"));
  EXPECT_NE(d.added[0].find("(path-literal \"/private/tmp/com.apple.launchd.abc/Listeners\")"),
            std::string::npos);
}

TEST(ProfileToggles, ContainerSocketsAreDeniedByDefault) {
  const std::string text = generate(base_options());
  EXPECT_NE(text.find("(remote unix-socket (path-regex #\"/(docker|podman|containerd|crio|"
                      "cri-dockerd|buildkitd)[^/]*\\.sock$\"))"),
            std::string::npos);
  EXPECT_NE(text.find("(remote unix-socket (subpath \"/Users/ada/.colima\"))"), std::string::npos);
  EXPECT_NE(text.find("(remote unix-socket (subpath \"/Users/ada/.lima\"))"), std::string::npos);
}

TEST(ProfileFlags, EachFlagAddsItsRules) {
  ProfileOptions flags = base_options();
  flags.allow_localhost_ports = {5432};
  flags.allow_inbound_ports = {3000};
  flags.allow_unix_sockets = {"/tmp/x.sock"};
  auto d = diff(generate(base_options()), generate(flags));
  EXPECT_TRUE(d.removed.empty());
  const std::multiset<std::string> added(d.added.begin(), d.added.end());
  EXPECT_EQ(added,
            (std::multiset<std::string>{"(allow network-outbound (remote ip \"localhost:5432\"))",
                                        "(allow network-bind (local ip \"localhost:3000\"))",
                                        "(allow network-inbound (local ip \"localhost:3000\"))",
                                        "(allow network-outbound (remote unix-socket (path-literal "
                                        "\"/tmp/x.sock\")))"}));
}

TEST(ProfileFlags, GateFilesOutsideTheProtectedFoldersAreProtectedOneByOne) {
  ProfileOptions options = base_options();
  options.gate_files.push_back("/etc/sandgate/blocked.txt");
  options.protect_files = false;
  const std::string text = generate(options);
  EXPECT_NE(text.find("(literal \"/etc/sandgate/blocked.txt\")"), std::string::npos);
  // The default blocklist lies under ~/.config/goose/sandbox: not repeated.
  EXPECT_EQ(text.find("(literal \"/Users/ada/.config/goose/sandbox/blocked.txt\")"),
            std::string::npos);
}

// --- refusals --------------------------------------------------------------------------------

TEST(ProfileErrors, UnrepresentableHomeFoldersAreErrorsNamingTheProblem) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"/Users/a\nb", "control character"},
      {std::string("/Users/a\0b", 10), "NUL"},
      {"/Users/a\x1b[31m", "control character"},
      {"/Users/a\x7f", "control character"},
      {"/Users/a\tb", "control character"},
      {"/Users/\xff\xfe", "not valid UTF-8"},
      {"/Users/\xc3", "not valid UTF-8"},
      {"/Users/\xc0\xaf", "not valid UTF-8"},      // overlong '/'
      {"/Users/\xed\xa0\x80", "not valid UTF-8"},  // a UTF-16 surrogate
      {"Users/ada", "not absolute"},
      {"", "empty"},
      {"/Users/ada/", "normal form"},
      {"/Users//ada", "normal form"},
      {"/Users/../ada", "normal form"},
      {"/Users/./ada", "normal form"},
  };
  for (const auto& [home, problem] : cases) {
    ProfileOptions options = base_options(home);
    options.gate_files.clear();
    auto profile = generate_profile(options);
    ASSERT_FALSE(profile) << "accepted home " << home;
    EXPECT_NE(profile.error().find("home folder"), std::string::npos) << profile.error();
    EXPECT_NE(profile.error().find(problem), std::string::npos) << profile.error();
    // The message itself is printable: no raw control characters.
    for (char c : profile.error()) {
      EXPECT_FALSE(static_cast<unsigned char>(c) < 0x20) << profile.error();
    }
  }
}

TEST(ProfileErrors, UnrepresentableFlagsAndGateFilesNameTheirSource) {
  ProfileOptions socket = base_options();
  socket.allow_unix_sockets = {"/tmp/a\nb.sock"};
  auto profile = generate_profile(socket);
  ASSERT_FALSE(profile);
  EXPECT_NE(profile.error().find("--allow-unix-socket '/tmp/a\\x0ab.sock'"), std::string::npos)
      << profile.error();

  ProfileOptions gate = base_options();
  gate.gate_files = {"relative/blocked.txt"};
  profile = generate_profile(gate);
  ASSERT_FALSE(profile);
  EXPECT_NE(profile.error().find("gate file 'relative/blocked.txt' is not absolute"),
            std::string::npos)
      << profile.error();

  ProfileOptions agent = base_options();
  agent.strict_unix_sockets = true;
  agent.ssh_auth_sock = "/tmp/\x01";
  profile = generate_profile(agent);
  ASSERT_FALSE(profile);
  EXPECT_NE(profile.error().find("SSH_AUTH_SOCK"), std::string::npos) << profile.error();

  ProfileOptions no_port = base_options();
  no_port.proxy_port = 0;
  EXPECT_FALSE(generate_profile(no_port));
}

}  // namespace
}  // namespace sandgate::sandbox

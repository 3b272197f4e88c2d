// The confined command's environment, and GIT_SSH_COMMAND read back by a real shell.
#include "sandbox-profile/plan/child_environment.hpp"

#include <gtest/gtest.h>
#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <map>

namespace sandgate::sandbox {
namespace {

std::map<std::string, std::string> as_map(const std::vector<std::string>& env) {
  std::map<std::string, std::string> out;
  for (const auto& entry : env) {
    const auto eq = entry.find('=');
    EXPECT_TRUE(out.emplace(entry.substr(0, eq), entry.substr(eq + 1)).second)
        << "duplicate " << entry;
  }
  return out;
}

TEST(ChildEnvironment, PointsEveryProxyVariableAtTheGateAndKeepsTheRest) {
  const auto env =
      as_map(child_environment({"PATH=/usr/bin", "HOME=/home/ada", "http_proxy=http://corp:3128",
                                "NO_PROXY=.corp", "ODD=a=b", "SANDGATE_ADMIN_TOKEN=secret",
                                "SANDGATE_TOKEN=secret2", "SANDGATE_SECRETS=T=x.org"},
                               41234, "/opt/sandgate/bin/sandgate-connect"));
  // The gate's own variables stay the gate's (second review, finding 14).
  for (const char* name : {"SANDGATE_ADMIN_TOKEN", "SANDGATE_TOKEN", "SANDGATE_SECRETS"}) {
    EXPECT_FALSE(env.contains(name)) << name;
  }
  const std::string proxy = "http://127.0.0.1:41234";
  for (const char* name : {"http_proxy", "https_proxy", "HTTP_PROXY", "HTTPS_PROXY"}) {
    EXPECT_EQ(env.at(name), proxy) << name;
  }
  // The gate's SOCKS5, with names resolved by the gate (socks5h), for every other protocol.
  EXPECT_EQ(env.at("ALL_PROXY"), "socks5h://127.0.0.1:41234");
  EXPECT_EQ(env.at("all_proxy"), "socks5h://127.0.0.1:41234");
  EXPECT_EQ(env.at("NO_PROXY"), "localhost,127.0.0.1,::1");
  EXPECT_EQ(env.at("no_proxy"), "localhost,127.0.0.1,::1");
  EXPECT_EQ(env.at("NODE_USE_ENV_PROXY"), "1");
  EXPECT_EQ(env.at("SANDBOX_PROXY_PORT"), "41234");
  EXPECT_EQ(env.at("GIT_SSH_COMMAND"),
            "ssh -o 'ProxyCommand=/opt/sandgate/bin/sandgate-connect %h %p'");
  EXPECT_EQ(env.at("PATH"), "/usr/bin");
  EXPECT_EQ(env.at("ODD"), "a=b");
  EXPECT_EQ(env.at("JAVA_TOOL_OPTIONS"),
            "-Dhttp.proxyHost=127.0.0.1 -Dhttp.proxyPort=41234 -Dhttps.proxyHost=127.0.0.1 "
            "-Dhttps.proxyPort=41234 -Dhttp.nonProxyHosts=localhost|127.*|[::1] "
            "-Djava.net.preferIPv4Stack=true");
}

// The JVM reads no proxy variable: JAVA_TOOL_OPTIONS carries the gate, after the caller's own
// options (kept: heap sizes, agents), so that the gate's properties win where both set one.
TEST(ChildEnvironment, JavaToolOptionsKeepTheCallersOptionsFirst) {
  const auto env = as_map(child_environment(
      {"JAVA_TOOL_OPTIONS=-Xmx2g -Dhttps.proxyHost=corp", "A=1"}, 9877, "/x/sandgate-connect"));
  const std::string value = env.at("JAVA_TOOL_OPTIONS");
  EXPECT_TRUE(value.starts_with("-Xmx2g -Dhttps.proxyHost=corp -Dhttp.proxyHost=127.0.0.1 "))
      << value;
  EXPECT_GT(value.rfind("-Dhttps.proxyHost=127.0.0.1"), value.find("-Dhttps.proxyHost=corp"));
  EXPECT_NE(value.find("-Dhttps.proxyPort=9877"), std::string::npos);
  EXPECT_NE(value.find("-Djava.net.preferIPv4Stack=true"), std::string::npos);
  // No white space inside a value: the JVM splits the variable on it.
  EXPECT_EQ(java_tool_options("", 1).find("  "), std::string::npos);
  EXPECT_EQ(java_tool_options("", 1).front(), '-');
}

std::string shell_output(const std::string& script, const std::string& variable) {
  const std::string command = "V=" + shell_quote(variable) + " sh -c " + shell_quote(script);
  FILE* pipe = ::popen(command.c_str(), "r");
  std::string out;
  std::array<char, 4096> buffer;
  while (pipe != nullptr && std::fgets(buffer.data(), buffer.size(), pipe) != nullptr) {
    out += buffer.data();
  }
  ::pclose(pipe);
  return out;
}

// git runs GIT_SSH_COMMAND with the shell; ssh expands %-tokens in ProxyCommand and runs it with
// the shell again. Both must give back the helper's path exactly, whatever it contains.
TEST(ChildEnvironment, GitSshCommandSurvivesBothShellsAndSshsPercentTokens) {
  for (const std::string helper :
       {"/opt/sandgate/bin/sandgate-connect", "/home/a b/bin/sandgate-connect",
        "/home/o'brien/sandgate-connect", "/tmp/100%/sandgate-connect", "/tmp/$HOME`x`/s-c"}) {
    SCOPED_TRACE(helper);
    const std::string value = git_ssh_command(helper);
    // First shell: git's. Print the words it gives ssh, one a line.
    const std::string words = shell_output("eval \"set -- $V\"; printf '%s\\n' \"$@\"", value);
    const std::string prefix = "ssh\n-o\nProxyCommand=";
    ASSERT_TRUE(words.starts_with(prefix)) << words;
    std::string proxy_command = words.substr(prefix.size());
    proxy_command.pop_back();  // the newline printf added
    // ssh: %h and %p become the host and port, %% a single %.
    std::string expanded;
    for (std::size_t i = 0; i < proxy_command.size(); ++i) {
      if (proxy_command[i] == '%' && i + 1 < proxy_command.size()) {
        const char token = proxy_command[++i];
        expanded += token == 'h' ? std::string("github.com") : token == 'p' ? "22" : "%";
      } else {
        expanded += proxy_command[i];
      }
    }
    // Second shell: ssh's, running ProxyCommand.
    const std::string argv = shell_output("eval \"set -- $V\"; printf '%s\\n' \"$@\"", expanded);
    EXPECT_EQ(argv, helper + "\ngithub.com\n22\n");
  }
}

TEST(ShellQuote, LeavesSafeWordsBareAndQuotesTheRest) {
  EXPECT_EQ(shell_quote("/usr/bin/x"), "/usr/bin/x");
  EXPECT_EQ(shell_quote("a b"), "'a b'");
  EXPECT_EQ(shell_quote("it's"), "'it'\\''s'");
  EXPECT_EQ(shell_quote(""), "''");
  EXPECT_EQ(shell_quote("$x"), "'$x'");
}

}  // namespace
}  // namespace sandgate::sandbox

// The request-rules file (rules/request_rules.hpp): its grammar and the issues a bad line gets,
// the path normal form, git's smart-HTTP requests, and the decision (groups by host, first line
// wins, a group is an allow-list).
#include "rules/request_rules.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace sandgate::rules {
namespace {

Host host(std::string_view text) { return parse_host(text).value(); }

struct Loaded {
  RequestRules rules;
  std::vector<LoadIssue> issues;
};

Loaded load(std::string_view text, std::vector<std::string> inspect = {}) {
  Loaded loaded;
  loaded.rules =
      RequestRules::parse(text, "requests.txt", inspect, "SANDGATE_INSPECT", loaded.issues);
  return loaded;
}

constexpr std::string_view kUploadPackType = "application/x-git-upload-pack-request";

RequestVerdict::Kind decide(const RequestRules& rules, std::string_view name,
                            std::string_view method, std::string_view target,
                            std::uint16_t port = 443, std::string_view content_type = {}) {
  const auto normal = normalise_path(target);
  EXPECT_TRUE(normal.has_value()) << target;
  const RequestFacts facts{method, normal.value().path, normal.value().query, content_type};
  return rules.decide(host(name), port, facts).kind;
}

using Kind = RequestVerdict::Kind;

TEST(RequestRules, FetchFromAnywherePushOnlyToOurOrganisation) {
  const auto loaded = load(
      "allow github.com git-fetch\n"
      "allow github.com git-push /ourorg/*\n");
  ASSERT_TRUE(loaded.issues.empty());
  const RequestRules& rules = loaded.rules;
  // Clone and fetch of any repository, in both steps of the smart protocol.
  EXPECT_EQ(
      decide(rules, "github.com", "GET", "/someone/tool.git/info/refs?service=git-upload-pack"),
      Kind::allowed);
  EXPECT_EQ(decide(rules, "github.com", "POST", "/someone/tool.git/git-upload-pack", 443,
                   kUploadPackType),
            Kind::allowed);
  // A POST there without git's type is not a fetch: judged as the POST it is.
  EXPECT_EQ(decide(rules, "github.com", "POST", "/someone/tool.git/git-upload-pack"),
            Kind::not_allowed);
  EXPECT_EQ(decide(rules, "github.com", "POST", "/someone/tool.git/git-upload-pack", 443,
                   "application/json"),
            Kind::not_allowed);
  // Push only to ourorg.
  EXPECT_EQ(
      decide(rules, "github.com", "GET", "/ourorg/app.git/info/refs?service=git-receive-pack"),
      Kind::allowed);
  EXPECT_EQ(decide(rules, "github.com", "POST", "/ourorg/app.git/git-receive-pack"), Kind::allowed);
  EXPECT_EQ(decide(rules, "github.com", "POST", "/ourorg/app/git-receive-pack"), Kind::allowed);
  EXPECT_EQ(decide(rules, "github.com", "POST", "/someone/tool.git/git-receive-pack"),
            Kind::not_allowed);
  EXPECT_EQ(
      decide(rules, "github.com", "GET", "/someone/tool.git/info/refs?service=git-receive-pack"),
      Kind::not_allowed);
  // Case does not pass a rule by: the big hosts ignore it in owner names.
  EXPECT_EQ(decide(rules, "github.com", "POST", "/OurOrg/App.git/git-receive-pack"), Kind::allowed);
  // `*` stays within one segment.
  EXPECT_EQ(decide(rules, "github.com", "POST", "/ourorg/a/b.git/git-receive-pack"),
            Kind::not_allowed);
  // Everything else on github.com: the group is an allow-list.
  EXPECT_EQ(decide(rules, "github.com", "GET", "/"), Kind::not_allowed);
  EXPECT_EQ(decide(rules, "www.github.com", "GET", "/x"), Kind::not_allowed);
  // Another host is not judged here.
  EXPECT_EQ(decide(rules, "gitlab.com", "POST", "/x/y.git/git-receive-pack"), Kind::unruled);
}

TEST(RequestRules, TheFirstMatchingLineOfTheMostSpecificGroupDecides) {
  const auto loaded = load(
      "deny  api.example.com DELETE            #! the API is read-only here\n"
      "allow api.example.com GET,HEAD /repos/**\n"
      "allow example.com *\n");
  ASSERT_TRUE(loaded.issues.empty());
  const RequestRules& rules = loaded.rules;
  EXPECT_EQ(decide(rules, "api.example.com", "GET", "/repos/o/r/pulls?state=open"), Kind::allowed);
  EXPECT_EQ(decide(rules, "api.example.com", "GET", "/repos"), Kind::allowed);  // trailing /**
  EXPECT_EQ(decide(rules, "api.example.com", "GET", "/reposx"), Kind::not_allowed);
  EXPECT_EQ(decide(rules, "api.example.com", "DELETE", "/repos/o/r"), Kind::denied);
  EXPECT_EQ(decide(rules, "api.example.com", "POST", "/repos/o/r"), Kind::not_allowed);
  // The most specific group: api.example.com does not fall back to example.com's `allow *`.
  EXPECT_EQ(decide(rules, "www.example.com", "DELETE", "/a/b"), Kind::allowed);
  // A method in another case is judged as the method an origin may upper-case it into: `delete`
  // cannot pass a `deny DELETE`.
  EXPECT_EQ(decide(rules, "api.example.com", "delete", "/repos/x"), Kind::denied);
  EXPECT_EQ(decide(rules, "api.example.com", "get", "/repos/x"), Kind::allowed);

  const auto normal = normalise_path("/repos/o/r").value();
  const RequestFacts facts{"DELETE", normal.path, normal.query, {}};
  const RequestVerdict verdict = rules.decide(host("api.example.com"), 443, facts);
  EXPECT_EQ(request_rule_text(verdict), "requests.txt:1 deny  api.example.com DELETE");
  EXPECT_EQ(rules.explain(verdict, "api.example.com", facts),
            "DELETE api.example.com/repos/o/r is denied by the request rule 'deny  api.example.com "
            "DELETE' (requests.txt line 1). the API is read-only here");
}

TEST(RequestRules, PortsAndPatternsPickGroupsAsTheBlocklistDoes) {
  const auto loaded = load(
      "allow example.com:80 GET\n"
      "allow re:.*\\.internal\\.test POST /submit\n");
  ASSERT_TRUE(loaded.issues.empty());
  EXPECT_TRUE(loaded.rules.judges(host("example.com"), 80));
  EXPECT_FALSE(loaded.rules.judges(host("example.com"), 443));
  EXPECT_EQ(decide(loaded.rules, "a.internal.test", "POST", "/submit"), Kind::allowed);
  EXPECT_EQ(decide(loaded.rules, "a.internal.test", "POST", "/submit/more"), Kind::not_allowed);
}

TEST(RequestRules, InspectionPatternsInspectWithoutJudging) {
  const auto loaded = load("allow github.com git-fetch\n", {"*.example.org", " pypi.org:443 "});
  ASSERT_TRUE(loaded.issues.empty());
  EXPECT_TRUE(loaded.rules.inspects(host("github.com"), 443));
  EXPECT_TRUE(loaded.rules.inspects(host("a.example.org"), 443));
  EXPECT_FALSE(loaded.rules.inspects(host("example.org"), 443));
  EXPECT_TRUE(loaded.rules.inspects(host("pypi.org"), 443));
  EXPECT_FALSE(loaded.rules.inspects(host("pypi.org"), 80));
  EXPECT_FALSE(loaded.rules.judges(host("a.example.org"), 443));
  EXPECT_EQ(decide(loaded.rules, "a.example.org", "DELETE", "/x"), Kind::unruled);
  EXPECT_FALSE(loaded.rules.empty());
  EXPECT_TRUE(load("").rules.empty());
}

TEST(RequestRules, BadLinesAreReportedWithTheirLineAndTheRestLoads) {
  const auto loaded = load(
      "# a comment\n"
      "\n"
      "permit github.com\n"
      "allow\n"
      "allow github.com get\n"
      "allow github.com GET repos/**\n"
      "allow github.com GET /a/***\n"
      "allow github.com GET /a%20b\n"
      "allow exa mple.com GET / extra\n"
      "allow bad_host!.com\n"
      "allow github.com GET /ok/*\n",
      {"not a host!"});
  ASSERT_EQ(loaded.issues.size(), 9u);
  EXPECT_EQ(loaded.issues[0].line, 3u);
  EXPECT_NE(loaded.issues[0].message.find("allow or deny"), std::string::npos);
  EXPECT_EQ(loaded.issues[1].line, 4u);
  EXPECT_NE(loaded.issues[2].message.find("bad method 'get'"), std::string::npos);
  EXPECT_NE(loaded.issues[3].message.find("starts with '/'"), std::string::npos);
  EXPECT_NE(loaded.issues[4].message.find("'***'"), std::string::npos);
  EXPECT_NE(loaded.issues[5].message.find("'%'"), std::string::npos);
  EXPECT_NE(loaded.issues[6].message.find("too many fields"), std::string::npos);
  EXPECT_EQ(loaded.issues[7].line, 10u);
  EXPECT_EQ(loaded.issues[8].source, "SANDGATE_INSPECT");
  EXPECT_EQ(loaded.rules.size(), 1u);
  EXPECT_EQ(decide(loaded.rules, "github.com", "GET", "/ok/x"), Kind::allowed);
}

TEST(NormalisePath, DecodesEscapesAndRefusesWhatOriginsReadDifferently) {
  EXPECT_EQ(normalise_path("/a%20b/%7Euser?x=%2F").value().path, "/a b/~user");
  EXPECT_EQ(normalise_path("/a%20b/%7Euser?x=%2F").value().query, "x=%2F");
  EXPECT_EQ(normalise_path("/dir/").value().path, "/dir/");
  EXPECT_EQ(normalise_path("/").value().path, "/");
  EXPECT_EQ(normalise_path("*").value().path, "*");
  for (const char* bad : {"/a/../b",
                          "/a/./b",
                          "/a//b",
                          "//a",
                          "/a/%2e%2e/b",
                          "/a%2Fb",
                          "/a%2fb",
                          "/a%5Cb",
                          "/a\\b",
                          "/a;jsessionid=1/b",
                          "/a%3Bb",
                          "/a%25b",
                          "/a%zz",
                          "/a%2",
                          "/a%00b",
                          "relative",
                          "",
                          "/a/..",
                          "/%2E/x",
                          "/repos/%C0%AE%C0%AE/user",
                          "/repos/\xEF\xBC\x8E\xEF\xBC\x8E/user",
                          "/caf%C3%A9"}) {
    EXPECT_FALSE(normalise_path(bad).has_value()) << bad;
  }
}

// Git hosts answer `/o/r.GIT` and `/o/r.git.git` as `/o/r`: a deny line for the repository
// meets every spelling.
TEST(RequestRules, ARepositoryIsJudgedWhateverItsDotGitSuffixes) {
  const auto loaded = load(
      "deny  github.com git-push /ourorg/secret\n"
      "allow github.com git-push /ourorg/*\n");
  ASSERT_TRUE(loaded.issues.empty());
  for (const std::string_view repository :
       {"/ourorg/secret", "/ourorg/secret.git", "/ourorg/secret.GIT", "/ourorg/secret.git.git",
        "/ourorg/Secret.Git"}) {
    EXPECT_EQ(
        decide(loaded.rules, "github.com", "POST", std::string(repository) + "/git-receive-pack"),
        Kind::denied)
        << repository;
    EXPECT_EQ(decide(loaded.rules, "github.com", "GET",
                     std::string(repository) + "/info/refs?service=git-receive-pack"),
              Kind::denied)
        << repository;
  }
  EXPECT_EQ(decide(loaded.rules, "github.com", "POST", "/ourorg/app.GIT/git-receive-pack"),
            Kind::allowed);
}

// The `_method` parameters frameworks read: any case, `;` as a separator, PHP's spellings.
TEST(RequestRules, QueryMethodOverridesInEverySpellingOriginsRead) {
  using V = std::vector<std::string>;
  EXPECT_EQ(query_method_overrides("a=1&_method=DELETE"), V{"DELETE"});
  EXPECT_EQ(query_method_overrides("_METHOD=PUT"), V{"PUT"});
  EXPECT_EQ(query_method_overrides("a=1;_method=PATCH"), V{"PATCH"});
  EXPECT_EQ(query_method_overrides(".method=DELETE&%20method=PUT&%5Bmethod=GET&+method=POST"),
            (V{"DELETE", "PUT", "GET", "POST"}));
  EXPECT_EQ(query_method_overrides("%5Fmethod=DEL%45TE"), V{"DELETE"});
  EXPECT_EQ(query_method_overrides("method=DELETE&x_method=PUT"), V{});
  EXPECT_TRUE(is_method_token("DELETE"));
  EXPECT_FALSE(is_method_token("DELETE, GET"));
  EXPECT_FALSE(is_method_token("DELETE\xa0"));
  EXPECT_FALSE(is_method_token(""));
}

TEST(ClassifyGit, SmartHttpServicesAndTheirRepository) {
  auto git = [](std::string_view method, std::string_view target,
                std::string_view content_type = kUploadPackType) {
    const auto normal = normalise_path(target).value();
    return classify_git({method, normal.path, normal.query, content_type});
  };
  EXPECT_EQ(git("GET", "/o/r.git/info/refs?service=git-upload-pack").service, GitService::fetch);
  EXPECT_EQ(git("GET", "/o/r.git/info/refs?service=git-upload-pack").repository, "/o/r");
  EXPECT_EQ(git("GET", "/o/r/info/refs").service, GitService::fetch);  // the dumb protocol
  EXPECT_EQ(git("GET", "/o/r.git/info/refs?service=git-receive-pack").service, GitService::push);
  EXPECT_EQ(git("GET", "/o/r.git/info/refs?service=git%2Dreceive%2Dpack").service,
            GitService::push);
  // Two services: the stricter one.
  EXPECT_EQ(
      git("GET", "/o/r.git/info/refs?service=git-upload-pack&service=git-receive-pack").service,
      GitService::push);
  EXPECT_EQ(git("POST", "/o/r.git/git-upload-pack").service, GitService::fetch);
  EXPECT_EQ(git("POST", "/o/r.git/git-upload-pack", " Application/X-Git-Upload-Pack-Request ; x=1")
                .service,
            GitService::fetch);
  // Fetch only with git's type; a push whatever its type.
  EXPECT_EQ(git("POST", "/o/r.git/git-upload-pack", "").service, GitService::none);
  EXPECT_EQ(git("POST", "/o/r.git/git-upload-pack", "text/plain").service, GitService::none);
  EXPECT_EQ(git("POST", "/o/r.git/git-receive-pack", "").service, GitService::push);
  EXPECT_EQ(git("POST", "/o/r.git/git-receive-pack").service, GitService::push);
  EXPECT_EQ(git("POST", "/o/r.git/git-receive-pack").repository, "/o/r");
  EXPECT_EQ(git("GET", "/o/r.git/git-receive-pack").service, GitService::none);
  EXPECT_EQ(git("POST", "/git-receive-pack").service, GitService::none);
  EXPECT_EQ(git("GET", "/o/r/blob/main/README.md").service, GitService::none);
}

TEST(RequestRules, DescribesRequestsAsPeopleReadThem) {
  EXPECT_EQ(describe_request("api.github.com", {"POST", "/repos/o/r/pulls", "", {}}),
            "POST api.github.com/repos/o/r/pulls");
  EXPECT_EQ(describe_request("github.com", {"POST", "/o/r.git/git-receive-pack", "", {}}),
            "git push to github.com/o/r");
  EXPECT_EQ(
      describe_request("github.com", {"POST", "/o/r.git/git-upload-pack", "", kUploadPackType}),
      "git fetch from github.com/o/r");
}

}  // namespace
}  // namespace sandgate::rules

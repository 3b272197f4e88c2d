// The CONNECT request, the proxy's response head and the refusal messages of sandgate-connect.
#include "connect-proxy/connect_request.hpp"

#include <gtest/gtest.h>

namespace sandgate::connect_proxy {
namespace {

TEST(Authority, NamesAndAddresses) {
  EXPECT_EQ(*make_authority("github.com", "22"), "github.com:22");
  EXPECT_EQ(*make_authority("127.0.0.1", "2222"), "127.0.0.1:2222");
  EXPECT_EQ(*make_authority("::1", "22"), "[::1]:22");
  EXPECT_EQ(*make_authority("[2001:db8::1]", "22"), "[2001:db8::1]:22");
  EXPECT_EQ(*make_authority("Host.Example.", "65535"), "Host.Example.:65535");
  EXPECT_EQ(*make_authority("b\xc3\xbc"
                            "cher.example",
                            "22"),
            "b\xc3\xbc"
            "cher.example:22");
}

TEST(Authority, RefusesWhatCouldBreakTheRequest) {
  for (const char* host :
       {"", "a b", "a\r\nX-Injected: 1", "evil.com@github.com", "github.com/.attacker", "a?b",
        "a#b", "a\\b", "a\"b", "[::1", "not:v6", "a\x7f"}) {
    EXPECT_FALSE(make_authority(host, "22")) << host;
  }
  for (const char* port : {"", "0", "65536", "22x", "-1", " 22", "ssh"}) {
    EXPECT_FALSE(make_authority("github.com", port)) << port;
  }
  EXPECT_FALSE(make_authority(std::string(256, 'a'), "22"));
}

TEST(Request, ConnectWithHost) {
  EXPECT_EQ(build_connect_request("[::1]:22"),
            "CONNECT [::1]:22 HTTP/1.1\r\nHost: [::1]:22\r\n\r\n");
}

TEST(Request, ConnectWithCredentials) {
  EXPECT_EQ(build_connect_request("github.com:22", "sandgate:tok"),
            "CONNECT github.com:22 HTTP/1.1\r\nHost: github.com:22\r\n"
            "Proxy-Authorization: Basic c2FuZGdhdGU6dG9r\r\n\r\n");
}

TEST(Base64, Rfc4648Vectors) {
  EXPECT_EQ(encode_base64(""), "");
  EXPECT_EQ(encode_base64("f"), "Zg==");
  EXPECT_EQ(encode_base64("fo"), "Zm8=");
  EXPECT_EQ(encode_base64("foo"), "Zm9v");
  EXPECT_EQ(encode_base64("foob"), "Zm9vYg==");
  EXPECT_EQ(encode_base64("fooba"), "Zm9vYmE=");
  EXPECT_EQ(encode_base64("foobar"), "Zm9vYmFy");
  EXPECT_EQ(encode_base64("\xff\xfe\xfd"), "//79");
}

TEST(HeadEnd, FindsTheBlankLine) {
  EXPECT_EQ(find_head_end("HTTP/1.1 200 OK\r\n\r\n"), 19u);
  EXPECT_EQ(find_head_end("HTTP/1.1 200 OK\r\n\r\nSSH-2.0-x\r\n"), 19u);
  EXPECT_EQ(find_head_end("HTTP/1.1 200 OK\n\nrest"), 17u);
  EXPECT_EQ(find_head_end("HTTP/1.1 200 OK\r\nA: b\r\n\r\n"), 25u);
  EXPECT_EQ(find_head_end("HTTP/1.1 200 OK\r\n"), std::nullopt);
  EXPECT_EQ(find_head_end("HTTP/1.1 200 OK\r\n\r"), std::nullopt);
  EXPECT_EQ(find_head_end(""), std::nullopt);
}

TEST(ResponseHead, StatusReasonAndDetails) {
  auto head = parse_response_head(
      "HTTP/1.1 403 Forbidden\r\n"
      "proxy-status: sandgate; error=http_request_denied; details=\"ssh-non-git-host: "
      "other.test is not a git host (GOOSE_SANDBOX_GIT_HOSTS).\"\r\n"
      "Content-Length: 10\r\n\r\n");
  ASSERT_TRUE(head) << head.error();
  EXPECT_EQ(head->status, 403);
  EXPECT_EQ(head->reason, "Forbidden");
  EXPECT_EQ(head->details,
            "ssh-non-git-host: other.test is not a git host (GOOSE_SANDBOX_GIT_HOSTS).");

  head = parse_response_head("HTTP/1.0 200\r\n\r\n");
  ASSERT_TRUE(head) << head.error();
  EXPECT_EQ(head->status, 200);
  EXPECT_EQ(head->reason, "");
}

TEST(ResponseHead, NotHttp) {
  for (const char* text :
       {"SSH-2.0-OpenSSH_9.2\r\n\r\n", "HTTP/1.1 20 OK\r\n\r\n", "HTTP/1.1 2000 OK\r\n\r\n",
        "HTTP/2 200\r\n\r\n", "HTTP/1.1 abc OK\r\n\r\n", "\r\n"}) {
    auto head = parse_response_head(text);
    ASSERT_FALSE(head) << text;
    EXPECT_NE(head.error().find("not an HTTP response"), std::string::npos) << head.error();
  }
}

TEST(ProxyStatus, DetailsForms) {
  EXPECT_EQ(proxy_status_details(R"( sandgate; error=x; details="a \"quoted\" \\ b")"),
            R"(a "quoted" \ b)");
  EXPECT_EQ(proxy_status_details("sandgate; details=token; error=x"), "token");
  EXPECT_EQ(proxy_status_details(R"(sandgate; details="unterminated)"), "unterminated");
  EXPECT_EQ(proxy_status_details("sandgate; error=x"), std::nullopt);
  EXPECT_EQ(proxy_status_details("details; error=x"), std::nullopt);
}

TEST(Refusal, Messages) {
  ResponseHead denied{403, "Forbidden", "blocklist: evil.test is blocked by 'evil.test'."};
  EXPECT_EQ(describe_refusal(denied, "127.0.0.1:9877", "evil.test:22"),
            "the proxy at 127.0.0.1:9877 refused evil.test:22 with 403 Forbidden (blocklist): "
            "evil.test is blocked by 'evil.test'.");

  ResponseHead upstream{502, "Bad Gateway", "connection-refused: 127.0.0.1:1 refused."};
  EXPECT_EQ(describe_refusal(upstream, "[::1]:1", "a.test:1"),
            "the proxy at [::1]:1 could not connect to a.test:1: 502 Bad Gateway "
            "(connection-refused): 127.0.0.1:1 refused.");

  ResponseHead plain{407, "Proxy Authentication Required", ""};
  // Another proxy's 407: the generic message.
  EXPECT_EQ(describe_refusal(plain, "p:3128", "a.test:22"),
            "the proxy at p:3128 answered CONNECT a.test:22 with 407 Proxy Authentication "
            "Required");
  EXPECT_EQ(describe_refusal(plain, "p:3128", "a.test:22", true),
            "the proxy at p:3128 answered CONNECT a.test:22 with 407 Proxy Authentication "
            "Required");
  // sandgate's: about its token.
  ResponseHead required{407, "Proxy Authentication Required",
                        "auth-required: this gate requires a token."};
  EXPECT_EQ(describe_refusal(required, "127.0.0.1:9877", "a.test:22"),
            "the proxy at 127.0.0.1:9877 requires a token for CONNECT a.test:22: 407 Proxy "
            "Authentication Required (auth-required): this gate requires a token. "
            "sandgate-connect sends one from SANDGATE_TOKEN, from the file SANDGATE_TOKEN_FILE "
            "names, or from a proxy address of the form http://USER:TOKEN@HOST:PORT.");
  ResponseHead failed{407, "Proxy Authentication Required",
                      "auth-failed: the token in Proxy-Authorization is not this gate's token."};
  EXPECT_EQ(describe_refusal(failed, "127.0.0.1:9877", "a.test:22", true),
            "the proxy at 127.0.0.1:9877 did not accept the token sent for CONNECT a.test:22: 407 "
            "Proxy Authentication Required (auth-failed): the token in Proxy-Authorization is "
            "not this gate's token.");

  ResponseHead free_text{400, "Bad Request", "no code here"};
  EXPECT_EQ(describe_refusal(free_text, "p:1", "a:2"),
            "the proxy at p:1 answered CONNECT a:2 with 400 Bad Request: no code here");
}

TEST(Printable, ControlsAndLength) {
  EXPECT_EQ(printable("a\x1b[31mb\r\n"), "a?[31mb??");
  EXPECT_EQ(printable("abcdef", 3), "abc...");
}

}  // namespace
}  // namespace sandgate::connect_proxy

// Tests for net/url: the one URL grammar (split_url), the request view of it
// (parse_url) and NO_PROXY matching.
#include "net/url.hpp"

#include <gtest/gtest.h>

#include <optional>
#include <string>

namespace lse::net {
namespace {

Url must_parse(const std::string& text) {
  auto u = parse_url(text);
  EXPECT_TRUE(u.has_value()) << text;
  return u.value_or(Url{});
}

TEST(ParseUrl, KeepsTheQueryButNotInRedacted) {
  const Url u = must_parse("https://h.example/v1/?api-version=2&key=s3cret#f");
  EXPECT_EQ(u.path, "/v1");
  EXPECT_EQ(u.query, "api-version=2&key=s3cret");
  EXPECT_EQ(u.redacted(), "https://h.example/v1");
  EXPECT_EQ(must_parse("http://h/v1").query, "");
}

TEST(ParseUrl, SchemesAndDefaultPorts) {
  Url u = must_parse("http://api.example.com");
  EXPECT_FALSE(u.tls);
  EXPECT_EQ(u.host, "api.example.com");
  EXPECT_EQ(u.port, "80");
  EXPECT_EQ(u.path, "");
  u = must_parse("https://api.example.com");
  EXPECT_TRUE(u.tls);
  EXPECT_EQ(u.port, "443");
  u = must_parse("HTTPS://api.example.com:8443");  // schemes are case-insensitive
  EXPECT_TRUE(u.tls);
  EXPECT_EQ(u.port, "8443");
  EXPECT_EQ(must_parse("http://h:").port, "80");  // an empty port is the default
  EXPECT_EQ(must_parse("http://[::1]:").port, "80");
  for (const char* bad : {"ftp://h", "h:80", "//h", "", "https:/h", "mailto:x@h"})
    EXPECT_EQ(parse_url(bad), std::nullopt) << bad;
}

TEST(ParseUrl, PathIsKeptWithoutTrailingSlashesQueryOrFragment) {
  EXPECT_EQ(must_parse("https://h/v1").path, "/v1");
  EXPECT_EQ(must_parse("https://h/v1/").path, "/v1");
  EXPECT_EQ(must_parse("https://h/v1//").path, "/v1");
  EXPECT_EQ(must_parse("https://h/").path, "");
  EXPECT_EQ(must_parse("https://h/openai/v1/").path, "/openai/v1");
  EXPECT_EQ(must_parse("https://h/v1?key=sk-1#frag").path, "/v1");
  EXPECT_EQ(must_parse("https://h?key=sk-1").host, "h");
}

TEST(ParseUrl, Ipv6Literals) {
  Url u = must_parse("http://[::1]:8080/v1");
  EXPECT_EQ(u.host, "::1");
  EXPECT_EQ(u.port, "8080");
  EXPECT_EQ(u.path, "/v1");
  EXPECT_EQ(u.authority(), "[::1]:8080");
  u = must_parse("https://[2001:db8::1]");
  EXPECT_EQ(u.host, "2001:db8::1");
  EXPECT_EQ(u.port, "443");
  EXPECT_EQ(u.authority(), "[2001:db8::1]");
  u = must_parse("http://[fe80::1%25eth0]:9000");  // zone id, percent-encoded
  EXPECT_EQ(u.host, "fe80::1%25eth0");
  EXPECT_EQ(u.port, "9000");
  u = must_parse("http://[::ffff:192.0.2.1]/");  // embedded IPv4
  EXPECT_EQ(u.host, "::ffff:192.0.2.1");
  for (const char* bad : {"http://[::1", "http://[::1]x", "http://[zz::1]", "http://[1.2.3.4]",
                          "http://[]", "http://[fe80::1%]"})
    EXPECT_EQ(parse_url(bad), std::nullopt) << bad;
}

TEST(ParseUrl, UserinfoIsDroppedFromWhatIsKept) {
  // Proxies from the environment may carry user:password@; nothing kept shows it.
  Url u = must_parse("http://user:hunter2@proxy.local:3128");
  EXPECT_EQ(u.host, "proxy.local");
  EXPECT_EQ(u.port, "3128");
  EXPECT_EQ(u.redacted(), "http://proxy.local:3128");
  EXPECT_EQ(u.redacted().find("hunter2"), std::string::npos);
  EXPECT_EQ(must_parse("https://a@b@h/p").host, "h");
}

TEST(ParseUrl, RedactedAndAuthority) {
  EXPECT_EQ(must_parse("https://h:443/v1/").redacted(), "https://h/v1");
  EXPECT_EQ(must_parse("http://h:80").authority(), "h");
  EXPECT_EQ(must_parse("http://h:443").authority(), "h:443");
  EXPECT_EQ(must_parse("https://h:80/x").redacted(), "https://h:80/x");
}

TEST(ParseUrl, JunkIsRejected) {
  for (const char* bad :
       {"http://", "http:///v1", "http://:80", "http://h:0", "http://h:65536", "http://h:8o",
        "http://h:-1", "http://h:123456", "http://ho st", "http://h/a b", "http://h\t",
        "http://h\x7f", "http://h!x", "http://h:80:90", "http://user@", "https://\xC3\xA9.com"})
    EXPECT_EQ(parse_url(bad), std::nullopt) << bad;
  EXPECT_EQ(must_parse("http://h:65535").port, "65535");
  EXPECT_EQ(must_parse("http://h:1").port, "1");
}

TEST(SplitUrl, ReportsEachPartAndTheFirstIssue) {
  UrlParts p = split_url("HTTPS://u:p@Host.Example:8443/v1/?q=1#f");
  EXPECT_EQ(p.scheme, "https");
  EXPECT_EQ(p.authority, "Host.Example:8443");
  EXPECT_EQ(p.host, "Host.Example");
  EXPECT_EQ(p.port, "8443");
  EXPECT_EQ(p.path, "/v1/");
  EXPECT_TRUE(p.has_port);
  EXPECT_TRUE(p.has_userinfo);
  EXPECT_TRUE(p.has_query);
  EXPECT_EQ(p.query, "q=1");
  EXPECT_TRUE(p.has_fragment);
  EXPECT_FALSE(p.has_control_or_space);
  EXPECT_EQ(p.issue, AuthorityIssue::none);

  EXPECT_EQ(split_url("example.com").scheme, "");
  EXPECT_TRUE(split_url("http://h /x").has_control_or_space);
  EXPECT_EQ(split_url("http://").issue, AuthorityIssue::no_host);
  EXPECT_EQ(split_url("http://:80").issue, AuthorityIssue::no_host);
  EXPECT_EQ(split_url("http://[::1").issue, AuthorityIssue::bad_ipv6);
  p = split_url("http://[::1]x");
  EXPECT_EQ(p.issue, AuthorityIssue::after_host);
  EXPECT_EQ(p.offending, "x");
  p = split_url("http://h!x:80");
  EXPECT_EQ(p.issue, AuthorityIssue::bad_host);
  EXPECT_EQ(p.offending, "h!x");
  p = split_url("http://h:99999");
  EXPECT_EQ(p.issue, AuthorityIssue::bad_port);
  EXPECT_EQ(p.offending, "99999");
}

bool no_proxy(const char* list, const char* url) { return no_proxy_matches(list, must_parse(url)); }

TEST(NoProxy, ExactHost) {
  EXPECT_TRUE(no_proxy("api.example.com", "https://api.example.com/v1"));
  EXPECT_FALSE(no_proxy("api.example.com", "https://other.example.com"));
  EXPECT_TRUE(no_proxy("10.0.0.5", "http://10.0.0.5:8000"));
  EXPECT_FALSE(no_proxy("10.0.0.5", "http://10.0.0.50"));
  EXPECT_FALSE(no_proxy("", "http://h"));
}

TEST(NoProxy, SuffixesMatchSubdomainsOnly) {
  for (const char* list : {".example.com", "example.com"}) {
    EXPECT_TRUE(no_proxy(list, "https://api.example.com")) << list;
    EXPECT_TRUE(no_proxy(list, "https://a.b.example.com")) << list;
    EXPECT_TRUE(no_proxy(list, "https://example.com")) << list;
    EXPECT_FALSE(no_proxy(list, "https://notexample.com")) << list;
    EXPECT_FALSE(no_proxy(list, "https://example.com.evil.net")) << list;
  }
  EXPECT_FALSE(no_proxy("api.example.com", "https://example.com"));
}

TEST(NoProxy, HostAndPort) {
  EXPECT_TRUE(no_proxy("h:8080", "http://h:8080"));
  EXPECT_FALSE(no_proxy("h:8080", "http://h:8081"));
  EXPECT_FALSE(no_proxy("h:80", "https://h"));  // the default port counts
  EXPECT_TRUE(no_proxy("h:443", "https://h"));
  EXPECT_TRUE(no_proxy(".example.com:443", "https://api.example.com"));
}

TEST(NoProxy, StarSpacesAndEmptyItems) {
  EXPECT_TRUE(no_proxy("*", "https://anything.example"));
  EXPECT_TRUE(no_proxy("a.test, *", "https://b.test"));
  EXPECT_TRUE(no_proxy("a.test,  b.test ,c.test", "https://b.test"));
  EXPECT_TRUE(no_proxy("\tb.test\t", "https://b.test"));
  EXPECT_TRUE(no_proxy(",,b.test,", "https://b.test"));
  EXPECT_FALSE(no_proxy(" , ,", "https://b.test"));
  EXPECT_FALSE(no_proxy("*.b.test", "https://c.test"));
}

TEST(NoProxy, Ipv6) {
  for (const char* list : {"[::1]", "::1", "[::1]:8080", "x, [::1] "})
    EXPECT_TRUE(no_proxy(list, "http://[::1]:8080")) << list;
  EXPECT_FALSE(no_proxy("[::1]:9090", "http://[::1]:8080"));
  EXPECT_FALSE(no_proxy("::2", "http://[::1]:8080"));
  EXPECT_TRUE(no_proxy("2001:DB8::1", "http://[2001:db8::1]"));
}

TEST(NoProxy, CaseInsensitive) {
  EXPECT_TRUE(no_proxy("API.Example.COM", "https://api.example.com"));
  EXPECT_TRUE(no_proxy(".EXAMPLE.com", "https://Api.example.com"));
}

}  // namespace
}  // namespace lse::net

// --web.route-prefix and --web.external-url, read as Prometheus reads them.
#include "web/route_prefix.hpp"

#include <gtest/gtest.h>

#include <stdexcept>

namespace lse::web {
namespace {

TEST(RoutePrefix, FromTheFlagOrTheExternalUrlsPath) {
  EXPECT_EQ(route_prefix("", ""), "");
  EXPECT_EQ(route_prefix("/", ""), "");
  EXPECT_EQ(route_prefix("lse", ""), "/lse");
  EXPECT_EQ(route_prefix("/lse/", ""), "/lse");
  EXPECT_EQ(route_prefix("//a/b//", ""), "/a/b");
  EXPECT_EQ(route_prefix("", "https://example.com/llm-stream/"), "/llm-stream");
  EXPECT_EQ(route_prefix("", "http://example.com:8080/a/b"), "/a/b");
  EXPECT_EQ(route_prefix("", "https://example.com"), "");
  EXPECT_EQ(route_prefix("", "https://example.com/"), "");
  // The flag wins: a proxy that strips the external path.
  EXPECT_EQ(route_prefix("/", "https://example.com/llm-stream/"), "");
  EXPECT_EQ(route_prefix("/inner", "https://example.com/outer/"), "/inner");
}

TEST(RoutePrefix, BadValuesNameTheirFlag) {
  auto message = [](std::string_view prefix, std::string_view url) {
    try {
      route_prefix(prefix, url);
    } catch (const std::invalid_argument& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_EQ(message("/a b", "").rfind("--web.route-prefix:", 0), 0u);
  EXPECT_EQ(message("/a?b", "").rfind("--web.route-prefix:", 0), 0u);
  for (const char* url : {"example.com/x", "/x", "ftp://example.com/x", "https:///x", "http://"})
    EXPECT_EQ(message("", url).rfind("--web.external-url:", 0), 0u) << url;
  EXPECT_EQ(message("", "https://user:secret@/x").find("secret"), std::string::npos);
}

}  // namespace
}  // namespace lse::web

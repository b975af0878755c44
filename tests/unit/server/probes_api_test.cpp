// /api/v1/probes stays bounded: rows of 50,000 gaps each are listed in
// bodies of at most 4 MiB (plus one row), each ending with "truncated" and
// the "next" URL, and following "next" lists every row exactly once.
#include <gtest/gtest.h>

#include <set>
#include <string>

#include "report/row_json.hpp"
#include "server/routes.hpp"
#include "util/json.hpp"

namespace lse::server {
namespace {

namespace http = boost::beast::http;

constexpr std::size_t kBodyCap = std::size_t{4} << 20;

probe::ProbeResult long_answer(int n, const std::string& target) {
  probe::ProbeResult r;
  r.id = "probe-" + std::to_string(n);
  r.ts = 1700000000 + n;
  r.target = target;
  r.model = "m";
  r.prompt = "p";
  r.ok = true;
  r.chunks = 50'000;
  r.gaps.assign(49'999, 0.012345);
  return r;
}

struct ProbesApi : ::testing::Test {
  report::RowStore rows{1000, {}};
  Hooks hooks;
  Routing routing;
  Response get(const std::string& target) {
    Request req{http::verb::get, target, 11};
    return handle_request(req, RouteContext{hooks, rows, 1700000100, routing, true});
  }
};

// The ids of a /api/v1/probes body, and its "next" ("" when whole).
std::pair<std::vector<std::string>, std::string> ids_and_next(const std::string& body) {
  std::vector<std::string> ids;
  for (std::size_t at = body.find("\"id\":\""); at != std::string::npos;
       at = body.find("\"id\":\"", at + 1)) {
    const std::size_t from = at + 6;
    ids.push_back(body.substr(from, body.find('"', from) - from));
  }
  std::string next;
  if (const auto at = body.rfind(",\"truncated\":true,\"next\":\""); at != std::string::npos) {
    const std::size_t from = at + 26;
    next = body.substr(from, body.find('"', from) - from);
  }
  return {ids, next};
}

TEST_F(ProbesApi, HugeRowsAreListedInBoundedPagesThatLinkTheRest) {
  for (int i = 0; i < 60; ++i) rows.add(long_answer(i, i % 2 ? "odd" : "even"));
  const std::size_t one_row = report::to_row_json(long_answer(0, "even")).size();
  ASSERT_GT(one_row * 60, 5 * kBodyCap);  // unbounded, the answer would be > 20 MB

  std::vector<std::string> listed;
  std::string url = "/api/v1/probes?limit=55";
  int pages = 0;
  while (!url.empty()) {
    const Response res = get(url);
    ASSERT_EQ(res.result(), http::status::ok) << url << ": " << res.body();
    EXPECT_LE(res.body().size(), kBodyCap + one_row) << url;
    auto [ids, next] = ids_and_next(res.body());
    ASSERT_FALSE(ids.empty());
    listed.insert(listed.end(), ids.begin(), ids.end());
    url = next;
    ++pages;
  }
  EXPECT_GE(pages, 5);
  ASSERT_EQ(listed.size(), 55u);  // the limit holds across pages
  for (std::size_t k = 0; k < listed.size(); ++k)
    EXPECT_EQ(listed[k], "probe-" + std::to_string(59 - k));  // newest first, each once
}

TEST_F(ProbesApi, NextKeepsTheTargetAndThePrefix) {
  routing.route_prefix = "/lse";
  for (int i = 0; i < 40; ++i) rows.add(long_answer(i, i % 2 ? "odd" : "even"));
  const Response first = get("/lse/api/v1/probes?limit=1000&target=odd");
  auto [ids, next] = ids_and_next(first.body());
  ASSERT_FALSE(next.empty());
  // What is left of the limit asked for (1000, the ring's capacity).
  EXPECT_EQ(next, "/lse/api/v1/probes?limit=" + std::to_string(1000 - ids.size()) +
                      "&older_than=" + ids.back() + "&target=odd");
  std::set<std::string> all(ids.begin(), ids.end());
  while (!next.empty()) {
    auto page = ids_and_next(get(next).body());
    for (const auto& id : page.first) EXPECT_TRUE(all.insert(id).second) << id << " twice";
    next = page.second;
  }
  EXPECT_EQ(all.size(), 20u);
  for (const auto& id : all) EXPECT_EQ(std::stoi(id.substr(6)) % 2, 1) << id;
}

TEST_F(ProbesApi, SmallAnswersAreWholeAndUnmarked) {
  for (int i = 0; i < 3; ++i) {
    auto r = long_answer(i, "t");
    r.gaps = {0.1};
    rows.add(r);
  }
  const Response res = get("/api/v1/probes");
  EXPECT_EQ(res.body().find("truncated"), std::string::npos);
  EXPECT_EQ(ids_and_next(res.body()).first,
            (std::vector<std::string>{"probe-2", "probe-1", "probe-0"}));
  const Response older = get("/api/v1/probes?older_than=probe-1");
  EXPECT_EQ(ids_and_next(older.body()).first, std::vector<std::string>{"probe-0"});
  const Response gone = get("/api/v1/probes?older_than=probe-99");
  EXPECT_EQ(gone.result(), http::status::not_found);
  EXPECT_NE(gone.body().find("probe-99"), std::string::npos);
}

}  // namespace
}  // namespace lse::server

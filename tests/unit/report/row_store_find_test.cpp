// RowStore::find: a kept probe by its id (what /api/v1/probes?id= and the
// probe page serve), gone once the ring and the newest-per-target have let it go.
#include <gtest/gtest.h>

#include "report/row_json.hpp"
#include "report/row_store.hpp"

namespace lse::report {
namespace {

probe::ProbeResult probe_row(const std::string& target, const std::string& id, int n) {
  probe::ProbeResult r;
  r.ts = 1700000000 + n;
  r.id = id;
  r.target = target;
  r.ok = true;
  r.chunks = static_cast<std::size_t>(n);
  return r;
}

TEST(RowStoreFind, ARowOfTheRingByItsId) {
  RowStore store(10, {});
  store.add(probe_row("a", "aaaa000000000001", 1));
  store.add(probe_row("b", "bbbb000000000002", 2));
  store.add(probe_row("a", "aaaa000000000003", 3));
  const auto line = store.find("bbbb000000000002");
  ASSERT_TRUE(line);
  EXPECT_EQ(*line, to_row_json(probe_row("b", "bbbb000000000002", 2)));
  const auto result = store.find_result("aaaa000000000001");
  ASSERT_TRUE(result);
  EXPECT_EQ(result->chunks, 1u);
  EXPECT_FALSE(store.find("cccc000000000000"));
  EXPECT_FALSE(store.find(""));  // rows without an id are not found by one
}

TEST(RowStoreFind, WarmupIsNotKeptAndEvictedRowsAreGone) {
  RowStore store(2, {});
  auto warm = probe_row("a", "warm000000000000", 0);
  warm.warmup = true;
  store.add(warm);
  EXPECT_FALSE(store.find("warm000000000000"));
  store.add(probe_row("a", "a1", 1));
  store.add(probe_row("b", "b2", 2));
  store.add(probe_row("b", "b3", 3));  // a1 leaves the ring but stays a's newest row
  EXPECT_TRUE(store.find("a1"));
  store.add(probe_row("a", "a4", 4));  // now a1 is neither
  EXPECT_FALSE(store.find("a1"));
  EXPECT_FALSE(store.find("b2"));
  EXPECT_TRUE(store.find("b3"));
  EXPECT_TRUE(store.find("a4"));
}

}  // namespace
}  // namespace lse::report

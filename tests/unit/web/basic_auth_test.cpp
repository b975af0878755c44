// Basic auth: the Authorization header, bcrypt against real hashes (made by
// htpasswd, and by libxcrypt at cost 4 where many are needed), the
// constant-time comparison, the unknown-user timing guard and the cache of
// successful checks.
#include "web/basic_auth.hpp"

#include <crypt.h>
#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <stdexcept>
#include <string>

namespace lse::web {
namespace {

// Made with `htpasswd -nbBC 10 user pass` when this test was written.
constexpr const char* kUser = "user";
constexpr const char* kPassword = "pass";
constexpr const char* kHash = "$2y$10$Xc4ibDGsh4wvAg/eVu8i3.X0L0WN4uKWa7/8TrRYzbRGJtGWPPace";

// "Basic " + base64(user:password), written out so the test does not share
// the code under test's encoder.
constexpr const char* kUserPass = "Basic dXNlcjpwYXNz";        // user:pass
constexpr const char* kUserWrong = "Basic dXNlcjpwYXNzeA==";   // user:passx
constexpr const char* kNobodyPass = "Basic bm9ib2R5OnBhc3M=";  // nobody:pass

// A fresh bcrypt hash at cost 4 (~1 ms), for tests that need many.
std::string cheap_hash(const std::string& password) {
  char setting[CRYPT_GENSALT_OUTPUT_SIZE];
  if (!crypt_gensalt_rn("$2b$", 4, nullptr, 0, setting, sizeof setting))
    throw std::runtime_error("crypt_gensalt_rn");
  auto data = std::make_unique<crypt_data>();
  const char* out = crypt_rn(password.c_str(), setting, data.get(), sizeof(crypt_data));
  if (!out || out[0] == '*') throw std::runtime_error("crypt_rn");
  return out;
}

std::string basic(const std::string& user_colon_password) {
  static const char* kAlphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  const std::string& in = user_colon_password;
  for (std::size_t i = 0; i < in.size(); i += 3) {
    unsigned n = static_cast<unsigned char>(in[i]) << 16;
    if (i + 1 < in.size()) n |= static_cast<unsigned char>(in[i + 1]) << 8;
    if (i + 2 < in.size()) n |= static_cast<unsigned char>(in[i + 2]);
    out += kAlphabet[(n >> 18) & 63];
    out += kAlphabet[(n >> 12) & 63];
    out += i + 1 < in.size() ? kAlphabet[(n >> 6) & 63] : '=';
    out += i + 2 < in.size() ? kAlphabet[n & 63] : '=';
  }
  return "Basic " + out;
}

TEST(BasicAuthHeader, Parses) {
  auto c = parse_basic_authorization(kUserPass);
  ASSERT_TRUE(c);
  EXPECT_EQ(c->user, "user");
  EXPECT_EQ(c->password, "pass");
  EXPECT_TRUE(parse_basic_authorization("basic dXNlcjpwYXNz"));  // scheme is case-insensitive
  EXPECT_TRUE(parse_basic_authorization("BASIC  dXNlcjpwYXNz "));
  auto colon = parse_basic_authorization(basic("u:p:q"));  // the first ':' separates
  ASSERT_TRUE(colon);
  EXPECT_EQ(colon->user, "u");
  EXPECT_EQ(colon->password, "p:q");
  auto empty = parse_basic_authorization(basic(":"));
  ASSERT_TRUE(empty);
  EXPECT_EQ(empty->user, "");
  EXPECT_EQ(empty->password, "");
}

TEST(BasicAuthHeader, RejectsWhatIsNotBasicAuth) {
  for (const char* bad : {"", "Basic", "Basic ", "Bearer dXNlcjpwYXNz", "Basicd XNlcjpwYXNz",
                          "Basic dXNlcjpwYXNz=", "Basic dXNlcjpwYX=z", "Basic dXNl*jpwYXNz",
                          "Basic dXNlcg==" /* "user": no ':' */, "Basic =XNlcjpwYXNz"})
    EXPECT_FALSE(parse_basic_authorization(bad)) << bad;
}

TEST(BasicAuth, ConstantTimeEqual) {
  EXPECT_TRUE(constant_time_equal("", ""));
  EXPECT_TRUE(constant_time_equal(kHash, kHash));
  EXPECT_FALSE(constant_time_equal(kHash, std::string(kHash).substr(0, 59)));
  std::string last = kHash;
  last.back() = last.back() == 'e' ? 'f' : 'e';
  EXPECT_FALSE(constant_time_equal(kHash, last));
  std::string first = kHash;
  first[0] = '#';
  EXPECT_FALSE(constant_time_equal(kHash, first));
  EXPECT_FALSE(constant_time_equal("a", ""));
}

TEST(BasicAuth, BcryptAgainstARealHtpasswdHash) {
  EXPECT_TRUE(bcrypt_matches(kPassword, kHash));
  EXPECT_FALSE(bcrypt_matches("Pass", kHash));
  EXPECT_FALSE(bcrypt_matches("", kHash));
  EXPECT_FALSE(bcrypt_matches(std::string("pass\0x", 6), kHash));  // NUL would cut it short
  // $2a$ and $2b$ spell the same algorithm for an ASCII password.
  const std::string tail = std::string(kHash).substr(4);
  EXPECT_TRUE(bcrypt_matches(kPassword, "$2b$" + tail));
  EXPECT_TRUE(bcrypt_matches(kPassword, "$2a$" + tail));
  EXPECT_FALSE(bcrypt_matches(kPassword, "not a hash"));
  EXPECT_FALSE(bcrypt_matches(kPassword, ""));
  const std::string fresh = cheap_hash("s3cret");
  EXPECT_TRUE(is_bcrypt_hash(fresh));
  EXPECT_TRUE(bcrypt_matches("s3cret", fresh));
  EXPECT_FALSE(bcrypt_matches("s3cret ", fresh));
}

TEST(BasicAuth, VerifiesAndCachesOnlySuccess) {
  const Users users{{kUser, kHash}};
  BasicAuth auth;
  using V = BasicAuth::Verdict;
  EXPECT_EQ(auth.check_cached(users, ""), V::deny);
  EXPECT_EQ(auth.check_cached(users, "Bearer x"), V::deny);
  EXPECT_EQ(auth.check_cached(users, kUserPass), V::needs_bcrypt);

  EXPECT_FALSE(auth.verify(users, kUserWrong));
  EXPECT_EQ(auth.cached(), 0u);
  EXPECT_EQ(auth.check_cached(users, kUserWrong), V::needs_bcrypt);  // failures are not cached

  EXPECT_TRUE(auth.verify(users, kUserPass));
  EXPECT_EQ(auth.cached(), 1u);
  EXPECT_EQ(auth.check_cached(users, kUserPass), V::allow);
  EXPECT_EQ(auth.check_cached(users, kUserWrong), V::needs_bcrypt);
  EXPECT_TRUE(auth.verify(users, kUserPass));
  EXPECT_EQ(auth.cached(), 1u);

  // A changed hash (new password in the web config) or a removed user is not
  // answered from the cache.
  const Users rotated{{kUser, cheap_hash("new")}};
  EXPECT_EQ(auth.check_cached(rotated, kUserPass), V::needs_bcrypt);
  EXPECT_FALSE(auth.verify(rotated, kUserPass));
  EXPECT_TRUE(auth.verify(rotated, basic("user:new")));
  EXPECT_EQ(auth.check_cached(Users{}, kUserPass), V::needs_bcrypt);
  EXPECT_FALSE(auth.verify(Users{}, kUserPass));
}

TEST(BasicAuth, UnknownUserCostsABcryptToo) {
  const Users users{{kUser, kHash}};
  BasicAuth auth;
  EXPECT_EQ(auth.check_cached(users, kNobodyPass), BasicAuth::Verdict::needs_bcrypt);
  using Clock = std::chrono::steady_clock;
  auto t0 = Clock::now();
  EXPECT_FALSE(auth.verify(users, kUserWrong));
  const auto known = Clock::now() - t0;
  t0 = Clock::now();
  EXPECT_FALSE(auth.verify(users, kNobodyPass));
  const auto unknown = Clock::now() - t0;
  // Both run bcrypt at cost 10 (tens of ms); a shortcut would take microseconds.
  EXPECT_GT(unknown, known / 4) << "unknown user answered without bcrypt";
  EXPECT_GT(unknown, std::chrono::milliseconds(5));
}

TEST(BasicAuth, CacheIsBounded) {
  Users users;
  for (std::size_t i = 0; i <= BasicAuth::kCacheSize; ++i)
    users.emplace("u" + std::to_string(i), cheap_hash("p" + std::to_string(i)));
  BasicAuth auth;
  for (std::size_t i = 0; i <= BasicAuth::kCacheSize; ++i)
    ASSERT_TRUE(auth.verify(users, basic("u" + std::to_string(i) + ":p" + std::to_string(i))));
  EXPECT_EQ(auth.cached(), BasicAuth::kCacheSize);
  // The oldest went first; the newest is still there.
  EXPECT_EQ(auth.check_cached(users, basic("u0:p0")), BasicAuth::Verdict::needs_bcrypt);
  const std::string last = std::to_string(BasicAuth::kCacheSize);
  EXPECT_EQ(auth.check_cached(users, basic("u" + last + ":p" + last)), BasicAuth::Verdict::allow);
}

}  // namespace
}  // namespace lse::web

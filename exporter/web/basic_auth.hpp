// HTTP basic authentication against the web config's bcrypt hashes, as
// exporter-toolkit does it: the header is parsed strictly, the password is
// checked with libxcrypt's bcrypt ($2a$, $2b$, $2y$) and compared in constant
// time, an unknown user costs the same bcrypt as a known one (no user
// enumeration by timing), and successful checks are cached because one
// bcrypt at cost 10-12 takes 50-250 ms of CPU and Prometheus sends the same
// credentials every scrape.
#pragma once
#include <array>
#include <cstddef>
#include <deque>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <string_view>

#include "web/web_config.hpp"

namespace lse::web {

struct Credentials {
  std::string user;
  std::string password;
};

// "Basic <base64(user:password)>" (scheme case-insensitive, RFC 7617);
// nullopt for anything else, including bad base64 and a missing ':'.
std::optional<Credentials> parse_basic_authorization(std::string_view header_value);

// Equal length and bytes, in time that depends on the length only.
bool constant_time_equal(std::string_view a, std::string_view b);

// bcrypt(password, hash's salt and cost) == hash. False for a password with
// a NUL byte (bcrypt would stop there) and for a hash libxcrypt rejects.
bool bcrypt_matches(std::string_view password, const std::string& hash);

class BasicAuth {
 public:
  enum class Verdict { allow, deny, needs_bcrypt };

  // Thread-safe. The cheap part of a check: deny without credentials or for
  // a malformed header, allow when this user, hash and password passed
  // before; otherwise needs_bcrypt (then call verify(), off the I/O thread).
  Verdict check_cached(const Users& users, std::string_view authorization) const;

  // Thread-safe. The whole check, bcrypt included; a success is cached.
  bool verify(const Users& users, std::string_view authorization);

  // How many successful checks are remembered now (at most kCacheSize).
  std::size_t cached() const;

  static constexpr std::size_t kCacheSize = 100;

 private:
  // SHA-256 of (user, hash, password): the cache holds no plaintext password.
  using Key = std::array<unsigned char, 32>;
  static Key key_of(const Credentials& c, std::string_view hash);

  mutable std::mutex mutex_;
  std::set<Key> cache_;
  std::deque<Key> order_;  // oldest first, for eviction
};

}  // namespace lse::web

// Basic authentication (see basic_auth.hpp): header parsing, bcrypt through
// libxcrypt's crypt_rn, and the cache of successful checks.
#include "web/basic_auth.hpp"

#include <crypt.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>

#include <cstdint>
#include <memory>

#include "util/text.hpp"

namespace lse::web {
namespace {

// exporter-toolkit's bcrypt hash of "fakepassword" (cost 10): an unknown
// user is checked against it so that it takes as long as a known one.
constexpr const char* kFakeHash = "$2y$10$QOauhQNbBCuQDKes6eFzPeMqBSjb7Mr5DUmpZ/VcEd00UAV/LDeSi";

int base64_value(char c) {
  if (c >= 'A' && c <= 'Z') return c - 'A';
  if (c >= 'a' && c <= 'z') return c - 'a' + 26;
  if (c >= '0' && c <= '9') return c - '0' + 52;
  if (c == '+') return 62;
  if (c == '/') return 63;
  return -1;
}

// Standard base64 with padding, nothing else accepted (as Go's
// base64.StdEncoding, which exporter-toolkit's r.BasicAuth uses).
std::optional<std::string> base64_decode(std::string_view in) {
  if (in.size() % 4 != 0) return std::nullopt;
  std::string out;
  out.reserve(in.size() / 4 * 3);
  for (std::size_t i = 0; i < in.size(); i += 4) {
    const bool last = i + 4 == in.size();
    const int pad = (last && in[i + 3] == '=') + (last && in[i + 2] == '=');
    std::uint32_t group = 0;
    for (int j = 0; j < 4; ++j) {
      const int v = j >= 4 - pad ? 0 : base64_value(in[i + j]);
      if (v < 0) return std::nullopt;
      group = (group << 6) | static_cast<std::uint32_t>(v);
    }
    out += static_cast<char>((group >> 16) & 0xff);
    if (pad < 2) out += static_cast<char>((group >> 8) & 0xff);
    if (pad < 1) out += static_cast<char>(group & 0xff);
  }
  return out;
}

void append_field(std::string& out, std::string_view field) {
  const std::uint64_t n = field.size();
  for (int shift = 56; shift >= 0; shift -= 8) out += static_cast<char>((n >> shift) & 0xff);
  out += field;
}

}  // namespace

std::optional<Credentials> parse_basic_authorization(std::string_view value) {
  constexpr std::string_view kScheme = "Basic ";
  if (!text::istarts_with(value, kScheme)) return std::nullopt;
  value.remove_prefix(kScheme.size());
  while (!value.empty() && value.front() == ' ') value.remove_prefix(1);
  while (!value.empty() && value.back() == ' ') value.remove_suffix(1);
  auto decoded = base64_decode(value);
  if (!decoded) return std::nullopt;
  const auto colon = decoded->find(':');
  if (colon == std::string::npos) return std::nullopt;
  Credentials c{decoded->substr(0, colon), decoded->substr(colon + 1)};
  OPENSSL_cleanse(decoded->data(), decoded->size());
  return c;
}

bool constant_time_equal(std::string_view a, std::string_view b) {
  // The length of a bcrypt hash is public (60); only the bytes are secret.
  if (a.size() != b.size()) return false;
  return a.empty() || CRYPTO_memcmp(a.data(), b.data(), a.size()) == 0;
}

bool bcrypt_matches(std::string_view password, const std::string& hash) {
  if (password.find('\0') != std::string_view::npos) return false;
  const std::string phrase(password);
  // crypt_data is ~32 KiB: too big for a thread's stack to take lightly;
  // value-initialised, as crypt_rn requires on first use.
  auto data = std::make_unique<crypt_data>();
  const char* out = crypt_rn(phrase.c_str(), hash.c_str(), data.get(), sizeof(crypt_data));
  const bool ok = out != nullptr && out[0] != '*' && constant_time_equal(out, hash);
  OPENSSL_cleanse(data.get(), sizeof(crypt_data));
  return ok;
}

BasicAuth::Key BasicAuth::key_of(const Credentials& c, std::string_view hash) {
  std::string input;
  append_field(input, c.user);
  append_field(input, hash);
  append_field(input, c.password);
  Key key{};
  unsigned int size = 0;
  EVP_Digest(input.data(), input.size(), key.data(), &size, EVP_sha256(), nullptr);
  OPENSSL_cleanse(input.data(), input.size());
  return key;
}

BasicAuth::Verdict BasicAuth::check_cached(const Users& users,
                                           std::string_view authorization) const {
  const auto creds = parse_basic_authorization(authorization);
  if (!creds) return Verdict::deny;
  const auto user = users.find(creds->user);
  if (user != users.end()) {
    const Key key = key_of(*creds, user->second);
    std::lock_guard lock(mutex_);
    if (cache_.count(key)) return Verdict::allow;
  }
  return Verdict::needs_bcrypt;
}

bool BasicAuth::verify(const Users& users, std::string_view authorization) {
  const auto creds = parse_basic_authorization(authorization);
  if (!creds) return false;
  const auto user = users.find(creds->user);
  const bool known = user != users.end();
  const std::string hash = known ? user->second : kFakeHash;
  if (!bcrypt_matches(creds->password, hash) || !known) return false;
  const Key key = key_of(*creds, hash);
  std::lock_guard lock(mutex_);
  if (cache_.insert(key).second) {
    order_.push_back(key);
    if (order_.size() > kCacheSize) {
      cache_.erase(order_.front());
      order_.pop_front();
    }
  }
  return true;
}

std::size_t BasicAuth::cached() const {
  std::lock_guard lock(mutex_);
  return cache_.size();
}

}  // namespace lse::web

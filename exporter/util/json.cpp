// Implementation of the small JSON value tree (util/json.hpp): member access,
// deep merge and a compact RFC 8259 writer. Used to build request bodies and
// raw probe rows, so output must be byte-stable and always valid JSON.
#include "util/json.hpp"

#include <fmt/format.h>

#include <utility>
#include <cmath>
#include <cstdint>
#include <iterator>
#include <stdexcept>
#include <type_traits>

namespace lse::json {

const Value* Value::find(std::string_view key) const {
  if (!is_object()) return nullptr;
  for (const auto& [k, val] : object()) {
    if (k == key) return &val;
  }
  return nullptr;
}

Value* Value::find(std::string_view key) {
  return const_cast<Value*>(std::as_const(*this).find(key));
}

void Value::set(std::string key, Value value) {
  // A null value becomes an empty object so callers can build trees from a
  // default-constructed Value; any other non-object is a programming error.
  if (std::holds_alternative<std::nullptr_t>(v)) v = Object{};
  if (!is_object()) throw std::logic_error("json::Value::set on a non-object");
  if (Value* existing = find(key)) {
    *existing = std::move(value);  // in place: key order is part of the output
    return;
  }
  object().emplace_back(std::move(key), std::move(value));
}

bool Value::erase(std::string_view key) {
  if (!is_object()) return false;
  auto& obj = object();
  for (auto it = obj.begin(); it != obj.end(); ++it) {
    if (it->first == key) {
      obj.erase(it);
      return true;
    }
  }
  return false;
}

void merge(Value& base, const Value& overlay) {
  if (&base == &overlay) return;  // merging a value into itself changes nothing
  if (base.is_object() && overlay.is_object()) {
    for (const auto& [key, val] : overlay.object()) {
      Value* existing = base.find(key);
      if (existing != nullptr) {
        merge(*existing, val);
      } else {
        base.object().emplace_back(key, val);
      }
    }
    return;
  }
  base = overlay;
}

namespace {

// Length of the well-formed UTF-8 sequence at s[i] (no overlongs, no
// surrogates, nothing above U+10FFFF), or 0 when it is not one.
std::size_t utf8_sequence_length(std::string_view s, std::size_t i) {
  const auto* p = reinterpret_cast<const unsigned char*>(s.data());
  const unsigned char c = p[i];
  std::size_t len = 0;
  std::uint32_t cp = 0;
  if (c >= 0xC2 && c <= 0xDF) {
    len = 2;
    cp = c & 0x1F;
  } else if (c >= 0xE0 && c <= 0xEF) {
    len = 3;
    cp = c & 0x0F;
  } else if (c >= 0xF0 && c <= 0xF4) {
    len = 4;
    cp = c & 0x07;
  }
  if (len == 0 || i + len > s.size()) return 0;
  for (std::size_t k = 1; k < len; ++k) {
    if ((p[i + k] & 0xC0) != 0x80) return 0;
    cp = (cp << 6) | (p[i + k] & 0x3F);
  }
  if (len == 3 && (cp < 0x800 || (cp >= 0xD800 && cp <= 0xDFFF))) return 0;
  if (len == 4 && (cp < 0x10000 || cp > 0x10FFFF)) return 0;
  return len;
}

}  // namespace

void append_quoted(std::string& out, std::string_view s) {
  static constexpr char kHex[] = "0123456789abcdef";
  out.push_back('"');
  // Copy runs of bytes that need no escaping in one append; string values in
  // rows (prompts, model names) are mostly plain.
  std::size_t run = 0;
  std::size_t i = 0;
  while (i < s.size()) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c >= 0x80) {
      // Invalid UTF-8 becomes U+FFFD: the output must stay readable by a
      // strict parser (simdjson rejects invalid UTF-8), whatever bytes an
      // upstream put in a model name or an error message.
      const std::size_t len = utf8_sequence_length(s, i);
      if (len > 0) {
        i += len;
        continue;
      }
      out.append(s.data() + run, i - run);
      out.append("\xEF\xBF\xBD");
      run = ++i;
      continue;
    }
    const char* esc = nullptr;
    switch (c) {
      case '"': esc = "\\\""; break;
      case '\\': esc = "\\\\"; break;
      case '\b': esc = "\\b"; break;
      case '\f': esc = "\\f"; break;
      case '\n': esc = "\\n"; break;
      case '\r': esc = "\\r"; break;
      case '\t': esc = "\\t"; break;
      default:
        if (c >= 0x20) {
          ++i;
          continue;
        }
    }
    out.append(s.data() + run, i - run);
    run = ++i;
    if (esc != nullptr) {
      out.append(esc);
    } else {
      const char u[] = {'\\', 'u', '0', '0', kHex[c >> 4], kHex[c & 0xF]};
      out.append(u, sizeof u);
    }
  }
  out.append(s.data() + run, s.size() - run);
  out.push_back('"');
}

namespace {

void append_double(std::string& out, double d) {
  // JSON has no NaN/Infinity; null is the conventional stand-in.
  if (!std::isfinite(d)) {
    out.append("null");
    return;
  }
  const std::size_t start = out.size();
  fmt::format_to(std::back_inserter(out), "{}", d);  // shortest round-trip
  // Keep integral doubles recognisable as floating point ("1.0", not "1") so a
  // row read back keeps its type.
  if (out.find_first_of(".eE", start) == std::string::npos) out.append(".0");
}

}  // namespace

void dump_to(std::string& out, const Value& value) {
  std::visit(
      [&out](const auto& x) {
        using T = std::decay_t<decltype(x)>;
        if constexpr (std::is_same_v<T, std::nullptr_t>) {
          out.append("null");
        } else if constexpr (std::is_same_v<T, bool>) {
          out.append(x ? "true" : "false");
        } else if constexpr (std::is_same_v<T, std::int64_t>) {
          fmt::format_to(std::back_inserter(out), "{}", x);
        } else if constexpr (std::is_same_v<T, double>) {
          append_double(out, x);
        } else if constexpr (std::is_same_v<T, std::string>) {
          append_quoted(out, x);
        } else if constexpr (std::is_same_v<T, Array>) {
          out.push_back('[');
          bool first = true;
          for (const auto& e : x) {
            if (!first) out.push_back(',');
            first = false;
            dump_to(out, e);
          }
          out.push_back(']');
        } else {
          static_assert(std::is_same_v<T, Object>);
          out.push_back('{');
          bool first = true;
          for (const auto& [k, e] : x) {
            if (!first) out.push_back(',');
            first = false;
            append_quoted(out, k);
            out.push_back(':');
            dump_to(out, e);
          }
          out.push_back('}');
        }
      },
      value.v);
}

std::string dump(const Value& value) {
  std::string out;
  dump_to(out, value);
  return out;
}

}  // namespace lse::json

// A small ordered JSON value tree and a writer. Used for the extra request
// `body:` from config (merged into the request JSON) and for raw probe rows.
// Parsing of incoming JSON is simdjson's job (api/, report/), not this file's.
#pragma once
#include <utility>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace lse::json {

struct Value;
using Object = std::vector<std::pair<std::string, Value>>;  // keeps key order
using Array = std::vector<Value>;

struct Value {
  std::variant<std::nullptr_t, bool, std::int64_t, double, std::string, Array, Object> v{nullptr};

  Value() = default;
  Value(std::nullptr_t) {}
  Value(bool b) : v(b) {}
  Value(int i) : v(std::int64_t{i}) {}
  Value(std::int64_t i) : v(i) {}
  Value(double d) : v(d) {}
  Value(const char* s) : v(std::string(s)) {}
  Value(std::string s) : v(std::move(s)) {}
  Value(Array a) : v(std::move(a)) {}
  Value(Object o) : v(std::move(o)) {}

  bool operator==(const Value&) const = default;

  bool is_object() const { return std::holds_alternative<Object>(v); }
  Object& object() { return std::get<Object>(v); }
  const Object& object() const { return std::get<Object>(v); }
  // Returns the member or nullptr (objects only).
  const Value* find(std::string_view key) const;
  Value* find(std::string_view key);
  // Sets (replacing an existing key in place) a member; *this must be an object.
  void set(std::string key, Value value);
  // Removes a member if present; returns whether it was there.
  bool erase(std::string_view key);
};

// Deep merge: objects merge key by key (overlay wins), anything else is replaced.
void merge(Value& base, const Value& overlay);

// Compact serialisation, RFC 8259 escaping, doubles with shortest round-trip form.
std::string dump(const Value& value);
void dump_to(std::string& out, const Value& value);
// Appends `s` as a quoted, escaped JSON string; invalid UTF-8 becomes U+FFFD.
// The one JSON string escaper of the tree (rows, logs, API answers).
void append_quoted(std::string& out, std::string_view s);

}  // namespace lse::json

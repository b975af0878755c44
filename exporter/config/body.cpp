// YAML → JSON for the target's extra request `body:`. Typing follows the YAML
// 1.2 core schema (not yaml-cpp's 1.1-flavoured as<bool>, where "no" is false):
// the body is sent to an API that will reject a bool where it wanted "no".
#include "config/body.hpp"

#include <fmt/format.h>

#include <charconv>
#include <cmath>

namespace lse::config::detail {
namespace {

const std::string kTagStr = "tag:yaml.org,2002:str";
const std::string kTagInt = "tag:yaml.org,2002:int";
const std::string kTagFloat = "tag:yaml.org,2002:float";
const std::string kTagBool = "tag:yaml.org,2002:bool";
const std::string kTagNull = "tag:yaml.org,2002:null";

bool all_digits(std::string_view s) {
  return !s.empty() && s.find_first_not_of("0123456789") == std::string_view::npos;
}

std::string_view strip_sign(std::string_view s) {
  if (!s.empty() && (s.front() == '+' || s.front() == '-')) s.remove_prefix(1);
  return s;
}

// [-+]?[0-9]+
bool looks_int(std::string_view s) { return all_digits(strip_sign(s)); }

// [-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?
bool looks_float(std::string_view s) {
  s = strip_sign(s);
  auto e = s.find_first_of("eE");
  std::string_view mant = s.substr(0, e);
  if (e != std::string_view::npos && !all_digits(strip_sign(s.substr(e + 1)))) return false;
  auto dot = mant.find('.');
  if (dot == std::string_view::npos) return all_digits(mant);
  std::string_view ip = mant.substr(0, dot), fp = mant.substr(dot + 1);
  if (ip.empty()) return all_digits(fp);
  return all_digits(ip) && (fp.empty() || all_digits(fp));
}

bool is_inf_or_nan(std::string_view s) {
  s = strip_sign(s);
  return s == ".inf" || s == ".Inf" || s == ".INF" || s == ".nan" || s == ".NaN" || s == ".NAN";
}

json::Value to_int(const Reader& reader, const Item& item) {
  std::string_view s = item.node.Scalar();
  if (!s.empty() && s.front() == '+') s.remove_prefix(1);
  std::int64_t v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || p != s.data() + s.size()) {
    reader.fail(item, fmt::format("integer {} is out of range", describe(item.node)));
  }
  return json::Value(v);
}

json::Value to_float(const Reader& reader, const Item& item) {
  std::string_view s = item.node.Scalar();
  if (!s.empty() && s.front() == '+') s.remove_prefix(1);
  double v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || p != s.data() + s.size() || !std::isfinite(v)) {
    reader.fail(item, fmt::format("number {} is not representable in JSON", describe(item.node)));
  }
  return json::Value(v);
}

json::Value scalar(const Reader& reader, const Item& item) {
  const std::string& tag = item.node.Tag();
  const std::string& s = item.node.Scalar();
  // "!" is what yaml-cpp gives quoted and block scalars: always strings.
  if (tag == "!" || tag == kTagStr) return json::Value(s);
  if (tag == "?") {
    if (s == "true" || s == "True" || s == "TRUE") return json::Value(true);
    if (s == "false" || s == "False" || s == "FALSE") return json::Value(false);
    if (looks_int(s)) return to_int(reader, item);
    if (looks_float(s)) return to_float(reader, item);
    if (is_inf_or_nan(s))
      reader.fail(item, fmt::format("{} has no JSON representation", describe(item.node)));
    return json::Value(s);
  }
  if (tag == kTagInt && looks_int(s)) return to_int(reader, item);
  if (tag == kTagFloat && looks_float(s)) return to_float(reader, item);
  if (tag == kTagBool) return json::Value(reader.boolean(item));
  if (tag == kTagNull) return json::Value(nullptr);
  reader.fail(item, fmt::format("unsupported tag '{}' for {}", tag, describe(item.node)));
}

json::Value convert(const Reader& reader, const Item& item) {
  const YAML::Node& node = item.node;
  if (node.IsNull()) {
    if (node.Tag() == kTagStr) return json::Value(std::string());  // `!!str` with no text
    return json::Value(nullptr);
  }
  if (node.IsScalar()) return scalar(reader, item);
  if (node.IsSequence()) {
    json::Array array;
    for (const Item& child : reader.list(item)) array.push_back(convert(reader, child));
    return json::Value(std::move(array));
  }
  json::Object object;
  for (const auto& kv : node) {
    const YAML::Node& value = kv.second;
    object.emplace_back(kv.first.Scalar(),
                        convert(reader, Item{value, value.IsNull() ? kv.first.Mark() : value.Mark(),
                                             item.name + "." + kv.first.Scalar()}));
  }
  return json::Value(std::move(object));
}

}  // namespace

json::Value yaml_to_json_object(const Reader& reader, const Item& item) {
  reader.require_mapping(item);
  return convert(reader, item);
}

}  // namespace lse::config::detail

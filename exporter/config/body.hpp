// Internal to the config module: the target's `body:` mapping as a JSON value.
#pragma once
#include "config/reader.hpp"
#include "util/json.hpp"

namespace lse::config::detail {

// Converts a YAML mapping to a json::Value object, keeping key order. Plain
// scalars are typed by the YAML 1.2 core schema (int, float, bool, null, else
// string); quoted and block scalars always stay strings, so `"1"` is "1".
json::Value yaml_to_json_object(const Reader& reader, const Item& item);

}  // namespace lse::config::detail

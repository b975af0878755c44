// Internal to the config module: typed, strict access to yaml-cpp nodes.
// Every conversion either returns a value or throws ConfigError at the node's
// file:line:col, so the section parsers (parse.cpp, target.cpp) read like the
// schema of DESIGN §4 instead of a pile of position bookkeeping.
#pragma once
#include <yaml-cpp/yaml.h>

#include <utility>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "config/config.hpp"

namespace lse::config::detail {

// A value in the document plus the place to blame for it. An empty value
// (`key:` with nothing after it) has a mark on the *next* line in yaml-cpp,
// so for those the key's mark is kept instead.
struct Item {
  YAML::Node node;
  YAML::Mark mark;
  std::string name;  // key path used as message prefix, e.g. "timeout.total"
};

class Reader {
 public:
  Reader(std::string file, std::string base_dir);

  const std::string& file() const { return file_; }
  // Relative paths resolve against the config file's folder, not the cwd, so
  // a config behaves the same wherever the exporter is started from.
  std::string resolve(const std::string& path) const;

  [[noreturn]] void fail(const YAML::Mark& mark, const std::string& message) const;
  // Prefixes the message with the item's name ("interval: ...").
  [[noreturn]] void fail(const Item& item, const std::string& message) const;

  std::string string(const Item& item) const;           // any scalar
  std::string nonempty_string(const Item& item) const;  // scalar, not ""
  bool boolean(const Item& item) const;                 // true/false only
  std::int64_t integer(const Item& item) const;         // decimal integer
  double number(const Item& item) const;                // finite int or float
  Duration duration(const Item& item) const;            // "250ms", "1m30s"
  std::uint64_t byte_size(const Item& item) const;      // 1048576, "64MiB", "10MB"
  std::vector<Item> list(const Item& item) const;       // items named "name[i]"
  void require_mapping(const Item& item) const;

  // Reads a whole file named by the item (prompt, secret): {resolved path, content}.
  std::pair<std::string, std::string> read_file(const Item& item) const;

 private:
  std::string file_;
  std::string base_dir_;
};

// A mapping whose keys were checked against the allowed set: an unknown key
// fails at the key, listing what is allowed. Children are named
// `child_prefix + key` in messages.
class Fields {
 public:
  Fields(const Reader& reader, const Item& map, std::string_view where,
         const std::vector<std::string_view>& allowed, const std::string& child_prefix);

  std::optional<Item> get(std::string_view key) const;
  // Missing keys have no mark in yaml-cpp: blame the mapping itself.
  Item require(std::string_view key) const;
  bool has(std::string_view key) const { return get(key).has_value(); }

  struct Entry {
    std::string key;
    YAML::Mark key_mark;
    Item value;
  };
  const std::vector<Entry>& entries() const { return entries_; }
  const Item& self() const { return self_; }

 private:
  const Reader& reader_;
  Item self_;
  std::string where_;
  std::vector<Entry> entries_;
};

// Parses the text as exactly one YAML document whose root is a mapping.
// Syntax errors carry yaml-cpp's mark. Works around yaml-cpp 0.7's LoadAll,
// which loops forever (allocating) on input such as ",a: 1" (jbeder/yaml-cpp
// #1040, fixed upstream by PR #1319).
YAML::Node load_single_document(const Reader& reader, const std::string& yaml_text);

// Whole-document checks yaml-cpp does not do: duplicate keys (it keeps both),
// non-string keys, and alias cycles / alias blow-ups (it builds them happily).
void check_structure(const Reader& reader, const YAML::Node& root);

// "got 'abc'", "got a mapping", "got an empty value" for type errors.
std::string describe(const YAML::Node& node);

// Trailing newlines are an artefact of files and block scalars, not content.
std::string trim_trailing_newlines(std::string s);
bool is_blank(std::string_view s);

}  // namespace lse::config::detail

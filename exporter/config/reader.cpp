// Typed access to yaml-cpp nodes (see reader.hpp). Scalars are converted here
// with our own strict grammars rather than yaml-cpp's as<T>(), which accepts
// YAML 1.1 spellings ("yes", "on") and would let "60" pass as a duration.
#include "config/reader.hpp"

#include <fmt/format.h>
#include <yaml-cpp/eventhandler.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <filesystem>
#include <limits>
#include <set>
#include <sstream>

#include "util/bounded_file.hpp"

namespace lse::config::detail {
namespace {

// Deep enough for any sane request body; shallow enough that an alias cycle
// (`a: &x [*x]`, which yaml-cpp turns into a cyclic graph) stops quickly.
constexpr int kMaxDepth = 64;
// Aliases are shared, so a "billion laughs" document is small in memory but
// huge to walk; a real config has a few hundred nodes.
constexpr std::size_t kMaxNodes = 200000;

std::string quote_for_message(std::string_view s) {
  constexpr std::size_t kMax = 60;
  if (s.size() > kMax) return fmt::format("'{}...'", s.substr(0, kMax));
  return fmt::format("'{}'", s);
}

std::optional<std::uint64_t> parse_byte_size(std::string_view s) {
  std::size_t i = 0;
  while (i < s.size() && s[i] >= '0' && s[i] <= '9') ++i;
  if (i == 0) return std::nullopt;
  std::uint64_t n = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + i, n);
  if (ec != std::errc() || p != s.data() + i) return std::nullopt;
  std::string_view unit = s.substr(i);
  struct Unit {
    std::string_view name;
    std::uint64_t factor;
  };
  static constexpr Unit kUnits[] = {
      {"", 1},
      {"B", 1},
      {"KB", 1000},
      {"kB", 1000},
      {"MB", 1000000},
      {"GB", 1000000000},
      {"TB", 1000000000000ull},
      {"KiB", 1ull << 10},
      {"MiB", 1ull << 20},
      {"GiB", 1ull << 30},
      {"TiB", 1ull << 40},
  };
  for (const auto& u : kUnits) {
    if (unit != u.name) continue;
    if (n > std::numeric_limits<std::uint64_t>::max() / u.factor) return std::nullopt;
    return n * u.factor;
  }
  return std::nullopt;
}

// Levenshtein distance, for "did you mean" on misspelt keys.
std::size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<std::size_t> row(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    std::size_t diagonal = row[0];
    row[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      std::size_t above = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = above;
    }
  }
  return row[b.size()];
}

// The allowed key a typo most likely meant: at most 2 edits (1 for short
// keys, where 2 edits would "correct" almost anything).
std::optional<std::string_view> closest(std::string_view key,
                                        const std::vector<std::string_view>& allowed) {
  std::optional<std::string_view> best;
  std::size_t best_distance = (key.size() >= 5 ? 2 : 1) + 1;
  for (auto a : allowed) {
    std::size_t d = edit_distance(key, a);
    if (d < best_distance) {
      best = a;
      best_distance = d;
    }
  }
  return best;
}

void walk(const Reader& reader, const YAML::Node& node, int depth, std::size_t& visited) {
  if (++visited > kMaxNodes) {
    reader.fail(node.Mark(), "document too large (alias expansion?)");
  }
  if (depth > kMaxDepth) {
    reader.fail(node.Mark(),
                fmt::format("nesting deeper than {} levels (recursive alias?)", kMaxDepth));
  }
  if (node.IsSequence()) {
    for (const auto& child : node) walk(reader, child, depth + 1, visited);
  } else if (node.IsMap()) {
    std::set<std::string> seen;
    for (const auto& kv : node) {
      const YAML::Node& key = kv.first;
      if (!key.IsScalar()) {
        reader.fail(key.Mark(), fmt::format("mapping keys must be strings, got {}", describe(key)));
      }
      if (!seen.insert(key.Scalar()).second) {
        reader.record(key.Mark(), fmt::format("duplicate key '{}'", key.Scalar()));
      }
      walk(reader, kv.second, depth + 1, visited);
    }
  }
}

// Records where a document starts and where its first real node is; an
// empty document produces only a null event.
class DocumentProbe : public YAML::EventHandler {
 public:
  YAML::Mark start = YAML::Mark::null_mark();
  std::optional<YAML::Mark> content;

  void OnDocumentStart(const YAML::Mark& mark) override { start = mark; }
  void OnDocumentEnd() override {}
  void OnNull(const YAML::Mark&, YAML::anchor_t) override {}
  void OnAlias(const YAML::Mark& mark, YAML::anchor_t) override { note(mark); }
  void OnScalar(const YAML::Mark& mark, const std::string&, YAML::anchor_t,
                const std::string&) override {
    note(mark);
  }
  void OnSequenceStart(const YAML::Mark& mark, const std::string&, YAML::anchor_t,
                       YAML::EmitterStyle::value) override {
    note(mark);
  }
  void OnSequenceEnd() override {}
  void OnMapStart(const YAML::Mark& mark, const std::string&, YAML::anchor_t,
                  YAML::EmitterStyle::value) override {
    note(mark);
  }
  void OnMapEnd() override {}

 private:
  void note(const YAML::Mark& mark) {
    if (!content) content = mark;
  }
};

// Walks the documents as events (no nodes built) to find syntax errors, a
// second document, or a parser that stopped making progress.
void check_document_stream(const Reader& reader, const std::string& yaml_text) {
  std::istringstream in(yaml_text);
  YAML::Parser parser(in);
  std::optional<YAML::Mark> previous_start;
  for (int index = 0; parser; ++index) {
    DocumentProbe probe;
    if (!parser.HandleNextDocument(probe)) break;
    if (index > 0 && probe.content) {
      reader.fail(*probe.content, "expected a single YAML document, found another one");
    }
    // yaml-cpp 0.7 yields empty documents at the same place forever when it
    // cannot consume a token (",a: 1"): report it instead of looping.
    if (previous_start && previous_start->pos == probe.start.pos) {
      reader.fail(probe.start, "invalid YAML: unexpected character");
    }
    previous_start = probe.start;
  }
}

}  // namespace

YAML::Node load_single_document(const Reader& reader, const std::string& yaml_text) {
  YAML::Node root;
  try {
    check_document_stream(reader, yaml_text);
    root = YAML::Load(yaml_text);
  } catch (const YAML::Exception& e) {
    reader.fail(e.mark, "invalid YAML: " + e.msg);
  }
  if (root.IsNull()) reader.fail(YAML::Mark(), "config is empty (at least targets: is required)");
  if (!root.IsMap()) {
    reader.fail(root.Mark(),
                fmt::format("expected a mapping at the top level, got {}", describe(root)));
  }
  return root;
}

std::string describe(const YAML::Node& node) {
  switch (node.Type()) {
    case YAML::NodeType::Map: return "a mapping";
    case YAML::NodeType::Sequence: return "a list";
    case YAML::NodeType::Scalar: return quote_for_message(node.Scalar());
    default: return "an empty value";
  }
}

std::string trim_trailing_newlines(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == '\r')) s.pop_back();
  return s;
}

bool is_blank(std::string_view s) {
  return s.find_first_not_of(" \t\r\n") == std::string_view::npos;
}

Reader::Reader(std::string file, std::string base_dir, Collected& out, LoadOptions options)
    : file_(std::move(file)),
      base_dir_(std::move(base_dir)),
      out_(out),
      options_(std::move(options)) {}

std::string Reader::resolve(const std::string& path) const {
  std::filesystem::path p(path);
  if (p.is_absolute() || base_dir_.empty()) return p.lexically_normal().string();
  return (std::filesystem::path(base_dir_) / p).lexically_normal().string();
}

Diagnostic Reader::at(const YAML::Mark& mark, const std::string& message) const {
  if (mark.is_null()) return Diagnostic{file_, 0, 0, message};
  return Diagnostic{file_, mark.line + 1, mark.column + 1, message};
}

std::string Reader::named(const Item& item, const std::string& message) {
  if (item.name.empty()) return message;
  return fmt::format("{}: {}", item.name, message);
}

void Reader::fail(const YAML::Mark& mark, const std::string& message) const {
  throw ConfigError({at(mark, message)});
}

void Reader::fail(const Item& item, const std::string& message) const {
  fail(item.mark, named(item, message));
}

namespace {
struct Abandoned {};
}  // namespace

void Reader::abandon() { throw Abandoned{}; }

bool Reader::attempt(const std::function<void()>& step) const {
  try {
    step();
    return true;
  } catch (const ConfigError& e) {
    out_.errors.insert(out_.errors.end(), e.errors().begin(), e.errors().end());
  } catch (const Abandoned&) {
  }
  return false;
}

void Reader::record(const YAML::Mark& mark, const std::string& message) const {
  out_.errors.push_back(at(mark, message));
}

void Reader::warn(const YAML::Mark& mark, const std::string& message) const {
  const Diagnostic d = at(mark, message);
  auto& warnings = out_.findings.warnings;
  // Targets inheriting one default share its warning: say it once.
  if (std::find(warnings.begin(), warnings.end(), d) == warnings.end()) warnings.push_back(d);
}

void Reader::warn(const Item& item, const std::string& message) const {
  warn(item.mark, named(item, message));
}

void Reader::not_checked(const Item& item, const std::string& what) const {
  out_.findings.not_checked.push_back(at(item.mark, named(item, what)));
}

std::string Reader::string(const Item& item) const {
  if (!item.node.IsScalar())
    fail(item, fmt::format("expected a string, got {}", describe(item.node)));
  return item.node.Scalar();
}

std::string Reader::nonempty_string(const Item& item) const {
  std::string s = string(item);
  if (s.empty()) fail(item, "must not be empty");
  return s;
}

bool Reader::boolean(const Item& item) const {
  if (item.node.IsScalar()) {
    const std::string& s = item.node.Scalar();
    // YAML 1.2 core schema spellings only.
    if (s == "true" || s == "True" || s == "TRUE") return true;
    if (s == "false" || s == "False" || s == "FALSE") return false;
  }
  fail(item, fmt::format("expected true or false, got {}", describe(item.node)));
}

std::int64_t Reader::integer(const Item& item) const {
  if (item.node.IsScalar()) {
    std::string_view s = item.node.Scalar();
    if (!s.empty() && s.front() == '+') s.remove_prefix(1);
    std::int64_t v = 0;
    auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    if (!s.empty() && ec == std::errc() && p == s.data() + s.size()) return v;
  }
  fail(item, fmt::format("expected an integer, got {}", describe(item.node)));
}

double Reader::number(const Item& item) const {
  if (item.node.IsScalar()) {
    std::string_view s = item.node.Scalar();
    if (!s.empty() && s.front() == '+') s.remove_prefix(1);
    double v = 0;
    auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    if (!s.empty() && ec == std::errc() && p == s.data() + s.size() && std::isfinite(v)) return v;
  }
  fail(item, fmt::format("expected a number, got {}", describe(item.node)));
}

Duration Reader::duration(const Item& item) const {
  if (item.node.IsScalar()) {
    if (auto d = parse_duration(item.node.Scalar())) return *d;
  }
  fail(item, fmt::format("expected a duration, got {} (use a unit: 500us, 250ms, 1.5s, 2m, 1h)",
                         describe(item.node)));
}

std::uint64_t Reader::byte_size(const Item& item) const {
  if (item.node.IsScalar()) {
    if (auto n = parse_byte_size(item.node.Scalar())) return *n;
  }
  fail(item, fmt::format("expected a size in bytes (e.g. 1048576, 64MiB, 10MB), got {}",
                         describe(item.node)));
}

std::vector<Item> Reader::list(const Item& item) const {
  if (!item.node.IsSequence())
    fail(item, fmt::format("expected a list, got {}", describe(item.node)));
  std::vector<Item> out;
  std::size_t i = 0;
  for (const auto& child : item.node) {
    out.push_back(Item{child, child.IsNull() ? item.mark : child.Mark(),
                       fmt::format("{}[{}]", item.name, i++)});
  }
  return out;
}

void Reader::require_mapping(const Item& item) const {
  if (!item.node.IsMap())
    fail(item, fmt::format("expected a mapping, got {}", describe(item.node)));
}

std::pair<std::string, std::string> Reader::read_file(const Item& item, FileKind kind) const {
  const std::string value = nonempty_string(item);
  const std::string path = resolve(value);
  const bool secret = kind == FileKind::secret;
  const std::uint64_t cap = secret ? limits_.secret_file_bytes : limits_.prompt_file_bytes;
  util::FileRead file =
      util::read_bounded_file(path, cap, secret ? "secret files" : "prompt files");
  if (file.ok()) return {path, std::move(file.content)};
  std::string error = file.error;
  if (file.problem == util::FileProblem::too_large)
    error += fmt::format(" (raise limits.{})", secret ? "secret_file_bytes" : "prompt_file_bytes");
  if (!secret) fail(item, fmt::format("cannot read '{}': {}", path, error));
  // The place of the error shows the value; where a relative one was looked
  // for is the part it does not show.
  if (file.problem == util::FileProblem::missing && !base_dir_.empty() &&
      !std::filesystem::path(value).is_absolute())
    error +=
        fmt::format(" (a relative path resolves against the config file's folder '{}')", base_dir_);
  fail(item, "cannot read the secret file: " + error);
}

Fields::Fields(const Reader& reader, const Item& map, std::string_view where,
               const std::vector<std::string_view>& allowed, const std::string& child_prefix)
    : reader_(reader), self_(map), where_(where) {
  reader.require_mapping(map);
  for (const auto& kv : map.node) {
    std::string key = kv.first.Scalar();
    bool known = false;
    for (auto a : allowed) known = known || a == key;
    if (!known) {
      had_unknown_ = true;
      std::string list;
      for (auto a : allowed) list += (list.empty() ? "" : ", ") + std::string(a);
      std::string hint;
      if (auto near = closest(key, allowed)) {
        hint = fmt::format(", did you mean '{}'?", *near);
        suggested_.push_back(*near);
      }
      reader.record(kv.first.Mark(),
                    fmt::format("unknown key '{}'{}{} (allowed: {})", key,
                                where_.empty() ? "" : " in " + where_, hint, list));
      continue;
    }
    YAML::Mark value_mark = kv.second.IsNull() ? kv.first.Mark() : kv.second.Mark();
    entries_.push_back(
        Entry{key, kv.first.Mark(), Item{kv.second, value_mark, child_prefix + key}});
  }
}

std::optional<Item> Fields::get(std::string_view key) const {
  for (const auto& e : entries_) {
    if (e.key == key) return e.value;
  }
  return std::nullopt;
}

bool Fields::misspelt(std::string_view key) const {
  return std::find(suggested_.begin(), suggested_.end(), key) != suggested_.end();
}

Item Fields::require(std::string_view key) const {
  if (auto item = get(key)) return *item;
  reader_.fail(self_.mark, fmt::format("{} is missing required key '{}'",
                                       where_.empty() ? "config" : where_, key));
}

void check_structure(const Reader& reader, const YAML::Node& root) {
  std::size_t visited = 0;
  walk(reader, root, 0, visited);
}

}  // namespace lse::config::detail

// A strict reader of OpenMetrics 1.0.0 text for the metrics tests: samples
// with their exemplars, and every rule of the format an ingestor relies on
// collected as errors (metadata before samples, suffixes allowed per type,
// `_total` only on samples, UNIT a suffix of the name, exemplars only on
// buckets and totals, cumulative buckets ending in +Inf == _count, `# EOF`
// last). Prometheus' own parser is exercised by the integration test.
#pragma once
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "exposition.hpp"

namespace lse::testing::om {

struct Exemplar {
  std::map<std::string, std::string> labels;
  double value = 0;
  std::optional<double> timestamp;
};

struct Sample {
  std::string family;
  std::string name;
  std::map<std::string, std::string> labels;
  double value = 0;
  std::optional<Exemplar> exemplar;
};

struct Family {
  std::string type, help, unit;
};

struct Document {
  std::map<std::string, Family> families;
  std::vector<Sample> samples;
  std::vector<std::string> errors;
};

// Reads `{a="x",b="y"}` at `i` (which points at '{'); false on a syntax error.
inline bool parse_labels(const std::string& line, std::size_t& i,
                         std::map<std::string, std::string>& out) {
  ++i;
  while (i < line.size() && line[i] != '}') {
    const auto eq = line.find('=', i);
    if (eq == std::string::npos || eq + 1 >= line.size() || line[eq + 1] != '"') return false;
    const std::string key = line.substr(i, eq - i);
    if (!valid_name(key) || key.find(':') != std::string::npos || out.count(key)) return false;
    std::string value;
    std::size_t j = eq + 2;
    for (; j < line.size() && line[j] != '"'; ++j) {
      if (line[j] != '\\') {
        value += line[j];
        continue;
      }
      if (++j >= line.size()) return false;
      if (line[j] == 'n')
        value += '\n';
      else if (line[j] == '\\' || line[j] == '"')
        value += line[j];
      else
        return false;  // the only escapes OpenMetrics has
    }
    if (j >= line.size()) return false;
    out[key] = value;
    i = j + 1;
    if (i < line.size() && line[i] == ',') ++i;
  }
  if (i >= line.size()) return false;
  ++i;
  return true;
}

inline std::vector<std::string> split_spaces(const std::string& s) {
  std::vector<std::string> parts;
  std::size_t p = 0;
  while (p <= s.size()) {
    const auto sp = s.find(' ', p);
    parts.push_back(s.substr(p, sp == std::string::npos ? std::string::npos : sp - p));
    if (sp == std::string::npos) break;
    p = sp + 1;
  }
  return parts;
}

// ` # {labels} value [timestamp]` after a sample's value.
inline bool parse_exemplar(const std::string& text, Exemplar& e) {
  if (text.rfind("# {", 0) != 0) return false;
  std::size_t i = 2;
  if (!parse_labels(text, i, e.labels)) return false;
  std::size_t chars = 0;
  for (const auto& [k, v] : e.labels) chars += k.size() + v.size();
  if (chars > 128) return false;
  if (i >= text.size() || text[i] != ' ') return false;
  const auto parts = split_spaces(text.substr(i + 1));
  if (parts.empty() || parts.size() > 2) return false;
  try {
    e.value = parse_number(parts[0]);
    if (parts.size() == 2) e.timestamp = parse_number(parts[1]);
  } catch (...) {
    return false;
  }
  return true;
}

inline bool suffix_allowed(const std::string& type, const std::string& suffix) {
  if (type == "counter") return suffix == "_total" || suffix == "_created";
  if (type == "histogram")
    return suffix == "_bucket" || suffix == "_count" || suffix == "_sum" || suffix == "_created";
  if (type == "summary")
    return suffix.empty() || suffix == "_count" || suffix == "_sum" || suffix == "_created";
  return suffix.empty();
}

class Reader {
 public:
  Document read(const std::string& text) {
    if (text.size() < 6 || text.compare(text.size() - 6, 6, "# EOF\n") != 0)
      error("does not end with \"# EOF\\n\"");
    std::istringstream in(text);
    std::string line;
    bool eof = false;
    while (std::getline(in, line)) {
      if (eof) error("text after # EOF: " + line);
      if (line == "# EOF") {
        eof = true;
      } else if (line.empty()) {
        error("empty line");
      } else if (line[0] == '#') {
        metadata(line);
      } else {
        sample(line);
      }
    }
    check_histograms();
    return std::move(doc_);
  }

 private:
  void error(const std::string& e) { doc_.errors.push_back(e); }

  void metadata(const std::string& line) {
    const auto parts = split_spaces(line);
    if (parts.size() < 3 || parts[0] != "#") return error("bad comment: " + line);
    const std::string& kind = parts[1];
    const std::string& name = parts[2];
    const std::string rest = line.substr(std::min(line.size(), 4 + kind.size() + name.size()));
    if (name != current_) {
      if (!seen_.insert(name).second) error("family " + name + " described twice");
      current_ = name;
      has_samples_ = false;
    }
    if (has_samples_) error("metadata after samples: " + line);
    Family& f = doc_.families[name];
    if (kind == "TYPE") {
      static const std::set<std::string> kTypes = {"counter",        "gauge",    "histogram",
                                                   "gaugehistogram", "stateset", "info",
                                                   "summary",        "unknown"};
      if (!kTypes.count(rest)) error("unknown type: " + line);
      if (rest == "counter" && name.size() > 6 && name.compare(name.size() - 6, 6, "_total") == 0)
        error("counter family named with _total: " + name);
      f.type = rest;
    } else if (kind == "HELP") {
      f.help = rest;
    } else if (kind == "UNIT") {
      f.unit = rest;
      const std::string suffix = "_" + rest;
      if (name.size() < suffix.size() ||
          name.compare(name.size() - suffix.size(), suffix.size(), suffix) != 0)
        error("unit is not a suffix of " + name);
    } else {
      error("unknown metadata: " + line);
    }
  }

  void sample(const std::string& line) {
    Sample s;
    std::size_t i = 0;
    while (i < line.size() && line[i] != '{' && line[i] != ' ') ++i;
    s.name = line.substr(0, i);
    if (!valid_name(s.name)) return error("bad sample name: " + line);
    if (i < line.size() && line[i] == '{' && !parse_labels(line, i, s.labels))
      return error("bad labels: " + line);
    if (i >= line.size() || line[i] != ' ') return error("no value: " + line);
    std::string rest = line.substr(i + 1);
    const auto hash = rest.find(" # ");
    if (hash != std::string::npos) {
      Exemplar e;
      if (!parse_exemplar(rest.substr(hash + 1), e)) return error("bad exemplar: " + line);
      s.exemplar = e;
      rest = rest.substr(0, hash);
    }
    const auto parts = split_spaces(rest);
    if (parts.empty() || parts.size() > 2) return error("bad value: " + line);
    try {
      s.value = parse_number(parts[0]);
      if (parts.size() == 2) parse_number(parts[1]);
    } catch (...) {
      return error("bad number: " + line);
    }
    belongs(s, line);
    has_samples_ = true;
    doc_.samples.push_back(std::move(s));
  }

  // The sample must carry the current family's name plus a suffix its type allows.
  void belongs(Sample& s, const std::string& line) {
    const auto it = doc_.families.find(current_);
    if (current_.empty() || it == doc_.families.end() || it->second.type.empty())
      return error("sample before its TYPE: " + line);
    if (s.name.compare(0, current_.size(), current_) != 0)
      return error("sample outside its family " + current_ + ": " + line);
    const std::string suffix = s.name.substr(current_.size());
    const std::string& type = it->second.type;
    if (!suffix_allowed(type, suffix)) error("suffix not allowed for a " + type + ": " + line);
    if (s.exemplar && suffix != "_bucket" && suffix != "_total")
      error("exemplar outside a bucket or total: " + line);
    if (type == "histogram" && suffix == "_bucket" && !s.labels.count("le"))
      error("bucket without le: " + line);
    s.family = current_;
  }

  // Buckets cumulative in le order, +Inf present and equal to _count.
  void check_histograms() {
    std::map<std::string, std::vector<std::pair<double, double>>> buckets;
    std::map<std::string, double> counts;
    for (const auto& s : doc_.samples) {
      auto labels = s.labels;
      labels.erase("le");
      std::string key = s.family;
      for (const auto& [k, v] : labels) key += "|" + k + "=" + v;
      if (s.name == s.family + "_bucket")
        buckets[key].push_back({parse_number(s.labels.at("le")), s.value});
      else if (s.name == s.family + "_count")
        counts[key] = s.value;
    }
    for (const auto& [key, b] : buckets) {
      for (std::size_t i = 1; i < b.size(); ++i)
        if (!(b[i - 1].first < b[i].first) || b[i - 1].second > b[i].second)
          error("buckets not cumulative in le order: " + key);
      if (b.back().first != std::numeric_limits<double>::infinity())
        error("no +Inf bucket: " + key);
      if (!counts.count(key) || counts[key] != b.back().second)
        error("+Inf bucket differs from _count: " + key);
    }
  }

  Document doc_;
  std::string current_;
  std::set<std::string> seen_;
  bool has_samples_ = false;
};

inline Document read(const std::string& text) { return Reader().read(text); }

// Samples of `name` whose labels are exactly `labels` ("le" compared as a number).
inline std::vector<const Sample*> find(const Document& d, const std::string& name,
                                       const std::map<std::string, std::string>& labels) {
  std::vector<const Sample*> out;
  for (const auto& s : d.samples) {
    if (s.name != name || s.labels.size() != labels.size()) continue;
    bool match = true;
    for (const auto& [k, v] : labels) {
      const auto it = s.labels.find(k);
      if (it == s.labels.end() ||
          (k == "le" ? parse_number(it->second) != parse_number(v) : it->second != v))
        match = false;
    }
    if (match) out.push_back(&s);
  }
  return out;
}

inline const Sample* find_one(const Document& d, const std::string& name,
                              const std::map<std::string, std::string>& labels) {
  const auto found = find(d, name, labels);
  return found.size() == 1 ? found.front() : nullptr;
}

}  // namespace lse::testing::om

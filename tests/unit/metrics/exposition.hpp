// A small parser of the Prometheus text format 0.0.4 for the metrics tests:
// samples become (name, labels, value) so tests assert exact values rather
// than grepping strings whose number formatting belongs to prometheus-cpp.
#pragma once
#include <limits>
#include <map>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

namespace lse::testing {

struct Sample {
  std::string name;
  std::map<std::string, std::string> labels;
  double value = 0;
};

struct Exposition {
  std::vector<Sample> samples;
  std::map<std::string, std::string> help;  // family -> help
  std::map<std::string, std::string> type;  // family -> type
  std::vector<std::string> bad_lines;       // anything that is not HELP/TYPE/sample
};

inline double parse_number(const std::string& s) {
  if (s == "+Inf") return std::numeric_limits<double>::infinity();
  if (s == "-Inf") return -std::numeric_limits<double>::infinity();
  if (s == "NaN") return std::numeric_limits<double>::quiet_NaN();
  std::size_t used = 0;
  double v = std::stod(s, &used);
  if (used != s.size()) throw std::invalid_argument("trailing bytes in number: " + s);
  return v;
}

inline bool valid_name(const std::string& n) {
  if (n.empty()) return false;
  for (std::size_t i = 0; i < n.size(); ++i) {
    char c = n[i];
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c == ':' ||
              (i > 0 && c >= '0' && c <= '9');
    if (!ok) return false;
  }
  return true;
}

// Parses `name{a="x",b="y"} value`; false when the line is not a sample.
inline bool parse_sample(const std::string& line, Sample& out) {
  std::size_t i = 0;
  while (i < line.size() && line[i] != '{' && line[i] != ' ') ++i;
  out.name = line.substr(0, i);
  out.labels.clear();
  if (!valid_name(out.name)) return false;
  if (i < line.size() && line[i] == '{') {
    ++i;
    while (i < line.size() && line[i] != '}') {
      std::size_t eq = line.find('=', i);
      if (eq == std::string::npos || eq + 1 >= line.size() || line[eq + 1] != '"') return false;
      std::string key = line.substr(i, eq - i);
      if (!valid_name(key)) return false;
      std::string value;
      std::size_t j = eq + 2;
      for (; j < line.size() && line[j] != '"'; ++j) {
        if (line[j] == '\\' && j + 1 < line.size()) {
          ++j;
          value += line[j] == 'n' ? '\n' : line[j];
        } else {
          value += line[j];
        }
      }
      if (j >= line.size()) return false;
      out.labels[key] = value;
      i = j + 1;
      if (i < line.size() && line[i] == ',') ++i;
    }
    if (i >= line.size()) return false;
    ++i;  // '}'
  }
  if (i >= line.size() || line[i] != ' ') return false;
  std::string rest = line.substr(i + 1);
  // An optional timestamp may follow; prometheus-cpp does not write one.
  if (rest.find(' ') != std::string::npos) rest = rest.substr(0, rest.find(' '));
  try {
    out.value = parse_number(rest);
  } catch (...) {
    return false;
  }
  return true;
}

inline Exposition parse_exposition(const std::string& text) {
  Exposition e;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    if (line.rfind("# HELP ", 0) == 0) {
      auto rest = line.substr(7);
      auto sp = rest.find(' ');
      if (sp == std::string::npos || !valid_name(rest.substr(0, sp))) {
        e.bad_lines.push_back(line);
        continue;
      }
      e.help[rest.substr(0, sp)] = rest.substr(sp + 1);
    } else if (line.rfind("# TYPE ", 0) == 0) {
      auto rest = line.substr(7);
      auto sp = rest.find(' ');
      std::string type = sp == std::string::npos ? "" : rest.substr(sp + 1);
      if (sp == std::string::npos || !valid_name(rest.substr(0, sp)) ||
          (type != "counter" && type != "gauge" && type != "histogram" && type != "summary" &&
           type != "untyped")) {
        e.bad_lines.push_back(line);
        continue;
      }
      e.type[rest.substr(0, sp)] = type;
    } else {
      Sample s;
      if (parse_sample(line, s))
        e.samples.push_back(std::move(s));
      else
        e.bad_lines.push_back(line);
    }
  }
  return e;
}

// Samples of `name` whose labels are exactly `labels` ("le" compared as a number).
inline std::vector<const Sample*> find_samples(const Exposition& e, const std::string& name,
                                               const std::map<std::string, std::string>& labels) {
  std::vector<const Sample*> found;
  for (const auto& s : e.samples) {
    if (s.name != name || s.labels.size() != labels.size()) continue;
    bool match = true;
    for (const auto& [k, v] : labels) {
      auto it = s.labels.find(k);
      if (it == s.labels.end()) {
        match = false;
        break;
      }
      if (k == "le") {
        if (parse_number(it->second) != parse_number(v)) match = false;
      } else if (it->second != v) {
        match = false;
      }
      if (!match) break;
    }
    if (match) found.push_back(&s);
  }
  return found;
}

inline std::optional<double> value_of(const Exposition& e, const std::string& name,
                                      const std::map<std::string, std::string>& labels) {
  auto found = find_samples(e, name, labels);
  if (found.size() != 1) return std::nullopt;
  return found.front()->value;
}

inline std::size_t count_samples(const Exposition& e, const std::string& name) {
  std::size_t n = 0;
  for (const auto& s : e.samples)
    if (s.name == name) ++n;
  return n;
}

}  // namespace lse::testing

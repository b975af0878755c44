// Shared pieces of the exporter's HTML pages (see page_parts.hpp).
#include "server/page_parts.hpp"

#include <fmt/format.h>

#include <cctype>

#include "report/format.hpp"
#include "report/html.hpp"

namespace lse::server {

std::string query_encode(std::string_view value) {
  std::string q;
  for (unsigned char c : value) {
    if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~')
      q += static_cast<char>(c);
    else
      q += fmt::format("%{:02X}", c);
  }
  return q;
}

std::string or_dash(const std::optional<double>& seconds) {
  return seconds ? report::format_seconds(*seconds) : "-";
}

std::string_view page_style() {
  return "body{font-family:system-ui,sans-serif;margin:1.2em 1.5em;color:#222}"
         "h1{font-size:1.5em;margin:.2em 0}h2{font-size:1.15em;margin:1.2em 0 .4em}"
         "table{border-collapse:collapse}th,td{border-bottom:1px solid #ddd;padding:.3em .5em;"
         "text-align:left;vertical-align:top}th{background:#f3f3f3;white-space:nowrap}"
         ".num{white-space:nowrap;text-align:right;font-variant-numeric:tabular-nums}"
         ".name{font-weight:700}.ok{color:#070}.fail{color:#b00}.muted,.sub{color:#777}.sub{font-"
         "size:85%}"
         "code{font-size:90%}.nowrap{white-space:nowrap}"
         ".endpoint{display:block;max-width:26em;overflow:hidden;text-overflow:ellipsis;"
         "white-space:nowrap}"
         ".verdict{display:inline-block;padding:.1em .6em;border-radius:1em;color:#fff;"
         "font-weight:600;white-space:nowrap}"
         ".v-ok{background:#1f8a4c}.v-stalling{background:#c0392b}.v-buffered{background:#d35400}"
         ".v-queue{background:#7b4bd1}.v-failing{background:#7a1010}.v-waiting{background:#888}"
         ".evidence{max-width:30em}.banner{font-size:1.1em;margin:.6em 0 1em}"
         ".banner .verdict{font-size:1.05em;margin-right:.5em}"
         ".mark{font-family:monospace;white-space:pre}.a-holds{color:#c0392b;font-weight:700}"
         ".a-unknown{color:#b07d00;font-weight:700}.note{color:#555;font-style:italic}";
}

std::string verdict_badge(const PageVerdict& v) {
  const std::string_view word = to_string(v.kind);
  if (v.detail.empty()) return fmt::format("<span class=\"verdict v-{0}\">{0}</span>", word);
  return fmt::format("<span class=\"verdict v-{0}\" title=\"{1}\">{0}</span>", word,
                     report::html_escape(v.detail));
}

std::string shorten_middle(std::string_view text, std::size_t max) {
  if (text.size() <= max || max < 8) return std::string(text);
  std::size_t tail = max / 3;
  std::size_t head = max - tail - 1;
  // Never cut a UTF-8 sequence: back off to the start of a character.
  auto continuation = [&](std::size_t i) {
    return (static_cast<unsigned char>(text[i]) & 0xC0) == 0x80;
  };
  while (head > 0 && continuation(head)) --head;
  while (tail > 0 && continuation(text.size() - tail)) --tail;
  return std::string(text.substr(0, head)) + "…" + std::string(text.substr(text.size() - tail));
}

}  // namespace lse::server

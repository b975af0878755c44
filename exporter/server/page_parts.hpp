// What the landing page and the probe page share: the stylesheet, the
// verdict badge, the query encoding of links. Every value is escaped here.
#pragma once
#include <optional>
#include <string>
#include <string_view>

#include "server/page_verdict.hpp"

namespace lse::server {

// A query value: everything but RFC 3986 unreserved characters percent-encoded.
std::string query_encode(std::string_view value);

// "150.3 ms", or "-" when not measured.
std::string or_dash(const std::optional<double>& seconds);

// The CSS of both pages: badges coloured per verdict, numbers that never wrap.
std::string_view page_style();

// `<span class="verdict v-stalling" title="...">stalling</span>`.
std::string verdict_badge(const PageVerdict& v);

// "https://very-long-host.example/…/v1": at most `max` characters, the
// start (scheme and host) and the end kept; the full text is for title=.
std::string shorten_middle(std::string_view text, std::size_t max);

}  // namespace lse::server

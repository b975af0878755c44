// The host and port grammar shared by URLs and listen addresses (RFC 3986
// reg-name, bracketed IPv6 literals with an optional zone, decimal ports).
#pragma once
#include <optional>
#include <string_view>

namespace lse::net {

// A decimal port in [min, 65535] (port 0 only means "any" when listening).
std::optional<int> parse_port(std::string_view text, int min);

// Letters, digits and . - _ ~ % (a DNS name or an IPv4 address).
bool valid_reg_name(std::string_view host);

// What stands between '[' and ']': hex groups, colons, an embedded IPv4 part,
// then an optional zone ("%25eth0" in URLs, "%eth0" elsewhere).
bool valid_ipv6_literal(std::string_view inside);

}  // namespace lse::net

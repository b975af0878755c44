// RFC 9113 §7 error code names, for rows (`h2_error`) and fault details.
#include <array>
#include <cstdint>
#include <string>
#include <string_view>

#include <fmt/format.h>

#include "h2/session.hpp"

namespace lse::h2 {

std::string error_code_name(std::uint32_t code) {
  static constexpr std::array<std::string_view, 14> kNames = {"NO_ERROR",
                                                              "PROTOCOL_ERROR",
                                                              "INTERNAL_ERROR",
                                                              "FLOW_CONTROL_ERROR",
                                                              "SETTINGS_TIMEOUT",
                                                              "STREAM_CLOSED",
                                                              "FRAME_SIZE_ERROR",
                                                              "REFUSED_STREAM",
                                                              "CANCEL",
                                                              "COMPRESSION_ERROR",
                                                              "CONNECT_ERROR",
                                                              "ENHANCE_YOUR_CALM",
                                                              "INADEQUATE_SECURITY",
                                                              "HTTP_1_1_REQUIRED"};
  if (code < kNames.size()) return std::string(kNames.at(code));
  return fmt::format("0x{:x}", code);
}

}  // namespace lse::h2

// A Batch as the body of an OTLP/HTTP export request: the
// ExportMetricsServiceRequest message in protobuf (application/x-protobuf)
// or in OTLP/JSON (application/json: lowerCamelCase field names, 64-bit
// integers as decimal strings, enums as integers). Pure.
#pragma once
#include <string>
#include <string_view>

#include "otlp/batch.hpp"

namespace lse::otlp {

std::string encode_protobuf(const Batch& batch);
std::string encode_json(const Batch& batch);

constexpr std::string_view kProtobufContentType = "application/x-protobuf";
constexpr std::string_view kJsonContentType = "application/json";

}  // namespace lse::otlp

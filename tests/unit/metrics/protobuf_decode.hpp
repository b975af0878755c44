// The length-delimited MetricFamily messages of a protobuf exposition, as a
// scraper reads them; a message that does not decode fails the test.
#pragma once
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>
#include <google/protobuf/util/delimited_message_util.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "prometheus/metrics.pb.h"

namespace lse::testing {

inline std::vector<io::prometheus::client::MetricFamily> decode_protobuf(const std::string& bytes) {
  google::protobuf::io::ArrayInputStream in(bytes.data(), static_cast<int>(bytes.size()));
  std::vector<io::prometheus::client::MetricFamily> out;
  for (;;) {
    io::prometheus::client::MetricFamily f;
    bool clean_eof = false;
    if (!google::protobuf::util::ParseDelimitedFromZeroCopyStream(&f, &in, &clean_eof)) {
      EXPECT_TRUE(clean_eof) << "a message did not decode after " << out.size() << " families";
      return out;
    }
    out.push_back(std::move(f));
  }
}

}  // namespace lse::testing

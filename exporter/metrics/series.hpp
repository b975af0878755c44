// The series of one series set and of one target, as Metrics keeps them:
// pointers into the prometheus-cpp families (metrics/families.hpp), the
// native histograms and the OpenMetrics notes beside them. Guarded by Metrics' lock (metrics.cpp).
#pragma once
#include <prometheus/counter.h>
#include <prometheus/gauge.h>
#include <prometheus/histogram.h>
#include <prometheus/labels.h>

#include <array>
#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "metrics/exemplars.hpp"
#include "metrics/families.hpp"
#include "metrics/native_histogram.hpp"
#include "probe/result.hpp"
#include "report/diagnosis.hpp"

namespace lse::metrics {

using prometheus::Counter;
using prometheus::Gauge;
using prometheus::Histogram;
using prometheus::Labels;

// The rows of TargetSeries::alert and WantedTarget::alert.
inline constexpr std::array<F, 3> kAlertRows = {F::alert_ttft, F::alert_worst_gap,
                                                F::alert_stall_share};

inline constexpr std::size_t kFinishOther = kFinishReasons.size() - 1;

// The row of kFinishReasons a server's finish reason counts under.
std::size_t finish_reason_index(std::string_view reason);

// The row of a DESIGN §7 shape in report::kAllShapes (the diagnosis gauges).
std::size_t shape_index(report::Shape shape);

// Every series of one series set. Pointers are owned by the families; a
// histogram the config leaves out (phases: off) is nullptr.
struct Series {
  Labels labels;  // target, model, prompt (not with per_prompt: false), the target's labels
  // Unix time the counters started from zero (OpenMetrics `_created`), and
  // each histogram's (rebuilt when its buckets change).
  double created = 0;
  std::array<double, kHistogramCount> histogram_created{};
  // The probe behind the latest observation of each bucket (OpenMetrics exemplars).
  BucketExemplars ttft_exemplars, gap_exemplars, max_gap_exemplars;

  Histogram* ttft = nullptr;
  Histogram* gap = nullptr;
  Histogram* gap_p95 = nullptr;
  Histogram* max_gap = nullptr;
  Histogram* tail = nullptr;
  Histogram* duration = nullptr;
  Histogram* tokens_per_second = nullptr;
  Histogram* tokens_per_chunk = nullptr;
  std::array<Histogram*, probe::kAllPhases.size()> phase{};
  // The native histogram beside each classic one (metrics.native), by
  // family row (the phase row unused) and by phase; nullptr when off.
  std::array<std::unique_ptr<NativeHistogram>, kHistogramCount> native{};
  std::array<std::unique_ptr<NativeHistogram>, probe::kAllPhases.size()> native_phase{};

  Counter* success = nullptr;
  Counter* failure = nullptr;
  // Zero-initialised, except with metrics.classic: false (native only, the
  // series-saving mode), where a reason's counter appears on first sight as
  // finish reasons do; hence atomic, like `finish`.
  std::array<std::atomic<Counter*>, probe::kAllFailureReasons.size()> failures{};
  Counter* stalls = nullptr;
  Counter* stall_seconds = nullptr;
  Counter* stalled_probes = nullptr;
  Counter* chunks = nullptr;
  Counter* coalesced = nullptr;
  Counter* output_tokens = nullptr;
  Counter* input_tokens = nullptr;
  Counter* warmup = nullptr;
  // Created on first sight under the *shared* lock, hence atomic; Family::Add
  // is itself thread-safe and returns the existing series for the same labels.
  std::array<std::atomic<Counter*>, kFinishReasons.size()> finish{};

  Gauge* last_success = nullptr;
  Gauge* last_timestamp = nullptr;
  std::array<Gauge*, kShapeCount> diagnosis{};
  // The verdicts of each prompt whose window is diagnosed into this set
  // (one, unless per_prompt: false); a shape's gauge is 1 when it holds for
  // any of them. Written under the shared lock, hence the mutex.
  std::mutex verdicts_mutex;
  std::map<std::string, std::array<report::Answer, kShapeCount>, std::less<>> verdicts;
};

struct TargetSeries {
  std::string model;
  Labels own_labels;  // the target's `labels:`
  bool per_prompt = true;
  std::vector<std::string> prompt_names;  // configured prompts
  Gauge* stall_threshold = nullptr;
  // The on-call thresholds (alert:), by row: alert_ttft, alert_worst_gap,
  // alert_stall_share.
  std::array<Gauge*, 3> alert{};
  Counter* backoffs = nullptr;
  Counter* unexpected_content_type = nullptr;
  // llm_stream_target_info, its labels, and the HTTP version of the target's
  // latest answered probe ("" before any; its http_version label). A probe
  // changes them under the shared lock, a render reads them under it: both
  // hold info_mutex.
  mutable std::mutex info_mutex;
  Gauge* info = nullptr;
  Labels info_labels;
  std::string http_version;
  // By prompt name; with per_prompt: false one set under "".
  std::map<std::string, std::unique_ptr<Series>, std::less<>> prompts;
};

}  // namespace lse::metrics

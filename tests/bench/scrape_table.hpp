// The scrape table of issue 31 §1 (scrape_table.cpp): render time, bytes and
// the RSS a scrape adds, per exposition format, size and metrics.classic.
#pragma once

namespace lse::bench {

// `bench_metrics --scrape-table`: every case in a fresh process, then the
// table, the ratios and the goals. Returns the exit code (0; 1 when a case
// failed to run).
int run_scrape_table(const char* self);

// `bench_metrics --scrape-case FORMAT CLASSIC TARGETS PROMPTS SIZE`: one case
// in this process, one JSON line on stdout.
int run_scrape_case(int argc, char** argv);

}  // namespace lse::bench

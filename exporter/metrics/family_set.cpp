#include "metrics/family_set.hpp"

namespace lse::metrics {

std::optional<F> family_named(std::string_view name) {
  for (const FamilySpec& spec : kFamilies)
    if (name == spec.name) return spec.id;
  return std::nullopt;
}

FamilySet::FamilySet(prometheus::Registry& r) {
  for (const FamilySpec& spec : kFamilies) {
    switch (spec.type) {
      case Type::histogram:
        all_.emplace_back(
            &prometheus::BuildHistogram().Name(spec.name).Help(spec.help).Register(r));
        break;
      case Type::counter:
        all_.emplace_back(&prometheus::BuildCounter().Name(spec.name).Help(spec.help).Register(r));
        break;
      case Type::gauge:
        all_.emplace_back(&prometheus::BuildGauge().Name(spec.name).Help(spec.help).Register(r));
        break;
    }
  }
}

ExporterSeries::ExporterSeries(const FamilySet& families, const BuildInfo& build)
    : reload_ok(families.gauge(F::reload_ok).Add({})),
      reload_timestamp(families.gauge(F::reload_timestamp).Add({})),
      reloads_ok(families.counter(F::reloads).Add({{"result", "success"}})),
      reloads_failed(families.counter(F::reloads).Add({{"result", "failure"}})),
      row_write_errors(families.counter(F::row_write_errors).Add({})),
      otlp_dropped(families.counter(F::otlp_dropped).Add({})) {
  families.gauge(F::build_info)
      .Add({{"version", build.version}, {"revision", build.revision}})
      .Set(1);
  families.gauge(F::shard_index).Add({}).Set(static_cast<double>(build.shard_index));
  families.gauge(F::shard_count).Add({}).Set(static_cast<double>(build.shard_count));
}

}  // namespace lse::metrics

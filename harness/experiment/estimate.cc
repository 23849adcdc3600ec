#include "harness/experiment/estimate.h"

#include "harness/net/link.h"

namespace loadbench {

using Json = nlohmann::ordered_json;

std::optional<Ceilings> CeilingsOf(const Json& probe) {
  const Json& c = probe.value("ceilings", Json::object());
  auto get = [&](const char* key, const char* field) {
    const Json& x = c.value(key, Json::object());
    const auto v = x.find(field);
    return v != x.end() && v->is_number() ? v->get<double>() : 0.0;
  };
  Ceilings out;
  out.cold_gbps = get("cold_buffered_read", "median_gb_per_s");
  out.cold_direct_gbps = get("cold_direct_read", "median_gb_per_s");
  out.warm_gbps = get("warm_read", "median_gb_per_s");
  out.memcpy_gbps = get("memcpy", "median_gb_per_s");
  out.write_gbps = get("sequential_write", "gb_per_s");
  out.anon_fault_us = get("anon_4k_fault", "us_per_fault");
  out.file_page_us = get("file_minor_fault", "us_per_page");
  if (out.cold_gbps <= 0 || out.warm_gbps <= 0 || out.memcpy_gbps <= 0 || out.write_gbps <= 0) {
    return std::nullopt;
  }
  if (out.cold_direct_gbps <= 0) out.cold_direct_gbps = out.cold_gbps;
  return out;
}

double EstimateRunSeconds(const Ceilings& c, uint64_t file_bytes, const StrategySpec& spec,
                          const std::string& cache, int procs) {
  const StrategyInfo* info = FindStrategy(spec.name);
  const uint32_t flags = info ? info->flags : 0;
  const double b = static_cast<double>(file_bytes), pages = b / 4096;
  const auto direct = spec.options.find("direct");
  const bool bypass =
      spec.name == "odirect" || (direct != spec.options.end() && direct->second == "on");
  // Worker start and the cache preparation: a drop, or a read of the (mostly cached) file.
  double t = 0.2 + (cache == "warm" ? b / (c.warm_gbps * 1e9) : 0);
  double load = cache == "cold" ? b / ((bypass ? c.cold_direct_gbps : c.cold_gbps) * 1e9)
                                : b / (c.warm_gbps * 1e9);
  if (flags & kAllocates) load += pages * c.anon_fault_us * 1e-6;
  if (flags & kMapsFile) load += pages * c.file_page_us * 1e-6;
  load += b / (c.memcpy_gbps * 1e9);  // the checksum consumer reads every byte once
  return t + load * procs;
}

double EstimateOnLink(const Experiment& e, const ExperimentRun& r, uint64_t file_bytes,
                      double local_s) {
  uint64_t bits = 0;
  if (r.link.empty() || !ParseLinkRate(r.link, &bits).ok() || bits == 0) return local_s;
  if (r.strategy == e.strategies.size() + kLinkCeilingRun) return e.link.seconds + 1.0;
  if (IsCeilingRun(e, r)) return local_s;
  const StrategySpec& spec = e.strategies[r.strategy].spec;
  const StrategyInfo* info = FindStrategy(spec.name);
  const bool remote = !spec.via.empty() || (info != nullptr && (info->flags & kRemote));
  if (!remote) return local_s;
  const double wire = static_cast<double>(file_bytes) * (r.pattern.replicated() ? r.procs : 1);
  return std::max(local_s, wire / (static_cast<double>(bits) / 8 * 0.95));
}

}  // namespace loadbench

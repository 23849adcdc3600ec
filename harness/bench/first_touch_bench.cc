// The first user access to fresh anonymous memory, by who populated it (the probe's
// measurement, harness/probe/first_touch.cc): the user's write faults, MAP_POPULATE,
// MADV_POPULATE_WRITE, a read(2) from the cached scratch file into it, an O_DIRECT read of it
// into it. Each iteration is one fresh 256 MiB region; the time is the first pass (one byte
// written per page), and the counters give per GiB the population, the first pass and the
// second, and the faults of the first pass.
#include <benchmark/benchmark.h>

#include "harness/bench/bench_util.h"
#include "harness/probe/probe_measure.h"

namespace loadbench::bench {
namespace {

void FirstTouchOf(benchmark::State& state, probe::FirstTouchBy how) {
  const CachedFile* file = WarmScratchFile(state);
  if (file == nullptr) return;
  double populate = 0, first = 0, second = 0, faults = 0;
  for (auto _ : state) {
    const auto j = probe::FirstTouch(how, file->path, file->size, 1);
    if (!j["first_s_per_gib"].is_number()) {
      state.SkipWithError(j.value("reason", "no figure").c_str());
      return;
    }
    const double gib = static_cast<double>(file->size) / static_cast<double>(kGiB);
    state.SetIterationTime(j["first_s_per_gib"].get<double>() * gib);
    populate += j["populate_s_per_gib"].get<double>();
    first += j["first_s_per_gib"].get<double>();
    second += j["second_s_per_gib"].get<double>();
    faults += j["first_faults"].get<double>();
  }
  const double n = static_cast<double>(state.iterations());
  state.counters["populate_s_per_gib"] = populate / n;
  state.counters["first_s_per_gib"] = first / n;
  state.counters["second_s_per_gib"] = second / n;
  state.counters["first_faults"] = faults / n;
}

void BM_FirstTouchUserWrite(benchmark::State& s) {
  FirstTouchOf(s, probe::FirstTouchBy::kUserWrite);
}
void BM_FirstTouchMapPopulate(benchmark::State& s) {
  FirstTouchOf(s, probe::FirstTouchBy::kMapPopulate);
}
void BM_FirstTouchPopulateWrite(benchmark::State& s) {
  FirstTouchOf(s, probe::FirstTouchBy::kPopulateWrite);
}
void BM_FirstTouchRead(benchmark::State& s) { FirstTouchOf(s, probe::FirstTouchBy::kRead); }
void BM_FirstTouchDirectRead(benchmark::State& s) {
  FirstTouchOf(s, probe::FirstTouchBy::kDirectRead);
}

BENCHMARK(BM_FirstTouchUserWrite)->UseManualTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_FirstTouchMapPopulate)->UseManualTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_FirstTouchPopulateWrite)->UseManualTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_FirstTouchRead)->UseManualTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_FirstTouchDirectRead)->UseManualTime()->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace loadbench::bench

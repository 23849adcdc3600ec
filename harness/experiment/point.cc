#include "harness/experiment/point.h"

#include <fmt/format.h>

#include "harness/record/results.h"

namespace loadbench {

StrategySpec CeilingRunSpec(const char* name) {
  StrategySpec s;
  s.name = s.text = name;
  return s;
}

RunPoint PointOf(const Experiment& e, const ExperimentRun& r) {
  RunPoint p;
  if (IsCeilingRun(e, r)) {
    const size_t k = r.strategy - e.strategies.size();
    p.spec = CeilingRunSpec(k == kLinkCeilingRun     ? kLinkCeiling
                            : k == kServerCeilingRun ? kServerCeiling
                                                     : kCeiling);
  } else {
    const ExperimentStrategy& st = e.strategies[r.strategy];
    p.spec = st.spec;
    p.strategy = st.resolved;
    p.unsupported = st.unsupported;
    p.exec = st.exec;
  }
  p.position = r.position;
  p.cache = r.cache;
  p.rep = r.rep;
  p.procs = r.procs;
  p.pattern = r.pattern;
  p.memory_limit = r.memory_limit;
  p.link = r.link;
  if (e.cluster.on()) p.nic = e.cluster.nic, p.uplink = e.cluster.uplink;
  if (!e.storages.empty()) p.storage = e.storages[r.storage].spec.label;
  return p;
}

std::string RunKey(const std::string& file, const RunPoint& p) {
  return RunKeyOf(file, p.spec.text, p.cache, p.rep, p.procs, p.memory_limit, p.pattern.Text(),
                  p.link, FabricKey(p.nic, p.uplink), p.storage);
}

}  // namespace loadbench

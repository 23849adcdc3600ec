#include "harness/experiment/point.h"

#include <fmt/format.h>

#include "harness/record/results.h"

namespace loadbench {

StrategySpec CeilingRunSpec() {
  StrategySpec s;
  s.name = s.text = kCeiling;
  return s;
}

RunPoint PointOf(const Experiment& e, const ExperimentRun& r) {
  RunPoint p;
  if (r.strategy == e.strategies.size()) {
    p.spec = CeilingRunSpec();
  } else {
    const ExperimentStrategy& st = e.strategies[r.strategy];
    p.spec = st.spec;
    p.unsupported = st.unsupported;
    p.exec = st.exec;
  }
  p.position = r.position;
  p.cache = r.cache;
  p.rep = r.rep;
  p.procs = r.procs;
  p.pattern = r.pattern;
  p.memory_limit = r.memory_limit;
  return p;
}

std::string RunKey(const std::string& file, const RunPoint& p) {
  return RunKeyOf(file, p.spec.text, p.cache, p.rep, p.procs, p.memory_limit, p.pattern);
}

}  // namespace loadbench

#include "tests/support/generated_model.h"

#include <stdexcept>

#include "harness/gen/generator.h"
#include "harness/launch/worker.h"
#include "harness/record/record.h"

namespace loadbench::test {

void WriteModel(const ModelFile& m) {
  GenOptions g;
  g.preset = m.preset;
  g.size_bytes = m.size;
  g.format = m.format;
  g.out_path = m.path;
  g.seed = m.seed;
  g.endian = m.endian;
  g.threads = 1;
  GenResult r;
  if (const Status s = Generate(g, &r); !s.ok()) {
    throw std::runtime_error(m.path + ": " + s.message());
  }
}

nlohmann::ordered_json WorkerRecord(const std::string& file, const std::string& strategy) {
  WorkerRequest req;
  req.file = file;
  req.strategy = strategy;
  return RecordJson(RunWorker(req, -1));
}

}  // namespace loadbench::test

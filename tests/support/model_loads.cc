#include "tests/support/model_loads.h"

#include <cstring>
#include <stdexcept>

#include <gtest/gtest.h>

#include "harness/gen/generator.h"
#include "loaders/base/file_io.h"
#include "loaders/format/checksum.h"
#include "loaders/format/format.h"
#include "loaders/format/model.h"
#include "loaders/use/spec.h"

namespace loadbench::test {

// Loads the model `table` with `spec` ("pool:threads=4"); `path` is what the worker would pass
// (the file, or a model's index), never read for a model of several shards.
Status LoadTable(const std::string& spec, const std::string& path, const TensorTable& table,
                 Loaded* out) {
  std::vector<StrategySpec> specs;
  LB_RETURN_IF_ERROR(ParseStrategyList(spec, &specs));
  const StrategyInfo* info = FindStrategy(specs[0].name);
  LB_RETURN_IF_ERROR(Params::Resolve(info->name, info->options, specs[0].options, &out->params));
  out->loader = info->make(out->params);
  LB_RETURN_IF_ERROR(out->loader->Load(path, table, &out->views));
  return out->loader->AllArrived();
}

// A model of the files at `paths`, each read as a file of its own, joined in this order.
TensorTable JoinFiles(const std::vector<std::string>& paths) {
  std::vector<TensorTable> shards;
  for (const std::string& p : paths) {
    TensorTable t;
    if (Status s = ReadTensorTableFromPath(p, &t); !s.ok()) throw std::runtime_error(s.message());
    shards.push_back(std::move(t));
  }
  TensorTable model;
  if (Status s = JoinShards(shards, &model); !s.ok()) throw std::runtime_error(s.message());
  return model;
}

// Generated weight files, once per process: two single files (safetensors with unaligned
// tensors, WLF with page-aligned ones) and a model of three safetensors shards of different
// sizes, seeds and misalignments.
GeneratedFiles::GeneratedFiles() {
  auto gen = [&](const std::string& name, const char* format, uint64_t kib, uint64_t seed,
                 uint64_t misalign) {
    GenOptions g;
    g.size_bytes = kib << 10;
    g.format = format;
    g.out_path = dir.File(name);
    g.seed = seed;
    g.misalign = misalign;
    g.threads = 1;
    GenResult r;
    if (Status s = Generate(g, &r); !s.ok()) throw std::runtime_error(s.message());
    return g.out_path;
  };
  singles = {gen("one.safetensors", "safetensors", 1024, 9, 24),
             gen("one.wlf", "wlf", 1024, 10, 0)};
  model = JoinFiles({gen("part1.safetensors", "safetensors", 1024, 21, 8),
                     gen("part2.safetensors", "safetensors", 512, 22, 0),
                     gen("part3.safetensors", "safetensors", 768, 23, 40)});
}
const GeneratedFiles& Generated() {
  static const GeneratedFiles f;
  return f;
}

TensorTable OddShards(const TempDir& dir, uint64_t align, std::vector<std::string>* paths) {
  paths->clear();
  for (uint64_t seed : {1, 2, 3}) {
    paths->push_back(dir.File("odd" + std::to_string(seed) + ".wlf"));
    WriteWlfFile(paths->back(), OddTensors(), align, seed);
  }
  return JoinFiles(*paths);
}

std::vector<std::vector<std::byte>> ReferenceTensors(const TensorTable& table) {
  std::vector<std::vector<std::byte>> out;
  for (const TensorInfo& t : table.tensors) {
    const std::string& path = table.shards.at(t.shard).path;
    UniqueFd fd;
    if (Status s = OpenReadOnly(path, 0, &fd); !s.ok()) throw std::runtime_error(s.message());
    out.emplace_back(t.size);
    if (t.size == 0) continue;
    if (Status s = PreadExact(fd.get(), path, out.back().data(), t.size, t.offset); !s.ok()) {
      throw std::runtime_error(s.message());
    }
  }
  return out;
}

void ExpectExact(const TensorTable& table, const Loaded& l, const std::string& what) {
  const auto reference = ReferenceTensors(table);
  ASSERT_EQ(l.views.size(), table.tensors.size()) << what;
  std::vector<TensorBytes> expected;
  for (size_t i = 0; i < reference.size(); ++i) {
    expected.emplace_back(reference[i].data(), reference[i].size());
    ASSERT_EQ(l.views[i].size(), reference[i].size()) << what << ": tensor " << i;
    if (reference[i].empty()) continue;  // memcmp may not be given the null data() of nothing
    EXPECT_EQ(std::memcmp(l.views[i].data(), reference[i].data(), reference[i].size()), 0)
        << what << ": tensor " << i << " (" << table.tensors[i].name << ", shard "
        << table.tensors[i].shard << ") differs";
  }
  EXPECT_EQ(ChecksumTensors(l.views), ChecksumTensors(expected)) << what;
  if (table.expected_checksum) {
    EXPECT_EQ(ChecksumTensors(l.views), *table.expected_checksum) << what;
  }
}

bool Unsupported(const Status& s) {
  return s.code() == Status::Code::kUnsupported &&
         (s.message().find("O_DIRECT") != std::string::npos ||
          s.message().find("transparent huge pages") != std::string::npos);
}

uint64_t Detail(const Loaded& l, const char* key) {
  return l.loader->Details().at(key).get<uint64_t>();
}

}  // namespace loadbench::test

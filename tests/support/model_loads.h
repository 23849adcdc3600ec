// Test support for strategies that take a whole model (pool, direct_ring): small generated
// files and a three-shard model, loads of them by strategy spec, and byte-for-byte checks of
// what a load delivered against plain preads of each tensor's own shard. For tests only.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "loaders/base/status.h"
#include "loaders/format/tensor_table.h"
#include "loaders/strategy/registry.h"
#include "tests/support/wlf_fixture.h"

namespace loadbench::test {

struct Loaded {
  Params params;
  std::unique_ptr<Loader> loader;  // owns the memory the views point into
  std::vector<TensorBytes> views;
};

// Loads the model `table` with `spec` ("pool:threads=4"); `path` is what the worker would pass
// (the file, or a model's index), never read for a model of several shards.
Status LoadTable(const std::string& spec, const std::string& path, const TensorTable& table,
                 Loaded* out);

// A model of the files at `paths`, each read as a file of its own, joined in this order.
TensorTable JoinFiles(const std::vector<std::string>& paths);

// Three WLF files of odd tensors (seeds 1, 2, 3) at `align`, written into `dir` as
// odd1.wlf..odd3.wlf, their paths into `paths`, joined into one model (its index would be
// odd.wlf.index.json in `dir`).
TensorTable OddShards(const TempDir& dir, uint64_t align, std::vector<std::string>* paths);

// Generated weight files, once per process: two single files (safetensors with unaligned
// tensors, WLF with page-aligned ones) and a model of three safetensors shards of different
// sizes, seeds and misalignments.
struct GeneratedFiles {
  GeneratedFiles();
  TempDir dir;
  std::vector<std::string> singles;
  TensorTable model;
};
const GeneratedFiles& Generated();

// Every tensor as plain preads of its own shard's file give it.
std::vector<std::vector<std::byte>> ReferenceTensors(const TensorTable& table);

// The views hold every tensor of `table` byte for byte and checksum as the model does.
void ExpectExact(const TensorTable& table, const Loaded& l, const std::string& what);

// Whether `s` is what this machine or filesystem cannot do: O_DIRECT refused, no THP.
bool Unsupported(const Status& s);

// A number from the loader's details.
uint64_t Detail(const Loaded& l, const char* key);

}  // namespace loadbench::test

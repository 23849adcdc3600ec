#include "tests/support/sharded_model.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>

#include <xxhash.h>

#include "harness/gen/generator.h"
#include "loaders/format/format.h"
#include "loaders/format/model.h"

namespace loadbench::test {
namespace {

ShardedModel Join(const TempDir& dir, const std::vector<std::string>& files) {
  std::vector<TensorTable> tables(files.size());
  for (size_t k = 0; k < files.size(); ++k) {
    const Status s = ReadTensorTableFromPath(files[k], &tables[k]);
    if (!s.ok()) throw std::runtime_error(s.message());
  }
  ShardedModel m;
  const Status s = JoinShards(tables, &m.table);
  if (!s.ok()) throw std::runtime_error(s.message());
  m.path = dir.File("model.index.json");
  std::string index = "{\"weight_map\": {}, \"shards\": [";
  for (size_t k = 0; k < files.size(); ++k) {
    index += (k ? ", \"" : "\"") + files[k].substr(files[k].rfind('/') + 1) + "\"";
  }
  index += "]}\n";
  WriteFileBytes(m.path, std::vector<std::byte>(reinterpret_cast<const std::byte*>(index.data()),
                                                reinterpret_cast<const std::byte*>(index.data()) +
                                                    index.size()));
  m.checksum = PreadModelChecksum(m.table);
  return m;
}

}  // namespace

ShardedModel GenerateShardedModel(const TempDir& dir, const std::string& format, size_t n,
                                  uint64_t bytes_each) {
  std::vector<std::string> files;
  for (size_t k = 0; k < n; ++k) {
    GenOptions g;
    g.size_bytes = bytes_each;
    g.format = format;
    g.out_path = dir.File(ShardFileName("model", k, n, format));
    g.seed = k + 1;
    g.threads = 1;
    GenResult r;
    const Status s = Generate(g, &r);
    if (!s.ok()) throw std::runtime_error(s.message());
    files.push_back(g.out_path);
  }
  return Join(dir, files);
}

ShardedModel WriteWlfShardedModel(const TempDir& dir,
                                  const std::vector<std::vector<WlfTensorSpec>>& shards,
                                  uint64_t align) {
  std::vector<std::string> files;
  for (size_t k = 0; k < shards.size(); ++k) {
    files.push_back(dir.File(ShardFileName("model", k, shards.size(), "wlf")));
    WriteWlfFile(files.back(), shards[k], align, /*seed=*/k + 1);
  }
  return Join(dir, files);
}

std::vector<std::vector<WlfTensorSpec>> LayersAcrossShards() {
  return {
      {{"token_embd.weight", WlfDType::kU8, {5001}},
       {"blk.0.attn_q.weight", WlfDType::kBF16, {3, 333}},
       {"blk.0.attn_k.weight", WlfDType::kU8, {17}}},
      {{"blk.0.ffn_up.weight", WlfDType::kF32, {777}},
       {"blk.0.ffn_down.weight", WlfDType::kU8, {1}},
       {"blk.1.attn_q.weight", WlfDType::kU8, {0}},
       {"blk.1.attn_k.weight", WlfDType::kU8, {9001}}},
      {{"blk.1.ffn_up.weight", WlfDType::kU8, {4097}},
       {"output_norm.weight", WlfDType::kF32, {31}},
       {"output.weight", WlfDType::kBF16, {2, 1001}}},
  };
}

uint64_t PreadModelChecksum(const TensorTable& table) {
  XXH3_state_t* state = XXH3_createState();
  XXH3_64bits_reset(state);
  std::vector<std::byte> buf;
  for (const TensorInfo& t : table.tensors) {
    const std::string& path = table.shards.at(t.shard).path;
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
      XXH3_freeState(state);
      throw std::runtime_error(path + ": " + std::strerror(errno));
    }
    buf.resize(t.size);
    uint64_t done = 0;
    while (done < t.size) {
      const ssize_t got =
          ::pread(fd, buf.data() + done, t.size - done, static_cast<off_t>(t.offset + done));
      if (got < 0 && errno == EINTR) continue;
      if (got <= 0) {
        ::close(fd);
        XXH3_freeState(state);
        throw std::runtime_error(path + ": short read of " + t.name);
      }
      done += static_cast<uint64_t>(got);
    }
    ::close(fd);
    XXH3_64bits_update(state, buf.data(), buf.size());
  }
  const uint64_t sum = XXH3_64bits_digest(state);
  XXH3_freeState(state);
  return sum;
}

}  // namespace loadbench::test

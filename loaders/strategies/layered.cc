// layered: one layer at a time. The file range of a layer's tensors is mapped, handed to the
// consumer, then advised MADV_DONTNEED and unmapped before the next layer is mapped, while the
// next layer's range is read ahead (POSIX_FADV_WILLNEED). Peak RSS is bounded by the largest
// layer instead of the file: the way to use a model larger than memory. A sharded model is
// walked as one: a layer whose tensors lie in several shards is one mapping per shard, each
// read ahead and released likewise.
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>

#include <fmt/format.h>

#include "loaders/base/file_io.h"
#include "loaders/format/model.h"
#include "loaders/strategy/strategy.h"

namespace loadbench {
namespace {

class LayeredLoader final : public Loader {
 public:
  explicit LayeredLoader(const Params& p)
      : advice_(p.Choice("advice")), ahead_(p.On("ahead")), drop_(p.On("drop")) {}

  Status Load(const std::string& path, const TensorTable&, std::vector<TensorBytes>*) override {
    return Status::Unsupported(fmt::format(
        "{}: layered hands out one layer at a time (LoadGroups); it never holds every tensor",
        path));
  }

  Status LoadGroups(const std::string& path, const TensorTable& table,
                    const std::vector<TensorGroup>& groups, const GroupUse& use) override {
    LB_RETURN_IF_ERROR(OpenFiles(path, table, groups));
    for (size_t n = 0; n < groups.size(); ++n) {
      const TensorGroup& g = groups[n];
      if (ahead_) ReadAhead(groups, n);
      std::vector<TensorBytes> views(g.tensors.size());
      if (std::all_of(g.ranges.begin(), g.ranges.end(), Empty)) {
        LB_RETURN_IF_ERROR(use(g, views));
        continue;
      }
      Layer layer;
      LB_RETURN_IF_ERROR(MapLayer(path, table, g, n, &layer, &views));
      Status s = use(g, views);
      Release(g, &layer);
      LB_RETURN_IF_ERROR(s);
      ++layers_;
      largest_ = std::max(largest_, layer.bytes);
    }
    return Status::Ok();
  }

  nlohmann::json Details() const override {
    return {{"groups_mapped", layers_}, {"largest_group_bytes", largest_}};
  }
  std::vector<TimeSpan> released() const override { return released_; }

 private:
  // One layer's mappings, one per shard it touches: mappings[j] begins at starts[j].
  struct Layer {
    std::vector<Mapping> mappings;
    std::vector<uint64_t> starts;
    uint64_t bytes = 0;
  };

  static bool Empty(const ShardRange& r) { return r.end == r.begin; }

  // One descriptor per file of the model, each checked at its validated size, and every
  // group's ranges checked against the files.
  Status OpenFiles(const std::string& path, const TensorTable& table,
                   const std::vector<TensorGroup>& groups) {
    const std::vector<ShardInfo> shards = ShardsOf(path, table);
    fds_.resize(shards.size());
    for (size_t k = 0; k < shards.size(); ++k) {
      paths_.push_back(shards[k].path);
      LB_RETURN_IF_ERROR(OpenReadOnly(paths_[k], 0, &fds_[k]));
      uint64_t size;
      LB_RETURN_IF_ERROR(FileSize(fds_[k].get(), paths_[k], &size));
      if (size != shards[k].file_size) {
        return Status::BadInput(fmt::format("{}: file changed size since it was validated "
                                            "({} -> {})",
                                            paths_[k], shards[k].file_size, size));
      }
    }
    for (const TensorGroup& g : groups) {
      for (const ShardRange& r : g.ranges) {
        if (r.shard >= shards.size()) {
          return Status::BadInput(fmt::format("{}: a layer's tensors lie in shard {}, the "
                                              "model has {}",
                                              path, r.shard, shards.size()));
        }
      }
    }
    return Status::Ok();
  }

  // Advises the next group that holds bytes to be read ahead (advice only: it may be refused
  // or cut short without harm).
  void ReadAhead(const std::vector<TensorGroup>& groups, size_t n) const {
    for (size_t k = n + 1; k < groups.size(); ++k) {
      if (std::all_of(groups[k].ranges.begin(), groups[k].ranges.end(), Empty)) continue;
      for (const ShardRange& r : groups[k].ranges) {
        if (Empty(r)) continue;
        ::posix_fadvise(fds_[r.shard].get(), static_cast<off_t>(r.begin),
                        static_cast<off_t>(r.end - r.begin), POSIX_FADV_WILLNEED);
      }
      return;
    }
  }

  // Maps every range of group `g` (layer `n`), advises it, and points the views into it.
  Status MapLayer(const std::string& path, const TensorTable& table, const TensorGroup& g, size_t n,
                  Layer* layer, std::vector<TensorBytes>* views) {
    const uint64_t page = static_cast<uint64_t>(::sysconf(_SC_PAGESIZE));
    const int advice = advice_ == "willneed"     ? MADV_WILLNEED
                       : advice_ == "sequential" ? MADV_SEQUENTIAL
                                                 : -1;
    layer->mappings.resize(g.ranges.size());
    layer->starts.assign(g.ranges.size(), 0);
    for (size_t j = 0; j < g.ranges.size(); ++j) {
      const ShardRange& r = g.ranges[j];
      if (Empty(r)) continue;
      layer->starts[j] = r.begin / page * page;
      const uint64_t len = r.end - layer->starts[j];
      LB_RETURN_IF_ERROR(MapPrivate(fds_[r.shard].get(), paths_[r.shard], layer->starts[j], len, 0,
                                    writable_, &layer->mappings[j]));
      if (advice >= 0 && ::madvise(layer->mappings[j].mutable_data(), len, advice) != 0) {
        return Status::FromErrno(fmt::format("{}: madvise on layer {}", paths_[r.shard], n), errno);
      }
      layer->bytes += len;
    }
    for (size_t k = 0; k < g.tensors.size(); ++k) {
      const TensorInfo& t = table.tensors[g.tensors[k]];
      if (t.size == 0) continue;
      size_t j = 0;
      while (j < g.ranges.size() && g.ranges[j].shard != t.shard) ++j;
      if (j == g.ranges.size() || Empty(g.ranges[j])) {
        return Status::BadInput(fmt::format(
            "{}: tensor {} of layer {} lies outside the layer's ranges", path, t.name, n));
      }
      (*views)[k] = TensorBytes(layer->mappings[j].data() + (t.offset - layer->starts[j]), t.size);
    }
    return Status::Ok();
  }

  // Frees the layer's private pages (a transform in place) now rather than at some later
  // reclaim, unmaps it and, with drop=on, drops its pages from the page cache; timed.
  void Release(const TensorGroup& g, Layer* layer) {
    const auto release = std::chrono::steady_clock::now();
    for (size_t j = 0; j < g.ranges.size(); ++j) {
      Mapping& m = layer->mappings[j];
      if (m.size() == 0) continue;
      const uint64_t len = m.size();
      ::madvise(m.mutable_data(), len, MADV_DONTNEED);
      m.reset();
      if (drop_) {
        ::posix_fadvise(fds_[g.ranges[j].shard].get(), static_cast<off_t>(layer->starts[j]),
                        static_cast<off_t>(len), POSIX_FADV_DONTNEED);
      }
    }
    released_.push_back({release, std::chrono::steady_clock::now()});
  }

  std::string advice_;
  bool ahead_;
  bool drop_;
  uint64_t layers_ = 0;
  uint64_t largest_ = 0;
  std::vector<TimeSpan> released_;
  std::vector<std::string> paths_;  // the model's files: a single file's path, or its shards'
  std::vector<UniqueFd> fds_;
};

}  // namespace

LOADBENCH_REGISTER_STRATEGY((StrategyInfo{
    .name = "layered",
    .summary = "map one layer's range, consume it, MADV_DONTNEED and unmap it, then the next; "
               "peak RSS bounded by the largest layer",
    .options =
        {
            {"advice",
             OptionSpec::Kind::kChoice,
             "willneed",
             "madvise on each layer's mapping",
             {"none", "sequential", "willneed"}},
            {"ahead", OptionSpec::Kind::kChoice, "on",
             "read the next layer ahead (POSIX_FADV_WILLNEED) while this one is used", kOnOff},
            {"drop", OptionSpec::Kind::kChoice, "off",
             "also drop each used layer from the page cache (POSIX_FADV_DONTNEED)", kOnOff},
        },
    .make = [](const Params& p) -> std::unique_ptr<Loader> {
      return std::make_unique<LayeredLoader>(p);
    },
    .flags = kMapsFile | kStreams | kModel,
}));

}  // namespace loadbench

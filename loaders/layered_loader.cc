// layered: one layer at a time. The file range of a layer's tensors is mapped, handed to the
// consumer, then advised MADV_DONTNEED and unmapped before the next layer is mapped, while the
// next layer's range is read ahead (POSIX_FADV_WILLNEED). Peak RSS is bounded by the largest
// layer instead of the file: the way to use a model larger than memory.
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cerrno>

#include <fmt/format.h>

#include "loaders/base/file_io.h"
#include "loaders/loader.h"

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
    UniqueFd fd;
    LB_RETURN_IF_ERROR(OpenReadOnly(path, 0, &fd));
    uint64_t size;
    LB_RETURN_IF_ERROR(FileSize(fd.get(), path, &size));
    if (size != table.file_size) {
      return Status::BadInput(fmt::format(
          "{}: file changed size since it was validated ({} -> {})", path, table.file_size, size));
    }
    const uint64_t page = static_cast<uint64_t>(::sysconf(_SC_PAGESIZE));
    const int advice = advice_ == "willneed"     ? MADV_WILLNEED
                       : advice_ == "sequential" ? MADV_SEQUENTIAL
                                                 : -1;
    for (size_t n = 0; n < groups.size(); ++n) {
      const TensorGroup& g = groups[n];
      if (ahead_) {
        for (size_t k = n + 1; k < groups.size(); ++k) {
          if (groups[k].end == groups[k].begin) continue;
          // Advice only: the read-ahead may be refused or cut short without harm.
          ::posix_fadvise(fd.get(), static_cast<off_t>(groups[k].begin),
                          static_cast<off_t>(groups[k].end - groups[k].begin),
                          POSIX_FADV_WILLNEED);
          break;
        }
      }
      std::vector<TensorBytes> views(g.tensors.size());
      if (g.end == g.begin) {
        LB_RETURN_IF_ERROR(use(g, views));
        continue;
      }
      const uint64_t start = g.begin / page * page;
      const uint64_t len = g.end - start;
      Mapping m;
      LB_RETURN_IF_ERROR(MapPrivate(fd.get(), path, start, len, 0, writable_, &m));
      if (advice >= 0 && ::madvise(m.mutable_data(), len, advice) != 0) {
        return Status::FromErrno(fmt::format("{}: madvise on layer {}", path, n), errno);
      }
      for (size_t k = 0; k < g.tensors.size(); ++k) {
        const TensorInfo& t = table.tensors[g.tensors[k]];
        if (t.size > 0) views[k] = TensorBytes(m.data() + (t.offset - start), t.size);
      }
      Status s = use(g, views);
      const auto release = std::chrono::steady_clock::now();
      // Private pages (a transform in place) are freed here, not at some later reclaim.
      ::madvise(m.mutable_data(), len, MADV_DONTNEED);
      m.reset();
      if (drop_) {
        ::posix_fadvise(fd.get(), static_cast<off_t>(start), static_cast<off_t>(len),
                        POSIX_FADV_DONTNEED);
      }
      released_s_ +=
          std::chrono::duration<double>(std::chrono::steady_clock::now() - release).count();
      LB_RETURN_IF_ERROR(s);
      ++layers_;
      largest_ = std::max(largest_, len);
    }
    return Status::Ok();
  }

  nlohmann::json Details() const override {
    return {{"groups_mapped", layers_}, {"largest_group_bytes", largest_}};
  }
  double released_s() const override { return released_s_; }

 private:
  std::string advice_;
  bool ahead_;
  bool drop_;
  uint64_t layers_ = 0;
  uint64_t largest_ = 0;
  double released_s_ = 0;
};

}  // namespace

LOADBENCH_REGISTER_STRATEGY((StrategyInfo{
    .name = "layered",
    .summary = "map one layer's range, consume it, MADV_DONTNEED and unmap it, then the next; "
               "peak RSS bounded by the largest layer",
    .options =
        {
            {"advice", OptionSpec::Kind::kChoice, "willneed",
             "madvise on each layer's mapping", {"none", "sequential", "willneed"}},
            {"ahead", OptionSpec::Kind::kChoice, "on",
             "read the next layer ahead (POSIX_FADV_WILLNEED) while this one is used", kOnOff},
            {"drop", OptionSpec::Kind::kChoice, "off",
             "also drop each used layer from the page cache (POSIX_FADV_DONTNEED)", kOnOff},
        },
    .make = [](const Params& p) -> std::unique_ptr<Loader> {
      return std::make_unique<LayeredLoader>(p);
    },
    .flags = kMapsFile | kStreams,
}));

}  // namespace loadbench

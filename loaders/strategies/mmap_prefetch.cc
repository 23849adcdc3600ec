// mmap + a prefetch thread: the whole file mapped as mmap does, and a background thread that
// reads one byte of every page of the data area, front to back, so that the faults and the
// disk reads happen ahead of the consumer instead of in its path.
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <stop_token>
#include <system_error>
#include <thread>

#include <fmt/format.h>

#include "loaders/base/file_io.h"
#include "loaders/strategy/strategy.h"

namespace loadbench {
namespace {

using Clock = std::chrono::steady_clock;

// The pacing granularity of a capped prefetch: it runs up to this far ahead of its schedule.
constexpr auto kMinSleep = std::chrono::milliseconds(1);

class MmapPrefetchLoader final : public Loader {
 public:
  explicit MmapPrefetchLoader(const Params& params)
      : rate_bytes_per_s_(static_cast<double>(params.Int("rate")) * 1e6) {}

  // The thread reads the mapping: it must be stopped and joined before the mapping goes.
  ~MmapPrefetchLoader() override {
    if (thread_.joinable()) {
      thread_.request_stop();
      thread_.join();
    }
  }

  Status Load(const std::string& path, const TensorTable& table,
              std::vector<TensorBytes>* views) override {
    // The thread touches every page, so a file that shrank since validation must not be mapped.
    LB_RETURN_IF_ERROR(MapWholeFile(path, table.file_size, 0, writable_, &mapping_));
    const uint64_t size = mapping_.size();
    const uint64_t page = static_cast<uint64_t>(::sysconf(_SC_PAGESIZE));
    const uint64_t start = std::min<uint64_t>(table.data_offset / page * page, size);
    started_ = Clock::now();
    try {
      thread_ =
          std::jthread([this, start, page](std::stop_token stop) { Prefetch(stop, start, page); });
    } catch (const std::system_error& e) {
      return Status::IOError(
          fmt::format("{}: cannot start the prefetch thread: {}", path, e.what()));
    }
    for (const auto& t : table.tensors) views->emplace_back(mapping_.data() + t.offset, t.size);
    return Status::Ok();
  }

  nlohmann::json Details() const override {
    nlohmann::json d = {{"prefetch_pages_touched", pages_touched_.load()},
                        {"prefetch_finished", finished_.load()},
                        {"prefetch_s", nullptr}};
    if (finished_.load()) {
      d["prefetch_s"] = ran_s_.load();
    } else if (thread_.joinable()) {  // still running: how long so far
      d["prefetch_s"] = std::chrono::duration<double>(Clock::now() - started_).count();
    }
    return d;
  }

 private:
  // Touches every page of the mapping from `start` to its end, at most `rate_bytes_per_s_` (give
  // or take kMinSleep) when that is not 0. The consumer may overtake it; both only read, so the
  // order does not matter.
  void Prefetch(std::stop_token stop, uint64_t start, uint64_t page) {
    const auto* base = reinterpret_cast<const volatile unsigned char*>(mapping_.data());
    const uint64_t end = mapping_.size();
    std::mutex mu;  // condition_variable_any wants one; nothing else contends for it
    std::unique_lock lock(mu);
    const std::chrono::duration<double> per_page(
        rate_bytes_per_s_ > 0 ? static_cast<double>(page) / rate_bytes_per_s_ : 0);
    uint64_t touched = 0;
    uint64_t off = start;
    for (; off < end && !stop.stop_requested(); off += page) {
      static_cast<void>(base[off]);
      pages_touched_.store(++touched, std::memory_order_relaxed);
      if (rate_bytes_per_s_ > 0) {
        // An absolute schedule, so that a sleep that overshoots is made up by the pages after
        // it; and no sleep shorter than kMinSleep, since every wakeup may preempt the consumer.
        const auto due = started_ + std::chrono::duration_cast<Clock::duration>(per_page * touched);
        if (due - Clock::now() >= kMinSleep) {
          wake_.wait_until(lock, stop, due, [] { return false; });
        }
      }
    }
    if (off < end) return;  // stopped early
    ran_s_.store(std::chrono::duration<double>(Clock::now() - started_).count());
    finished_.store(true);
  }

  const double rate_bytes_per_s_;
  Mapping mapping_;
  Clock::time_point started_;
  std::condition_variable_any wake_;  // woken only by a stop request
  std::atomic<uint64_t> pages_touched_{0};
  std::atomic<double> ran_s_{0};
  std::atomic<bool> finished_{false};
  std::jthread thread_;
};

}  // namespace

LOADBENCH_REGISTER_STRATEGY((StrategyInfo{
    .name = "mmap_prefetch",
    .summary = "mmap plus a thread that reads one byte per page of the data area ahead of the "
               "consumer",
    .options = {{"rate",
                 OptionSpec::Kind::kInt,
                 "0",
                 "cap on the prefetch thread's pace in MB/s (10^6 bytes); 0 for none",
                 {},
                 0}},
    .make = [](const Params& p) -> std::unique_ptr<Loader> {
      return std::make_unique<MmapPrefetchLoader>(p);
    },
    .flags = kMapsFile | kThreads,
}));

}  // namespace loadbench

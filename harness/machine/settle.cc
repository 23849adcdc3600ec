#include "harness/machine/settle.h"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>

#include "loaders/base/proc_fields.h"

namespace loadbench {

uint64_t SettleBytes(uint64_t file_bytes, const std::string& proc_dir) {
  const std::optional<uint64_t> available = ProcField(proc_dir + "/meminfo", "MemAvailable");
  constexpr uint64_t kMargin = uint64_t{1} << 30;
  if (!available || *available <= kMargin) return 0;
  return std::min(2 * file_bytes, *available - kMargin);
}

Settled SettleMemory(uint64_t bytes) {
  Settled s;
  if (bytes == 0) return s;
  const auto start = std::chrono::steady_clock::now();
  void* p = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) return s;
  // In huge pages where THP allows it: freed, they go back as whole 2 MiB blocks, the blocks a
  // run's huge pages are taken from next (a run's 4 KiB pages are split from them too), so that
  // both kinds of run start on memory the host backs. Refused (THP off): 4 KiB pages, as before.
  (void)::madvise(p, bytes, MADV_HUGEPAGE);
  const long page = ::sysconf(_SC_PAGESIZE);
  auto* bytes_at = static_cast<volatile unsigned char*>(p);
  for (uint64_t off = 0; off < bytes; off += static_cast<uint64_t>(page)) bytes_at[off] = 1;
  ::munmap(p, bytes);
  s.bytes = bytes;
  s.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return s;
}

}  // namespace loadbench

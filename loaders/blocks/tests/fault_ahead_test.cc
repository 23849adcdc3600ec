// FaultAhead populates every page of its region, lets a waiter through as soon as the blocks
// below its end are ready (however many threads finish them, in whatever order), and takes an
// empty region.
#include "loaders/blocks/fault_ahead.h"

#include <gtest/gtest.h>

#include <sys/mman.h>
#include <unistd.h>

#include <vector>

namespace loadbench {
namespace {

constexpr uint64_t kPage = 4096;

// How many of the pages of [p, p + len) are resident.
uint64_t Resident(std::byte* p, uint64_t len) {
  std::vector<unsigned char> vec(len / kPage);
  if (::mincore(p, len, vec.data()) != 0) return 0;
  uint64_t n = 0;
  for (unsigned char v : vec) n += v & 1;
  return n;
}

class Mapping {
 public:
  explicit Mapping(uint64_t len) : len_(len) {
    void* p = ::mmap(nullptr, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    p_ = p == MAP_FAILED ? nullptr : static_cast<std::byte*>(p);
  }
  ~Mapping() {
    if (p_ != nullptr) ::munmap(p_, len_);
  }
  std::byte* data() const { return p_; }

 private:
  std::byte* p_ = nullptr;
  uint64_t len_;
};

TEST(FaultAhead, PopulatesEveryPageWithAnyNumberOfThreads) {
  for (unsigned threads : {1u, 3u, 8u}) {
    const uint64_t len = 37 * kPage;
    Mapping m(len);
    ASSERT_NE(m.data(), nullptr);
    ASSERT_EQ(Resident(m.data(), len), 0u);
    FaultAhead f;
    f.Start(m.data(), len, 2 * kPage, threads, "test");
    ASSERT_TRUE(f.WaitFor(5 * kPage).ok());
    EXPECT_GE(Resident(m.data(), 5 * kPage), 5u) << threads;
    ASSERT_TRUE(f.Finish().ok());
    EXPECT_EQ(Resident(m.data(), len), len / kPage) << threads;
    EXPECT_GT(f.busy_s(), 0.0);
  }
}

TEST(FaultAhead, AWaitPastTheEndEndsWithTheRegion) {
  const uint64_t len = 9 * kPage;
  Mapping m(len);
  FaultAhead f;
  f.Start(m.data(), len, 4 * kPage, 2, "test");
  ASSERT_TRUE(f.WaitFor(100 * kPage).ok());
  EXPECT_EQ(Resident(m.data(), len), len / kPage);
}

TEST(FaultAhead, AnEmptyRegionIsReadyAtOnce) {
  FaultAhead f;
  f.Start(nullptr, 0, kPage, 4, "test");
  EXPECT_TRUE(f.WaitFor(0).ok());
  EXPECT_TRUE(f.Finish().ok());
}

// Memory that cannot be written (PROT_READ) cannot be populated for writing: the error names
// the file and reaches every waiter.
TEST(FaultAhead, APopulationThatFailsReachesTheWaiters) {
  const uint64_t len = 8 * kPage;
  void* p = ::mmap(nullptr, len, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(p, MAP_FAILED);
  FaultAhead f;
  f.Start(static_cast<std::byte*>(p), len, 2 * kPage, 2, "/weights/x.wlf");
  const Status s = f.WaitFor(len);
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("/weights/x.wlf"), std::string::npos) << s.message();
  EXPECT_FALSE(f.Finish().ok());
  ::munmap(p, len);
}

}  // namespace
}  // namespace loadbench

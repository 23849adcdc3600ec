// Parts done in any order, waited for as a prefix (owned's Arrived, the fault-ahead's blocks): a
// waiter for the first n parts returns only once all of them are done, whatever order they come
// in, and a failure reaches every waiter.
#include "loaders/blocks/prefix.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>

namespace loadbench {
namespace {

// Long enough for a waiter that does not wait to have returned; a waiter that does wait is
// never wrongly failed by it, whatever the machine's load.
constexpr auto kGrace = std::chrono::milliseconds(50);

TEST(Prefix, AWaiterReturnsOnlyOnceEveryPartBelowItsEndIsDone) {
  Prefix p;
  p.Reset(4);
  std::atomic<bool> returned{false};
  Status got = Status::Failed("never returned");
  std::thread waiter([&] {
    got = p.WaitFor(3);
    returned = true;
  });
  p.Done(2);
  p.Done(0);
  p.Done(3);  // past its end: not what it waits for
  std::this_thread::sleep_for(kGrace);
  EXPECT_FALSE(returned) << "part 1 is not done, yet the wait for parts 0 to 2 returned";
  p.Done(1);
  waiter.join();
  EXPECT_TRUE(returned);
  EXPECT_TRUE(got.ok()) << got.message();
  EXPECT_TRUE(p.WaitFor(SIZE_MAX).ok()) << "every part is done";
}

TEST(Prefix, AFailureReachesEveryWaiter) {
  Prefix p;
  p.Reset(2);
  Status got;
  std::thread waiter([&] { got = p.WaitFor(2); });
  p.Done(0);
  p.Fail(Status::IOError("read failed"));
  waiter.join();
  EXPECT_EQ(got.message(), "read failed");
  EXPECT_EQ(p.WaitFor(1).message(), "read failed") << "later waiters get it too";
}

}  // namespace
}  // namespace loadbench

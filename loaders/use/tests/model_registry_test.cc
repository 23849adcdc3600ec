// The registry: instances asking for one file share one mapping, and the mapping goes with the
// last instance.
#include <gtest/gtest.h>

#include "loaders/base/file_io.h"
#include "loaders/use/model_registry.h"
#include "tests/support/run_cli.h"
#include "tests/support/wlf_fixture.h"

namespace loadbench {
namespace {

struct Mapped {
  Mapping mapping;
};

// Whether /proc/self/maps lists a mapping of `path`.
bool IsMapped(const std::string& path) {
  return test::ReadWholeFile("/proc/self/maps").find(path) != std::string::npos;
}

TEST(ModelRegistry, InstancesShareOneMappingReleasedWithTheLast) {
  test::TempDir dir;
  const std::string path = dir.File("m.wlf");
  const test::WrittenWlf w = test::WriteWlfFile(path, test::OddTensors());
  SharedRegistry<Mapped> registry;
  int made = 0;
  auto make = [&](std::unique_ptr<Mapped>* out) {
    ++made;
    auto m = std::make_unique<Mapped>();
    LB_RETURN_IF_ERROR(MapWholeFile(path, w.layout.file_size, 0, false, &m->mapping));
    *out = std::move(m);
    return Status::Ok();
  };
  std::shared_ptr<Mapped> a, b;
  bool shared = true;
  ASSERT_TRUE(registry.Acquire(path, make, &a, &shared).ok());
  EXPECT_FALSE(shared);
  ASSERT_TRUE(registry.Acquire(path, make, &b, &shared).ok());
  EXPECT_TRUE(shared);
  EXPECT_EQ(made, 1);
  EXPECT_EQ(a->mapping.data(), b->mapping.data());
  EXPECT_TRUE(IsMapped(path));
  a.reset();
  EXPECT_EQ(registry.Live(), 1u);
  EXPECT_TRUE(IsMapped(path));
  b.reset();
  EXPECT_EQ(registry.Live(), 0u);
  EXPECT_FALSE(IsMapped(path));
  // Asked again, it loads again.
  ASSERT_TRUE(registry.Acquire(path, make, &a, &shared).ok());
  EXPECT_FALSE(shared);
  EXPECT_EQ(made, 2);
}

TEST(ModelRegistry, AFailedLoadKeepsNothing) {
  SharedRegistry<Mapped> registry;
  std::shared_ptr<Mapped> a;
  Status s = registry.Acquire(
      "k", [](std::unique_ptr<Mapped>*) { return Status::IOError("/x: refused"); }, &a);
  EXPECT_EQ(s.code(), Status::Code::kIOError);
  EXPECT_EQ(a, nullptr);
  EXPECT_EQ(registry.Live(), 0u);
}

}  // namespace
}  // namespace loadbench

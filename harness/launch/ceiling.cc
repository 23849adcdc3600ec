#include "harness/launch/ceiling.h"

#include <string>
#include <vector>

#include "harness/process/interrupt.h"

namespace loadbench {
namespace {

class Ceiling final : public Launcher {
 public:
  explicit Ceiling(CeilingRead& read) : read_(read) {}

  std::string NotOffered(int, uint64_t) const override { return ""; }
  std::string unprofiled(size_t) const override {
    return "a ceiling is a read in the runner, not a load";
  }
  bool in_process() const override { return true; }
  std::vector<ReaderOutcome> Launch(const LaunchRequest& req, const HostSteps&,
                                    bool* interrupted) override {
    std::vector<ReaderOutcome> out(1);
    out[0].host.ok = true;  // nothing for the host to make: the read makes its own start state
    read_.Read(req, &out[0].record);
    *interrupted = Interrupted();
    return out;
  }

 private:
  CeilingRead& read_;
};

}  // namespace

std::unique_ptr<Launcher> CeilingLauncher(CeilingRead& read) {
  return std::make_unique<Ceiling>(read);
}

}  // namespace loadbench

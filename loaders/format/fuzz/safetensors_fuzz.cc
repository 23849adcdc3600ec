// libFuzzer target: the safetensors reader on arbitrary bytes (`make fuzz`). It must return a table
// that describes only bytes of the input, or kBadInput; never crash, hang or allocate in
// proportion to a count the input claims.
#include <cstddef>
#include <cstdint>

#include "loaders/format/fuzz/fuzz_input.h"
#include "loaders/format/safetensors.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace loadbench;
  const int fd = fuzz::InputFd(data, size);
  TensorTable table;
  const Status s = ReadSafetensors(FileSource(fd, "input", size), &table);
  if (!fuzz::TableProblem(s, table, size).empty()) __builtin_trap();
  return 0;
}

// libFuzzer support shared by the format targets and the test that replays their seeds and
// crashers: each input becomes the content of an unnamed in-memory file, since the readers read
// through a file descriptor as they do in real use.
#pragma once

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <numeric>
#include <string>
#include <vector>

#include "loaders/base/status.h"
#include "loaders/format/tensor_table.h"

namespace loadbench::fuzz {

// The fd of a memfd holding exactly `data`; the same fd is reused across inputs.
inline int InputFd(const uint8_t* data, size_t size) {
  static const int fd = ::memfd_create("fuzz-input", MFD_CLOEXEC);
  if (fd < 0 || ::ftruncate(fd, 0) != 0) __builtin_trap();
  size_t done = 0;
  while (done < size) {
    const ssize_t n = ::pwrite(fd, data + done, size - done, static_cast<off_t>(done));
    if (n <= 0) __builtin_trap();
    done += static_cast<size_t>(n);
  }
  return fd;
}

// What is wrong with a reader's answer for an input of `size` bytes, or "" when nothing is: a
// refusal must be kBadInput with a message, and an accepted table must describe only bytes of
// the file, none of them twice. The fuzz targets trap on an answer; the test suite reports it.
inline std::string TableProblem(const Status& s, const TensorTable& t, size_t size) {
  if (!s.ok()) {
    if (s.code() != Status::Code::kBadInput) return "refused with a code other than kBadInput";
    return s.message().empty() ? "refused without a message" : "";
  }
  if (t.file_size != size) return "file_size differs from the input's size";
  if (t.data_offset > size) return "data_offset is past the end";
  uint64_t total = 0;
  for (const TensorInfo& x : t.tensors) {
    if (x.offset > size || x.size > size - x.offset)
      return "tensor '" + x.name + "' is past the end";
    if (x.size > 0 && x.offset < t.data_offset) return "tensor '" + x.name + "' is in the header";
    total += x.size;
  }
  if (total != t.tensor_bytes) return "tensor_bytes is not the sum of the sizes";
  std::vector<size_t> order(t.tensors.size());
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(),
            [&](size_t a, size_t b) { return t.tensors[a].offset < t.tensors[b].offset; });
  uint64_t end = 0;
  for (size_t i : order) {
    const TensorInfo& x = t.tensors[i];
    if (x.size == 0) continue;
    if (x.offset < end) return "tensor '" + x.name + "' overlaps another";
    end = x.offset + x.size;
  }
  return "";
}

}  // namespace loadbench::fuzz

#include "tests/support/wlf_fixture.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <memory>
#include <random>
#include <stdexcept>

#include <boost/endian/conversion.hpp>
#include <fmt/format.h>
#include <xxhash.h>

#include "loaders/base/file_io.h"

namespace loadbench::test {
namespace {

[[noreturn]] void Throw(const std::string& what, int err) {
  throw std::runtime_error(fmt::format("{}: {}", what, std::strerror(err)));
}

UniqueFd OpenOrThrow(const std::string& path, int flags) {
  int fd;
  do {
    fd = ::open(path.c_str(), flags | O_CLOEXEC, 0644);
  } while (fd < 0 && errno == EINTR);
  if (fd < 0) Throw(fmt::format("open {}", path), errno);
  return UniqueFd(fd);
}

void PwriteAll(int fd, const std::string& path, const void* data, size_t len, uint64_t offset) {
  const auto* p = static_cast<const char*>(data);
  size_t done = 0;
  while (done < len) {
    ssize_t n = ::pwrite(fd, p + done, len - done, static_cast<off_t>(offset + done));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0)
      Throw(fmt::format("write {} at offset {}", path, offset + done), n < 0 ? errno : EIO);
    done += static_cast<size_t>(n);
  }
}

// splitmix64: a cheap, well-mixed function of its input.
uint64_t Mix(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

}  // namespace

TempDir::TempDir() {
  char tmpl[] = "/tmp/loadbench_test.XXXXXX";
  if (::mkdtemp(tmpl) == nullptr) Throw("mkdtemp /tmp/loadbench_test.XXXXXX", errno);
  path_ = tmpl;
}

TempDir::~TempDir() {
  if (path_.empty()) return;
  std::error_code ec;
  std::filesystem::remove_all(path_, ec);  // best effort: a destructor must not throw
}

std::byte TensorByte(uint64_t seed, uint64_t index, uint64_t i) {
  // One mixed word per 8 bytes of a tensor; +1 on a value in [0, 255) keeps every byte non-zero.
  const uint64_t word = Mix(Mix(seed) ^ Mix(index + 0x1000) ^ (i / 8));
  const uint64_t lane = (word >> (8 * (i % 8))) & 0xff;
  return static_cast<std::byte>(lane % 255 + 1);
}

std::vector<std::byte> TensorData(uint64_t seed, uint64_t index, uint64_t size) {
  std::vector<std::byte> out(size);
  for (uint64_t i = 0; i < size; ++i) out[i] = TensorByte(seed, index, i);
  return out;
}

WrittenWlf WriteWlfFile(const std::string& path, const std::vector<WlfTensorSpec>& tensors,
                        uint64_t align, uint64_t seed, std::endian order) {
  WrittenWlf w;
  Status s = PlanWlf(tensors, align, &w.layout);
  if (!s.ok()) throw std::runtime_error("WriteWlfFile " + path + ": " + s.message());

  // The whole file is built in memory: fixture files are small.
  std::vector<std::byte> file(w.layout.file_size);  // zero: padding is zero bytes
  std::unique_ptr<XXH3_state_t, decltype(&XXH3_freeState)> state(XXH3_createState(),
                                                                 &XXH3_freeState);
  XXH3_64bits_reset(state.get());
  for (size_t i = 0; i < tensors.size(); ++i) {
    std::vector<std::byte> data = TensorData(seed, i, w.layout.tensor_sizes[i]);
    if (order == std::endian::big) SwapWlfElements(tensors[i].dtype, data.data(), data.size());
    if (!data.empty())
      std::memcpy(file.data() + w.layout.tensor_offsets[i], data.data(), data.size());
    XXH3_64bits_update(state.get(), data.data(), data.size());
  }
  w.checksum = XXH3_64bits_digest(state.get());

  const std::vector<std::byte> head =
      EncodeWlfHead(tensors, w.layout, kWlfFlagChecksum, w.checksum, /*gen_spec_id=*/0, order);
  std::memcpy(file.data(), head.data(), head.size());
  const WlfTail tail = EncodeWlfTail(w.layout, order);
  std::memcpy(file.data() + w.layout.data_end, &tail, sizeof tail);
  WriteFileBytes(path, file);
  return w;
}

std::vector<WlfTensorSpec> OddTensors() {
  return {
      {"odd.0", WlfDType::kBF16, {3, 5}},   // 30 bytes
      {"odd.1", WlfDType::kF32, {7}},       // 28 bytes
      {"odd.2", WlfDType::kU8, {1, 1, 1}},  // 1 byte
      {"odd.3", WlfDType::kF32, {0}},       // empty
      {"odd.4", WlfDType::kF16, {33, 17}},  // 1122 bytes
      {"odd.5", WlfDType::kI8, {4097}},     // one byte more than a page
  };
}

std::vector<std::byte> ReadFileBytes(const std::string& path) {
  UniqueFd fd = OpenOrThrow(path, O_RDONLY);
  std::vector<std::byte> out;
  char buf[1 << 16];
  while (true) {
    ssize_t n = ::read(fd.get(), buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) Throw(fmt::format("read {}", path), errno);
    if (n == 0) break;
    const auto* b = reinterpret_cast<const std::byte*>(buf);
    out.insert(out.end(), b, b + n);
  }
  return out;
}

void WriteFileBytes(const std::string& path, const std::vector<std::byte>& bytes) {
  UniqueFd fd = OpenOrThrow(path, O_WRONLY | O_CREAT | O_TRUNC);
  PwriteAll(fd.get(), path, bytes.data(), bytes.size(), 0);
}

std::vector<std::byte> WriteRandom(const std::string& path, uint64_t size, uint64_t seed) {
  std::mt19937_64 gen(seed);
  std::vector<std::byte> bytes(size);
  for (std::byte& b : bytes) b = static_cast<std::byte>(gen());
  WriteFileBytes(path, bytes);
  return bytes;
}

void PatchBytes(const std::string& path, uint64_t offset, const void* data, size_t len) {
  UniqueFd fd = OpenOrThrow(path, O_WRONLY);
  PwriteAll(fd.get(), path, data, len, offset);
}

// The host is little-endian (wlf.cc static_asserts it), so host integers are the file's.
void PatchU32(const std::string& path, uint64_t offset, uint32_t value, std::endian order) {
  if (order != std::endian::native) boost::endian::endian_reverse_inplace(value);
  PatchBytes(path, offset, &value, sizeof value);
}

void PatchU64(const std::string& path, uint64_t offset, uint64_t value, std::endian order) {
  if (order != std::endian::native) boost::endian::endian_reverse_inplace(value);
  PatchBytes(path, offset, &value, sizeof value);
}

}  // namespace loadbench::test

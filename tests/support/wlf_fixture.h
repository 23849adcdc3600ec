// Test support: temporary directories and small WLF files built on the fly, plus byte-level
// helpers for corrupting them. For tests only; linked into loadbench_tests.
//
// Typical use:
//   test::TempDir dir;
//   const std::string path = dir.File("model.wlf");
//   test::WrittenWlf w = test::WriteWlfFile(path, test::OddTensors());
//   test::PatchU64(path, test::WlfEntryField(0, test::kEntryDataSize), 12345);  // corrupt it
//
// Every helper throws std::runtime_error (naming the path and errno) when the system refuses:
// a fixture failure is an environment problem, and GoogleTest reports the exception as a
// failure of the test that called it.
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "loaders/format/wlf.h"

namespace loadbench::test {

// A fresh directory /tmp/loadbench_test.XXXXXX (mkdtemp), removed with everything in it on
// destruction. Move-only. Note: /tmp may be tmpfs; tests that need an evictable page cache
// must use a disk-backed directory instead.
class TempDir final {
 public:
  TempDir();
  ~TempDir();
  TempDir(TempDir&& o) noexcept : path_(std::move(o.path_)) { o.path_.clear(); }
  TempDir& operator=(TempDir&&) = delete;
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  const std::string& path() const { return path_; }
  // path() + "/" + name; creates nothing.
  std::string File(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

// What WriteWlfFile wrote.
struct WrittenWlf {
  FileLayout layout;  // as planned by PlanWlf: tensor offsets and sizes, data_offset, file_size
  uint64_t checksum;  // xxh3-64 of all tensor bytes in table order; also stored in the header
};

// Byte `i` of tensor number `index` in a file written with `seed`: deterministic, never zero,
// and different between tensors, so a view of the wrong tensor or a zero page is caught.
std::byte TensorByte(uint64_t seed, uint64_t index, uint64_t i);
// The `size` bytes of tensor number `index` (TensorByte for each i).
std::vector<std::byte> TensorData(uint64_t seed, uint64_t index, uint64_t size);

// Writes a valid WLF file of `tensors` at `path` (replacing any file there): layout from
// PlanWlf with `align`, head from EncodeWlfHead with flags kWlfFlagChecksum, tensor bytes from
// TensorData(seed, i, size), zero padding, tail from EncodeWlfTail. With `order` big, the head
// and tail are big-endian and each tensor's TensorData is SwapWlfElements'd by its dtype; the
// checksum is of the bytes as stored. Throws when PlanWlf refuses `align` or `tensors`, or when
// writing fails.
WrittenWlf WriteWlfFile(const std::string& path, const std::vector<WlfTensorSpec>& tensors,
                        uint64_t align = 4096, uint64_t seed = 1,
                        std::endian order = std::endian::little);

// A handful of tensors with awkward sizes: odd byte counts, a 1-element and an empty tensor,
// one larger than a page. Names are "odd.<n>".
std::vector<WlfTensorSpec> OddTensors();

// Whole-file and in-place byte helpers.
std::vector<std::byte> ReadFileBytes(const std::string& path);
// Creates or truncates `path` and writes `bytes`.
void WriteFileBytes(const std::string& path, const std::vector<std::byte>& bytes);
// A file of `size` pseudo-random bytes drawn from `seed`; returns them.
std::vector<std::byte> WriteRandom(const std::string& path, uint64_t size, uint64_t seed);
// Overwrites bytes at `offset` in an existing file (extending it when past the end).
void PatchBytes(const std::string& path, uint64_t offset, const void* data, size_t len);
// Overwrite a u32 / u64 at `offset`, little-endian unless `order` says big.
void PatchU32(const std::string& path, uint64_t offset, uint32_t value,
              std::endian order = std::endian::little);
void PatchU64(const std::string& path, uint64_t offset, uint64_t value,
              std::endian order = std::endian::little);

// Byte offsets of WLF fields, taken from the structs in wlf.h (which docs/formats.md fixes):
// header fields are absolute; entry fields are relative to the entry, see WlfEntryField.
inline constexpr uint64_t kHeaderMagic = offsetof(WlfHeader, magic);               // 0
inline constexpr uint64_t kHeaderVersion = offsetof(WlfHeader, version);           // 4
inline constexpr uint64_t kHeaderTensorCount = offsetof(WlfHeader, tensor_count);  // 8
inline constexpr uint64_t kHeaderMetaOffset = offsetof(WlfHeader, meta_offset);    // 16
inline constexpr uint64_t kHeaderDataOffset = offsetof(WlfHeader, data_offset);    // 24
inline constexpr uint64_t kHeaderFileSize = offsetof(WlfHeader, file_size);        // 32
inline constexpr uint64_t kHeaderFlags = offsetof(WlfHeader, flags);               // 40
inline constexpr uint64_t kHeaderReserved0 = offsetof(WlfHeader, reserved);        // 48
inline constexpr uint64_t kHeaderReserved1 = offsetof(WlfHeader, reserved) + 8;    // 56

inline constexpr uint64_t kEntryNameOffset = offsetof(WlfTensorEntry, name_offset);    // 0
inline constexpr uint64_t kEntryDType = offsetof(WlfTensorEntry, dtype);               // 8
inline constexpr uint64_t kEntryPad = offsetof(WlfTensorEntry, pad);                   // 12
inline constexpr uint64_t kEntryShapeOffset = offsetof(WlfTensorEntry, shape_offset);  // 16
inline constexpr uint64_t kEntryShapeCount = offsetof(WlfTensorEntry, shape_count);    // 24
inline constexpr uint64_t kEntryDataOffset = offsetof(WlfTensorEntry, data_offset);    // 32
inline constexpr uint64_t kEntryDataSize = offsetof(WlfTensorEntry, data_size);        // 40

// Absolute offset of field `field` (one of kEntry*) of tensor entry `i` in a file whose
// tensor table is at 64, as every valid WLF file's is.
constexpr uint64_t WlfEntryField(uint64_t i, uint64_t field) {
  return sizeof(WlfHeader) + i * sizeof(WlfTensorEntry) + field;
}

}  // namespace loadbench::test

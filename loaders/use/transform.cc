#include "loaders/use/transform.h"

#include <algorithm>
#include <cstring>

#include <fmt/format.h>

#include "loaders/format/wlf.h"

namespace loadbench {
namespace {

// Element size of a plain dtype; 0 for one without fixed-size elements (quantized blocks).
uint64_t ElementSize(const std::string& dtype) {
  WlfDType code;
  uint64_t size = 0;
  if (!WlfDTypeFromName(dtype, &code)) return 0;
  WlfDTypeInfo(static_cast<uint32_t>(code), nullptr, &size);
  return size;
}

// Converted a chunk at a time, so that the hash and the conversion read the chunk while it is
// in the CPU's cache.
constexpr uint64_t kChunk = 64 << 10;

inline uint16_t Swap(uint16_t v) { return __builtin_bswap16(v); }
inline uint32_t Swap(uint32_t v) { return __builtin_bswap32(v); }
inline uint64_t Swap(uint64_t v) { return __builtin_bswap64(v); }

template <typename T>
void SwapElements(const std::byte* src, std::byte* dst, uint64_t n) {
  for (uint64_t k = 0; k < n; ++k) {
    T v;
    std::memcpy(&v, src + k * sizeof(T), sizeof(T));
    v = Swap(v);
    std::memcpy(dst + k * sizeof(T), &v, sizeof(T));
  }
}

}  // namespace

Status CheckTransform(const std::string& transform, const TensorTable& table,
                      const std::string& path) {
  if (transform == "byteswap") {
    if (!table.big_endian) {
      return Status::Unsupported(fmt::format(
          "{}: transform=byteswap converts a big-endian file, and this one is little-endian "
          "(write one with gen --endian big)",
          path));
    }
    for (const TensorInfo& t : table.tensors) {
      if (ElementSize(t.dtype) == 0) {
        return Status::Unsupported(fmt::format(
            "{}: transform=byteswap: tensor '{}' has dtype {}, whose byte order is not defined",
            path, t.name, t.dtype));
      }
    }
  } else if (transform == "bf16_to_f32" && table.big_endian) {
    return Status::Unsupported(fmt::format(
        "{}: transform=bf16_to_f32 reads host-order bf16; this file is big-endian", path));
  }
  return Status::Ok();
}

TensorInfo Transformed(const std::string& transform, const TensorInfo& t) {
  TensorInfo out = t;
  if (transform == "bf16_to_f32" && t.dtype == "bf16") {
    out.dtype = "f32";
    out.size = t.size * 2;
  }
  return out;
}

void TransformTensor(const std::string& transform, const TensorInfo& t, const std::byte* src,
                     std::byte* dst, XXH3_state_t* hash) {
  const bool widen = transform == "bf16_to_f32" && t.dtype == "bf16";
  const uint64_t es = transform == "byteswap" ? ElementSize(t.dtype) : 2;
  for (uint64_t done = 0; done < t.size;) {
    const uint64_t n = std::min(kChunk, t.size - done);
    const std::byte* s = src + done;
    XXH3_64bits_update(hash, s, n);
    if (widen) {
      std::byte* d = dst + done * 2;
      for (uint64_t k = 0; k + 2 <= n; k += 2) {
        uint16_t h;
        std::memcpy(&h, s + k, 2);
        const uint32_t w = static_cast<uint32_t>(h) << 16;
        std::memcpy(d + k * 2, &w, 4);
      }
    } else if (transform == "byteswap" && es > 1) {
      switch (es) {
        case 2:
          SwapElements<uint16_t>(s, dst + done, n / 2);
          break;
        case 4:
          SwapElements<uint32_t>(s, dst + done, n / 4);
          break;
        default:
          SwapElements<uint64_t>(s, dst + done, n / 8);
          break;
      }
    } else if (dst != src) {
      std::memcpy(dst + done, s, n);
    }
    done += n;
  }
}

}  // namespace loadbench

// CRC32C (Castagnoli), as Kafka record batches v2 use it. Uses the SSE4.2 crc32 instruction
// when the CPU has it (checked once at start-up) and a table-driven portable fallback otherwise.
// Thread-safety: pure functions.
#pragma once

#include <cstddef>
#include <cstdint>

namespace shale::crc32c {

// Extends `crc` (a finished CRC of earlier bytes, 0 for none) with `n` bytes at `data`.
uint32_t extend(uint32_t crc, const void* data, size_t n) noexcept;
inline uint32_t value(const void* data, size_t n) noexcept { return extend(0, data, n); }

// The portable implementation, exposed so tests can compare both paths.
uint32_t extend_portable(uint32_t crc, const void* data, size_t n) noexcept;
// True when the hardware path is in use.
bool hardware_accelerated() noexcept;

}  // namespace shale::crc32c

// CRC32C throughput (hardware and portable) next to memcpy bandwidth on the same machine.
#include <benchmark/benchmark.h>

#include <cstring>
#include <vector>

#include "base/crc32c.h"

namespace {

void BM_Crc32c(benchmark::State& state) {
  std::vector<uint8_t> buf(static_cast<size_t>(state.range(0)), 0xab);
  for (auto _ : state) {
    benchmark::DoNotOptimize(shale::crc32c::value(buf.data(), buf.size()));
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * state.range(0));
}
BENCHMARK(BM_Crc32c)->Arg(1024)->Arg(64 * 1024)->Arg(1 << 20);

void BM_Crc32cPortable(benchmark::State& state) {
  std::vector<uint8_t> buf(static_cast<size_t>(state.range(0)), 0xab);
  for (auto _ : state) {
    benchmark::DoNotOptimize(shale::crc32c::extend_portable(0, buf.data(), buf.size()));
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * state.range(0));
}
BENCHMARK(BM_Crc32cPortable)->Arg(64 * 1024);

void BM_Memcpy(benchmark::State& state) {
  std::vector<uint8_t> src(static_cast<size_t>(state.range(0)), 0xab), dst(src.size());
  for (auto _ : state) {
    std::memcpy(dst.data(), src.data(), src.size());
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * state.range(0));
}
BENCHMARK(BM_Memcpy)->Arg(64 * 1024)->Arg(1 << 20)->Arg(16 << 20);

}  // namespace

BENCHMARK_MAIN();

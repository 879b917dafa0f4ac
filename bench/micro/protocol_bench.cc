// Protocol codec micro-benchmarks: decode and encode of Produce/Fetch requests and responses
// carrying one record batch of 1 KiB or 64 KiB (10 partitions), plus record-batch validation.
// Records decode as zero-copy slices; encoding copies them into the output builder.
#include <benchmark/benchmark.h>

#include <string>

#include "protocol/generated/fetch_request.h"
#include "protocol/generated/fetch_response.h"
#include "protocol/generated/produce_request.h"
#include "protocol/generated/produce_response.h"
#include "protocol/record_batch.h"

namespace shale::protocol {
namespace {

constexpr int kPartitions = 10;

Buffer make_batch(size_t bytes) {
  RecordBatchBuilder b;
  const std::string value(100, 'v');
  size_t n = 0;
  while (n < bytes) {
    b.add(1700000000000 + static_cast<int64_t>(n), "key", value);
    n += value.size() + 12;
  }
  return b.build();
}

ProduceRequest make_produce(size_t batch_bytes) {
  ProduceRequest p;
  p.acks = -1;
  p.timeout_ms = 30000;
  auto& t = p.topic_data.emplace_back();
  t.name = "bench-topic";
  Buffer batch = make_batch(batch_bytes);
  for (int i = 0; i < kPartitions; ++i) {
    auto& part = t.partition_data.emplace_back();
    part.index = i;
    part.records = batch;
  }
  return p;
}

ProduceResponse make_produce_response() {
  ProduceResponse r;
  auto& t = r.responses.emplace_back();
  t.name = "bench-topic";
  for (int i = 0; i < kPartitions; ++i) {
    auto& part = t.partition_responses.emplace_back();
    part.index = i;
    part.base_offset = 1000 * i;
  }
  return r;
}

FetchRequest make_fetch() {
  FetchRequest f;
  f.max_wait_ms = 500;
  f.min_bytes = 1;
  auto& t = f.topics.emplace_back();
  t.topic = "bench-topic";
  for (int i = 0; i < kPartitions; ++i) {
    auto& part = t.partitions.emplace_back();
    part.partition = i;
    part.fetch_offset = 12345;
    part.partition_max_bytes = 1 << 20;
  }
  return f;
}

FetchResponse make_fetch_response(size_t batch_bytes) {
  FetchResponse r;
  auto& t = r.responses.emplace_back();
  t.topic = "bench-topic";
  Buffer batch = make_batch(batch_bytes);
  for (int i = 0; i < kPartitions; ++i) {
    auto& part = t.partitions.emplace_back();
    part.partition_index = i;
    part.high_watermark = 99999;
    part.records = batch;
  }
  return r;
}

template <typename T>
Buffer encode(const T& m, int16_t v) {
  BufferBuilder b(m.encoded_size(v));
  Writer w(b);
  (void)m.encode(w, v);
  return std::move(b).freeze();
}

template <typename T>
void bench_encode(benchmark::State& state, const T& m, int16_t v) {
  size_t bytes = 0;
  for (auto _ : state) {
    BufferBuilder b(m.encoded_size(v));
    Writer w(b);
    benchmark::DoNotOptimize(m.encode(w, v).ok());
    bytes += b.size();
  }
  state.SetBytesProcessed(static_cast<int64_t>(bytes));
}

template <typename T>
void bench_decode(benchmark::State& state, const T& m, int16_t v) {
  Buffer frame = encode(m, v);
  for (auto _ : state) {
    T out;
    Reader r(frame);
    benchmark::DoNotOptimize(out.decode(r, v).ok());
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * frame.size()));
}

void BM_ProduceRequestDecode(benchmark::State& s) {
  bench_decode(s, make_produce(static_cast<size_t>(s.range(0))), 9);
}
void BM_ProduceRequestEncode(benchmark::State& s) {
  bench_encode(s, make_produce(static_cast<size_t>(s.range(0))), 9);
}
void BM_ProduceResponseDecode(benchmark::State& s) { bench_decode(s, make_produce_response(), 9); }
void BM_ProduceResponseEncode(benchmark::State& s) { bench_encode(s, make_produce_response(), 9); }
void BM_FetchRequestDecode(benchmark::State& s) { bench_decode(s, make_fetch(), 12); }
void BM_FetchRequestEncode(benchmark::State& s) { bench_encode(s, make_fetch(), 12); }
void BM_FetchResponseDecode(benchmark::State& s) {
  bench_decode(s, make_fetch_response(static_cast<size_t>(s.range(0))), 12);
}
void BM_FetchResponseEncode(benchmark::State& s) {
  bench_encode(s, make_fetch_response(static_cast<size_t>(s.range(0))), 12);
}

void BM_RecordBatchParseCrc(benchmark::State& s) {
  Buffer b = make_batch(static_cast<size_t>(s.range(0)));
  for (auto _ : s) benchmark::DoNotOptimize(RecordBatch::parse(b).ok());
  s.SetBytesProcessed(static_cast<int64_t>(s.iterations() * b.size()));
}

void BM_RecordBatchValidate(benchmark::State& s) {
  Buffer b = make_batch(static_cast<size_t>(s.range(0)));
  auto batch = RecordBatch::parse(b);
  for (auto _ : s) benchmark::DoNotOptimize(batch->validate(OffsetCheck::kProduce).ok());
  s.SetBytesProcessed(static_cast<int64_t>(s.iterations() * b.size()));
}

BENCHMARK(BM_ProduceRequestDecode)->Arg(1 << 10)->Arg(64 << 10);
BENCHMARK(BM_ProduceRequestEncode)->Arg(1 << 10)->Arg(64 << 10);
BENCHMARK(BM_ProduceResponseDecode);
BENCHMARK(BM_ProduceResponseEncode);
BENCHMARK(BM_FetchRequestDecode);
BENCHMARK(BM_FetchRequestEncode);
BENCHMARK(BM_FetchResponseDecode)->Arg(1 << 10)->Arg(64 << 10);
BENCHMARK(BM_FetchResponseEncode)->Arg(1 << 10)->Arg(64 << 10);
BENCHMARK(BM_RecordBatchParseCrc)->Arg(1 << 10)->Arg(64 << 10);
BENCHMARK(BM_RecordBatchValidate)->Arg(1 << 10)->Arg(64 << 10);

}  // namespace
}  // namespace shale::protocol

BENCHMARK_MAIN();

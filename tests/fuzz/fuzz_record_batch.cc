// Input: a frame of concatenated record batches (a Produce records field). The CRC is not
// verified so that mutations reach record iteration; every accepted batch is validated,
// iterated (records and headers) and rewritten, and the rewrite must parse back.
#include <cstddef>
#include <cstdint>
#include <cstdlib>

#include "protocol/record_batch.h"

using namespace shale;
using namespace shale::protocol;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  Buffer frame = Buffer::copy(data, size);
  for (bool partial : {false, true}) {
    BatchReader reader(frame, partial, /*verify_crc=*/false);
    for (int i = 0; i < 64; ++i) {
      auto b = reader.next();
      if (!b.ok() || !b->has_value()) break;
      const RecordBatch& batch = **b;
      (void)batch.validate(OffsetCheck::kProduce, 1 << 20);
      size_t headers = 0;
      (void)batch.for_each_record(
          [&](const RecordView& rec) {
            (void)rec.for_each_header([&](const RecordHeaderView& h) { headers += h.key.size(); });
          },
          OffsetCheck::kMonotonic, 1 << 20);
      RecordBatch::Rewrite rw;
      rw.base_offset = 1000;
      rw.partition_leader_epoch = 7;
      rw.log_append_time = 123456789;
      Buffer out = batch.rewrite(rw).flatten();
      auto again = RecordBatch::parse(out, /*verify_crc=*/true);
      if (!again.ok()) std::abort();
      if (again->header().base_offset != 1000 ||
          again->header().record_count != batch.header().record_count) {
        std::abort();
      }
    }
  }
  return 0;
}

#include "broker/partition_snapshot.h"

#include <algorithm>

#include "base/crc32c.h"
#include "base/endian.h"
#include "base/varint_codec.h"

namespace shale::broker {
namespace {

using Out = VarintWriter;
using In = VarintReader;

Error corrupt(const std::string& why) {
  return Error::make(Errc::kCorruption, "partition snapshot: " + why);
}

}  // namespace

// Layout (docs/formats.md): version u8, then varints; offsets and timestamps are delta-encoded
// against the previous entry so that a long index costs a few bytes per entry; a big-endian
// CRC32C of everything before it closes the value.
std::string PartitionSnapshot::encode() const {
  Out o;
  o.u8(kPartitionSnapshotVersion);
  o.sv(covered_end);
  o.uv(time_index.size());
  int64_t prev_ts = 0, prev_off = 0;
  for (const auto& e : time_index) {
    o.sv(e.max_timestamp - prev_ts);
    o.sv(e.base_offset - prev_off);
    o.sv(e.max_timestamp_offset - e.base_offset);
    prev_ts = e.max_timestamp;
    prev_off = e.base_offset;
  }
  o.sv(sizes_cumulative_before);
  o.uv(sizes.size());
  int64_t prev_end = 0, prev_cum = sizes_cumulative_before;
  for (const auto& e : sizes) {
    o.sv(e.base_offset - prev_end);
    o.sv(e.end_offset - e.base_offset);
    o.sv(e.cumulative_bytes - prev_cum);
    prev_end = e.end_offset;
    prev_cum = e.cumulative_bytes;
  }
  o.uv(producers.size());
  for (const auto& p : producers) {
    o.sv(p.producer_id);
    o.sv(p.epoch);
    o.uv(p.batches.size());
    for (const auto& b : p.batches) {
      o.sv(b.first_seq);
      o.sv(b.last_seq);
      o.sv(b.first_offset);
      o.sv(b.last_offset - b.first_offset);
      o.sv(b.timestamp);
    }
  }
  o.uv(open_txns.size());
  for (const auto& [pid, first] : open_txns) {
    o.sv(pid);
    o.sv(first);
  }
  o.uv(aborted_txns.size());
  for (const auto& a : aborted_txns) {
    o.sv(a.producer_id);
    o.sv(a.first_offset);
    o.sv(a.last_offset - a.first_offset);
  }
  std::string& s = o.buffer();
  uint8_t crc[4];
  be::store32(crc, crc32c::value(s.data(), s.size()));
  s.append(reinterpret_cast<const char*>(crc), 4);
  return std::move(s);
}

Result<PartitionSnapshot> PartitionSnapshot::decode(const std::string& bytes) {
  if (bytes.size() < 5) return corrupt("too short");
  const auto* data = reinterpret_cast<const uint8_t*>(bytes.data());
  const size_t body = bytes.size() - 4;
  if (be::load32(data + body) != crc32c::value(data, body)) return corrupt("checksum mismatch");
  In in(data, data + body);
  PartitionSnapshot s;
  uint8_t version = 0;
  in.u8(version);
  if (version != 1 && version != kPartitionSnapshotVersion) {
    return corrupt("unknown version " + std::to_string(version));
  }
  size_t n = 0;
  if (!in.sv(s.covered_end) || !in.count(n)) return corrupt("truncated header");
  int64_t prev_ts = 0, prev_off = 0;
  for (size_t i = 0; i < n; ++i) {
    int64_t dts = 0, doff = 0, dmax = 0;
    if (!in.sv(dts) || !in.sv(doff) || !in.sv(dmax)) return corrupt("truncated time index");
    TimeIndexEntry e{prev_ts + dts, prev_off + doff, 0};
    e.max_timestamp_offset = e.base_offset + dmax;
    s.time_index.push_back(e);
    prev_ts = e.max_timestamp;
    prev_off = e.base_offset;
  }
  if (!in.sv(s.sizes_cumulative_before) || !in.count(n)) return corrupt("truncated size index");
  int64_t prev_end = 0, prev_cum = s.sizes_cumulative_before;
  for (size_t i = 0; i < n; ++i) {
    int64_t dbase = 0, len = 0, dcum = 0;
    if (!in.sv(dbase) || !in.sv(len) || !in.sv(dcum)) return corrupt("truncated size index");
    SizeIndexEntry e{prev_end + dbase, 0, prev_cum + dcum};
    e.end_offset = e.base_offset + len;
    s.sizes.push_back(e);
    prev_end = e.end_offset;
    prev_cum = e.cumulative_bytes;
  }
  if (!in.count(n)) return corrupt("truncated producer list");
  for (size_t i = 0; i < n; ++i) {
    ProducerSnapshot p;
    int64_t epoch = 0;
    size_t nb = 0;
    if (!in.sv(p.producer_id) || !in.sv(epoch) || !in.count(nb)) {
      return corrupt("truncated producer");
    }
    p.epoch = static_cast<int16_t>(epoch);
    for (size_t j = 0; j < nb; ++j) {
      int64_t fs = 0, ls = 0, fo = 0, len = 0, ts = 0;
      if (!in.sv(fs) || !in.sv(ls) || !in.sv(fo) || !in.sv(len) || !in.sv(ts)) {
        return corrupt("truncated producer batch");
      }
      p.batches.push_back({static_cast<int32_t>(fs), static_cast<int32_t>(ls), fo, fo + len, ts});
    }
    s.producers.push_back(std::move(p));
  }
  if (version >= 2) {
    if (!in.count(n)) return corrupt("truncated transaction list");
    for (size_t i = 0; i < n; ++i) {
      int64_t pid = 0, first = 0;
      if (!in.sv(pid) || !in.sv(first)) return corrupt("truncated open transaction");
      s.open_txns.emplace_back(pid, first);
    }
    if (!in.count(n)) return corrupt("truncated aborted transaction list");
    for (size_t i = 0; i < n; ++i) {
      int64_t pid = 0, first = 0, len = 0;
      if (!in.sv(pid) || !in.sv(first) || !in.sv(len)) {
        return corrupt("truncated aborted transaction");
      }
      s.aborted_txns.push_back({pid, first, first + len});
    }
  }
  if (!in.done()) return corrupt("trailing bytes");
  return s;
}

void thin_time_index(std::vector<TimeIndexEntry>& v, size_t max_entries) {
  if (max_entries == 0 || v.size() <= max_entries) return;
  const size_t run = (v.size() + max_entries - 1) / max_entries;
  std::vector<TimeIndexEntry> out;
  out.reserve(max_entries);
  for (size_t i = 0; i < v.size(); i += run) {
    const size_t last = std::min(v.size(), i + run) - 1;
    out.push_back({v[last].max_timestamp, v[i].base_offset, v[last].max_timestamp_offset});
  }
  v = std::move(out);
}

void thin_size_index(std::vector<SizeIndexEntry>& v, size_t max_entries) {
  if (max_entries == 0 || v.size() <= max_entries) return;
  const size_t run = (v.size() + max_entries - 1) / max_entries;
  std::vector<SizeIndexEntry> out;
  out.reserve(max_entries);
  for (size_t i = 0; i < v.size(); i += run) {
    const size_t last = std::min(v.size(), i + run) - 1;
    out.push_back({v[i].base_offset, v[last].end_offset, v[last].cumulative_bytes});
  }
  v = std::move(out);
}

}  // namespace shale::broker

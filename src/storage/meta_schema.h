// How the storage engine lays out its state in the MetaStore (etcd-style flat keys; every value
// is a small versioned binary record, big-endian). Documented in docs/formats.md.
//
//   <ns>/ids/stream                       next stream id (decimal)
//   <ns>/ids/object                       next object id (decimal)
//   <ns>/node/<node>                      node epoch (decimal), bumped by every Engine::open
//   <ns>/s/<stream:016x>                  StreamMeta: epoch, state, owner, start, end, tags
//   <ns>/sk/<stream:016x>/<key>           stream side key/values (Stream::put_meta)
//   <ns>/o/<object:016x>                  ObjectMeta: type, state, size, times, stream ranges
//   <ns>/r/<stream:016x>/<end:016x>/<object:016x>
//                                         RangeRow: "offsets [start, end) of the stream are in
//                                         this object" — one row per (stream, object) for
//                                         stream-set objects too, so a read finds the object
//                                         holding offset o with one range scan from end > o.
// Invariants: for a stream, live range rows tile [start?, end) without overlap; an object is
// readable only once COMMITTED; the stream's `end` moves only by an upload commit that also
// writes the range rows (one transaction, compared on the stream key's mod revision).
// Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "base/result.h"

namespace shale::storage {

enum class StreamState : uint8_t { kOpen = 1, kClosed = 2 };

struct StreamMeta {
  int64_t epoch = 0;
  StreamState state = StreamState::kClosed;
  int32_t owner = -1;
  int64_t start = 0;
  int64_t end = 0;  // committed end (data in objects)
  std::map<std::string, std::string> tags;
};

enum class ObjectState : uint8_t { kPrepared = 1, kCommitted = 2, kMarkedForDeletion = 3 };
enum class ObjectType : uint8_t { kStreamSet = 0, kStream = 1 };

struct ObjectRange {
  int64_t stream_id = 0;
  int64_t start = 0;
  int64_t end = 0;
};

struct ObjectMeta {
  ObjectType type = ObjectType::kStreamSet;
  ObjectState state = ObjectState::kPrepared;
  int32_t node = 0;
  uint64_t size = 0;
  // kPrepared: deadline after which it is abandoned; kCommitted: commit time;
  // kMarkedForDeletion: when it was marked (physical delete after the grace delay).
  int64_t time_ms = 0;
  int64_t data_time_ms = 0;  // when its oldest data was written (for force-split compaction)
  std::vector<ObjectRange> ranges;
};

struct RangeRow {
  int64_t stream_id = 0;
  int64_t start = 0;
  int64_t end = 0;
  int64_t object_id = 0;
  uint64_t object_size = 0;
};

class Keys {
 public:
  explicit Keys(std::string ns) : ns_(std::move(ns)) {}
  std::string stream_id_counter() const { return ns_ + "/ids/stream"; }
  std::string object_id_counter() const { return ns_ + "/ids/object"; }
  std::string node(int32_t node) const { return ns_ + "/node/" + std::to_string(node); }
  std::string streams() const { return ns_ + "/s/"; }
  std::string stream(int64_t id) const { return streams() + hex(id); }
  std::string stream_kv_prefix(int64_t id) const { return ns_ + "/sk/" + hex(id) + "/"; }
  std::string stream_kv(int64_t id, const std::string& k) const { return stream_kv_prefix(id) + k; }
  std::string objects() const { return ns_ + "/o/"; }
  std::string object(int64_t id) const { return objects() + hex(id); }
  std::string ranges(int64_t stream) const { return ns_ + "/r/" + hex(stream) + "/"; }
  // The first range key whose end is > offset (the scan start for a read at offset).
  std::string range_from(int64_t stream, int64_t offset) const {
    return ranges(stream) + hex(offset + 1) + "/";
  }
  std::string range(int64_t stream, int64_t end, int64_t object) const {
    return ranges(stream) + hex(end) + "/" + hex(object);
  }
  // The object's name in the bucket: a reversed-hex prefix spreads ids over S3 partitions.
  std::string object_name(int64_t id) const;
  static int64_t parse_id(const std::string& key);  // the hex id after the last '/'
  static std::string hex(int64_t v);

 private:
  std::string ns_;
};

std::string encode_stream(const StreamMeta& m);
Result<StreamMeta> decode_stream(const std::string& v);
std::string encode_object(const ObjectMeta& m);
Result<ObjectMeta> decode_object(const std::string& v);
std::string encode_range(const RangeRow& r);
Result<RangeRow> decode_range(const std::string& v);

}  // namespace shale::storage

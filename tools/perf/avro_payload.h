// Avro payloads for --value-schema / --values-file (docs/perf-tool.md), on avro-c and
// jansson: parsing the schema, random values generated from it the way PerfCommand's
// schemaRandomPayloads does, values read from Avro-JSON lines (the encoding Java's JsonDecoder
// reads: unions as {"branch-type": value}, bytes and fixed as ISO-8859-1 strings), Avro binary
// encoding, and the Confluent wire framing (magic byte 0, 4-byte big-endian schema id, body).
//
// Everything here runs on the control thread before the load starts; the results are plain
// strings that the payload pools then own. Errors throw AvroError with a message for the user.
#pragma once

#include <cstdint>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

namespace shale::perf {

struct AvroError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

class AvroSchema {
 public:
  // Parses an Avro schema in JSON form; throws AvroError with avro-c's reason.
  explicit AvroSchema(const std::string& json);
  ~AvroSchema();
  AvroSchema(const AvroSchema&) = delete;
  AvroSchema& operator=(const AvroSchema&) = delete;

  // `count` random values (booleans, ints, longs random; float/double in [0,1); bytes 1-16
  // random bytes; strings 3-15 alphanumerics; arrays and maps 0-3 entries, map keys k0, k1...;
  // record fields of a union type take the first non-null branch, other unions a random
  // non-null branch), each as Avro binary.
  std::vector<std::string> random_values(int count, std::mt19937_64& rng) const;
  // One Avro-JSON value per non-empty line of `path`, each as Avro binary. A line that does not
  // match the schema throws AvroError naming the line number.
  std::vector<std::string> values_from_file(const std::string& path) const;
  // One Avro-JSON value as Avro binary.
  std::string value_from_json(const std::string& json) const;

 private:
  void* schema_;  // avro_schema_t
};

// Confluent framing: 0x00, the schema id big-endian, then the Avro body.
std::string confluent_frame(int32_t schema_id, const std::string& body);

}  // namespace shale::perf

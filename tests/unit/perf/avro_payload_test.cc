#include "perf/avro_payload.h"

#include <gtest/gtest.h>

#include <cctype>
#include <cstdio>
#include <cstring>
#include <fstream>

#include "perf/schema_registry.h"

namespace shale::perf {
namespace {

std::string bytes(std::initializer_list<int> b) {
  std::string s;
  for (int c : b) s.push_back(static_cast<char>(c));
  return s;
}

// Expected encodings worked out by hand from the Avro spec: zig-zag varints, length-prefixed
// strings and bytes, union index before the branch, blocks of items ended by a 0 count.
TEST(PerfAvro, EncodesAvroJsonValuesAsTheSpecSays) {
  AvroSchema rec(R"({"type":"record","name":"R","namespace":"ns","fields":[
      {"name":"a","type":"int"},{"name":"b","type":"string"},
      {"name":"c","type":["null","string"]}]})");
  EXPECT_EQ(rec.value_from_json(R"({"a":1,"b":"ab","c":null})"),
            bytes({0x02, 0x04, 'a', 'b', 0x00}));
  EXPECT_EQ(rec.value_from_json(R"({"a":-2,"b":"","c":{"string":"x"}})"),
            bytes({0x03, 0x00, 0x02, 0x02, 'x'}));

  EXPECT_EQ(AvroSchema(R"("long")").value_from_json("-1"), bytes({0x01}));
  EXPECT_EQ(AvroSchema(R"("long")").value_from_json("64"), bytes({0x80, 0x01}));
  EXPECT_EQ(AvroSchema(R"("boolean")").value_from_json("true"), bytes({0x01}));
  EXPECT_EQ(AvroSchema(R"("float")").value_from_json("1.0"), bytes({0x00, 0x00, 0x80, 0x3f}));
  EXPECT_EQ(AvroSchema(R"("double")").value_from_json("2"), bytes({0, 0, 0, 0, 0, 0, 0x00, 0x40}));
  EXPECT_EQ(AvroSchema(R"("null")").value_from_json("null"), "");
  // Avro JSON carries bytes as code points 0-255.
  EXPECT_EQ(AvroSchema(R"("bytes")").value_from_json(R"("\u00ffA")"), bytes({0x04, 0xff, 'A'}));
  EXPECT_EQ(
      AvroSchema(R"({"type":"fixed","name":"F","size":2})").value_from_json(R"("\u0001\u0002")"),
      bytes({0x01, 0x02}));
  EXPECT_EQ(
      AvroSchema(R"({"type":"enum","name":"E","symbols":["X","Y"]})").value_from_json(R"("Y")"),
      bytes({0x02}));
  EXPECT_EQ(AvroSchema(R"({"type":"array","items":"int"})").value_from_json("[1,2]"),
            bytes({0x04, 0x02, 0x04, 0x00}));
  EXPECT_EQ(AvroSchema(R"({"type":"array","items":"int"})").value_from_json("[]"), bytes({0x00}));
  EXPECT_EQ(AvroSchema(R"({"type":"map","values":"int"})").value_from_json(R"({"k":1})"),
            bytes({0x02, 0x02, 'k', 0x02, 0x00}));
  // A named branch is addressed by its full name (Java's JsonDecoder) or its short name.
  AvroSchema u(R"(["null",{"type":"record","name":"P","namespace":"a.b",
      "fields":[{"name":"x","type":"int"}]}])");
  EXPECT_EQ(u.value_from_json(R"({"a.b.P":{"x":3}})"), bytes({0x02, 0x06}));
  EXPECT_EQ(u.value_from_json(R"({"P":{"x":3}})"), bytes({0x02, 0x06}));
}

TEST(PerfAvro, RejectsValuesThatDoNotMatchTheSchema) {
  AvroSchema rec(R"({"type":"record","name":"R","fields":[
      {"name":"a","type":"int"},{"name":"c","type":["null","string"]}]})");
  auto message = [&](const std::string& json) {
    try {
      rec.value_from_json(json);
    } catch (const AvroError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_EQ(message(R"({"c":null})"), "value: missing field 'a'");
  EXPECT_EQ(message(R"({"a":"1","c":null})"), "value.a: expected an int");
  EXPECT_EQ(message(R"({"a":4294967296,"c":null})"), "value.a: expected an int in 32 bits");
  EXPECT_EQ(message(R"({"a":1,"c":"x"})"),
            "value.c: expected a union as {\"type\": value} or null");
  EXPECT_EQ(message(R"({"a":1,"c":{"int":1}})"), "value.c: 'int' is not a branch of the union");
  EXPECT_EQ(message("{"), "invalid JSON: string or '}' expected near end of file");
  EXPECT_THROW(AvroSchema(R"({"type":"nope"})"), AvroError);
}

TEST(PerfAvro, ValuesFileGivesOnePayloadPerLineAndNamesTheBadLine) {
  AvroSchema s(R"("int")");
  std::string path = ::testing::TempDir() + "/perf_avro_values.txt";
  {
    std::ofstream f(path);
    f << "1\n\n2\n";
  }
  EXPECT_EQ(s.values_from_file(path), (std::vector<std::string>{bytes({0x02}), bytes({0x04})}));
  {
    std::ofstream f(path);
    f << "1\ntrue\n";
  }
  try {
    s.values_from_file(path);
    ADD_FAILURE() << "no error";
  } catch (const AvroError& e) {
    EXPECT_EQ(std::string(e.what()), path + ":2: value: expected an int");
  }
  std::remove(path.c_str());
  EXPECT_THROW(s.values_from_file(path), AvroError);
}

TEST(PerfAvro, RandomValuesFollowTheOriginalGenerator) {
  std::mt19937_64 rng(42);
  // Strings: 3-15 alphanumerics, so the length byte (zig-zag) is 6..30.
  for (const auto& v : AvroSchema(R"("string")").random_values(200, rng)) {
    ASSERT_GE(v.size(), 4u);
    int len = static_cast<unsigned char>(v[0]) / 2;
    EXPECT_GE(len, 3);
    EXPECT_LE(len, 15);
    ASSERT_EQ(v.size(), static_cast<size_t>(len) + 1);
    for (size_t i = 1; i < v.size(); ++i)
      EXPECT_TRUE(std::isalnum(static_cast<unsigned char>(v[i])));
  }
  // Bytes: 1-16 random bytes.
  for (const auto& v : AvroSchema(R"("bytes")").random_values(200, rng)) {
    int len = static_cast<unsigned char>(v[0]) / 2;
    EXPECT_GE(len, 1);
    EXPECT_LE(len, 16);
    EXPECT_EQ(v.size(), static_cast<size_t>(len) + 1);
  }
  // A union-typed record field takes the first non-null branch (index 1 here, zig-zag 0x02);
  // a fixed is exactly its size; an array holds 0-3 items (count byte 0..6, then the 0 end).
  AvroSchema rec(R"({"type":"record","name":"R","fields":[
      {"name":"u","type":["null","boolean"]},
      {"name":"f","type":{"type":"fixed","name":"F","size":3}},
      {"name":"a","type":{"type":"array","items":"boolean"}}]})");
  bool saw_empty = false, saw_full = false;
  for (const auto& v : rec.random_values(200, rng)) {
    ASSERT_GE(v.size(), 6u);
    EXPECT_EQ(v[0], 0x02);
    int n = static_cast<unsigned char>(v[5]) / 2;
    EXPECT_LE(n, 3);
    saw_empty |= n == 0;
    saw_full |= n == 3;
    EXPECT_EQ(v.size(), n == 0 ? 6u : 7u + static_cast<size_t>(n));
  }
  EXPECT_TRUE(saw_empty && saw_full);
  // float/double are drawn from [0, 1).
  for (const auto& v : AvroSchema(R"("double")").random_values(100, rng)) {
    double d;
    ASSERT_EQ(v.size(), 8u);
    std::memcpy(&d, v.data(), 8);  // Avro doubles are little-endian, as is this machine
    EXPECT_GE(d, 0.0);
    EXPECT_LT(d, 1.0);
  }
  // Map keys are k0, k1, ...
  for (const auto& v : AvroSchema(R"({"type":"map","values":"null"})").random_values(50, rng)) {
    int n = static_cast<unsigned char>(v[0]) / 2;
    std::string expect = v.substr(0, 1);
    for (int i = 0; i < n; ++i) expect += bytes({0x04, 'k', '0' + i});
    if (n > 0) expect += bytes({0x00});
    EXPECT_EQ(v, expect);
  }
}

TEST(PerfAvro, ConfluentFraming) {
  EXPECT_EQ(confluent_frame(258, "x"), bytes({0x00, 0x00, 0x00, 0x01, 0x02, 'x'}));
}

TEST(PerfAvro, SchemaRegistrySettingsComeFromTheProducerConfigs) {
  EXPECT_THROW(schema_registry_config({}), SchemaRegistryError);
  auto c = schema_registry_config({{"schema.registry.url", "http://a:8081/,http://b:8081"},
                                   {"basic.auth.credentials.source", "USER_INFO"},
                                   {"basic.auth.user.info", "u:p"}});
  EXPECT_EQ(c.url, "http://a:8081");
  EXPECT_EQ(c.user_info, "u:p");
  EXPECT_THROW(schema_registry_config({{"schema.registry.url", "http://a"},
                                       {"basic.auth.credentials.source", "SASL_INHERIT"}}),
               SchemaRegistryError);
}

}  // namespace
}  // namespace shale::perf

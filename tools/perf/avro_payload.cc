#include "perf/avro_payload.h"

#include <avro.h>
#include <jansson.h>

#include <fstream>
#include <memory>

namespace shale::perf {
namespace {

avro_schema_t as_schema(void* p) { return static_cast<avro_schema_t>(p); }

[[noreturn]] void fail(const std::string& what) { throw AvroError(what); }

void check(int rc, const char* what) {
  if (rc != 0) fail(std::string(what) + ": " + avro_strerror());
}

// An avro-c generic value of a schema, released on scope exit.
class Value {
 public:
  explicit Value(avro_schema_t schema) : iface_(avro_generic_class_from_schema(schema)) {
    if (iface_ == nullptr) fail(std::string("Avro schema: ") + avro_strerror());
    if (avro_generic_value_new(iface_, &value_) != 0) {
      avro_value_iface_decref(iface_);
      fail(std::string("Avro value: ") + avro_strerror());
    }
  }
  ~Value() {
    avro_value_decref(&value_);
    avro_value_iface_decref(iface_);
  }
  Value(const Value&) = delete;
  Value& operator=(const Value&) = delete;
  avro_value_t* get() { return &value_; }

  std::string encode() {
    size_t size = 0;
    check(avro_value_sizeof(&value_, &size), "Avro encoding");
    std::string out(size, '\0');
    avro_writer_t w = avro_writer_memory(out.data(), static_cast<int64_t>(size));
    int rc = avro_value_write(w, &value_);
    avro_writer_free(w);
    check(rc, "Avro encoding");
    return out;
  }

 private:
  avro_value_iface_t* iface_;
  avro_value_t value_;
};

// The name a union branch has in Avro JSON: the full name of a named type, else the type name.
std::string branch_name(avro_schema_t s, bool full) {
  switch (avro_typeof(s)) {
    case AVRO_NULL:
      return "null";
    case AVRO_BOOLEAN:
      return "boolean";
    case AVRO_INT32:
      return "int";
    case AVRO_INT64:
      return "long";
    case AVRO_FLOAT:
      return "float";
    case AVRO_DOUBLE:
      return "double";
    case AVRO_BYTES:
      return "bytes";
    case AVRO_STRING:
      return "string";
    case AVRO_ARRAY:
      return "array";
    case AVRO_MAP:
      return "map";
    case AVRO_UNION:
      return "union";
    default: {
      std::string name = avro_schema_type_name(s);
      const char* ns = avro_schema_namespace(s);
      return full && ns != nullptr && *ns != '\0' ? std::string(ns) + "." + name : name;
    }
  }
}

// --- random values (PerfCommand.schemaRandomPayloads) ---

class RandomFiller {
 public:
  explicit RandomFiller(std::mt19937_64& rng) : rng_(rng) {}

  void fill(avro_value_t* v, bool record_field) {
    avro_schema_t s = avro_value_get_schema(v);
    switch (avro_value_get_type(v)) {
      case AVRO_NULL:
        check(avro_value_set_null(v), "Avro value");
        break;
      case AVRO_BOOLEAN:
        check(avro_value_set_boolean(v, static_cast<int>(rng_() & 1)), "Avro value");
        break;
      case AVRO_INT32:
        check(avro_value_set_int(v, static_cast<int32_t>(rng_())), "Avro value");
        break;
      case AVRO_INT64:
        check(avro_value_set_long(v, static_cast<int64_t>(rng_())), "Avro value");
        break;
      case AVRO_FLOAT:
        check(avro_value_set_float(v, std::uniform_real_distribution<float>(0, 1)(rng_)),
              "Avro value");
        break;
      case AVRO_DOUBLE:
        check(avro_value_set_double(v, std::uniform_real_distribution<double>(0, 1)(rng_)),
              "Avro value");
        break;
      case AVRO_BYTES: {
        std::string b = bytes(between(1, 16));
        check(avro_value_set_bytes(v, b.data(), b.size()), "Avro value");
        break;
      }
      case AVRO_FIXED: {
        std::string b = bytes(static_cast<int>(avro_schema_fixed_size(s)));
        check(avro_value_set_fixed(v, b.data(), b.size()), "Avro value");
        break;
      }
      case AVRO_STRING: {
        std::string t = alnum(between(3, 15));
        check(avro_value_set_string_len(v, t.c_str(), t.size() + 1), "Avro value");
        break;
      }
      case AVRO_ENUM:
        check(avro_value_set_enum(v, between(0, avro_schema_enum_number_of_symbols(s) - 1)),
              "Avro value");
        break;
      case AVRO_RECORD: {
        size_t n = 0;
        check(avro_value_get_size(v, &n), "Avro value");
        for (size_t i = 0; i < n; ++i) {
          avro_value_t field;
          check(avro_value_get_by_index(v, i, &field, nullptr), "Avro value");
          fill(&field, true);
        }
        break;
      }
      case AVRO_ARRAY: {
        int n = between(0, 3);
        for (int i = 0; i < n; ++i) {
          avro_value_t e;
          check(avro_value_append(v, &e, nullptr), "Avro value");
          fill(&e, false);
        }
        break;
      }
      case AVRO_MAP: {
        int n = between(0, 3);
        for (int i = 0; i < n; ++i) {
          avro_value_t e;
          std::string key = "k" + std::to_string(i);
          check(avro_value_add(v, key.c_str(), &e, nullptr, nullptr), "Avro value");
          fill(&e, false);
        }
        break;
      }
      case AVRO_UNION: {
        std::vector<int> non_null;
        for (size_t i = 0; i < avro_schema_union_size(s); ++i) {
          if (avro_typeof(avro_schema_union_branch(s, static_cast<int>(i))) != AVRO_NULL) {
            non_null.push_back(static_cast<int>(i));
          }
        }
        int pick =
            non_null.empty() ? 0
            : record_field
                ? non_null.front()
                : non_null[static_cast<size_t>(between(0, static_cast<int>(non_null.size()) - 1))];
        avro_value_t branch;
        check(avro_value_set_branch(v, pick, &branch), "Avro value");
        fill(&branch, false);
        break;
      }
      default:
        fail("Avro schema: unsupported type");
    }
  }

 private:
  int between(int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng_); }
  std::string bytes(int n) {
    std::string b(static_cast<size_t>(n), '\0');
    for (auto& c : b) c = static_cast<char>(rng_() & 0xff);
    return b;
  }
  std::string alnum(int n) {
    static const char* kAlnum = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
    std::string t(static_cast<size_t>(n), 'a');
    for (auto& c : t) c = kAlnum[between(0, 61)];
    return t;
  }
  std::mt19937_64& rng_;
};

// --- Avro JSON (what org.apache.avro.io.JsonDecoder reads) ---

struct JsonDeleter {
  void operator()(json_t* j) const { json_decref(j); }
};

// Avro JSON carries bytes and fixed as strings whose code points are the byte values.
std::string latin1_bytes(const char* utf8, size_t len, const std::string& path) {
  std::string out;
  for (size_t i = 0; i < len;) {
    auto c = static_cast<unsigned char>(utf8[i]);
    if (c < 0x80) {
      out.push_back(static_cast<char>(c));
      i += 1;
    } else if ((c & 0xe0) == 0xc0 && i + 1 < len) {
      unsigned cp = ((c & 0x1fu) << 6) | (static_cast<unsigned char>(utf8[i + 1]) & 0x3fu);
      if (cp > 0xff) fail(path + ": bytes must be code points 0-255");
      out.push_back(static_cast<char>(cp));
      i += 2;
    } else {
      fail(path + ": bytes must be code points 0-255");
    }
  }
  return out;
}

void from_json(avro_value_t* v, json_t* j, const std::string& path) {
  avro_schema_t s = avro_value_get_schema(v);
  auto expect = [&](bool ok, const char* what) {
    if (!ok) fail(path + ": expected " + what);
  };
  switch (avro_value_get_type(v)) {
    case AVRO_NULL:
      expect(json_is_null(j), "null");
      check(avro_value_set_null(v), "Avro value");
      break;
    case AVRO_BOOLEAN:
      expect(json_is_boolean(j), "a boolean");
      check(avro_value_set_boolean(v, json_is_true(j) ? 1 : 0), "Avro value");
      break;
    case AVRO_INT32: {
      expect(json_is_integer(j), "an int");
      json_int_t n = json_integer_value(j);
      expect(n >= INT32_MIN && n <= INT32_MAX, "an int in 32 bits");
      check(avro_value_set_int(v, static_cast<int32_t>(n)), "Avro value");
      break;
    }
    case AVRO_INT64:
      expect(json_is_integer(j), "a long");
      check(avro_value_set_long(v, static_cast<int64_t>(json_integer_value(j))), "Avro value");
      break;
    case AVRO_FLOAT:
      expect(json_is_number(j), "a number");
      check(avro_value_set_float(v, static_cast<float>(json_number_value(j))), "Avro value");
      break;
    case AVRO_DOUBLE:
      expect(json_is_number(j), "a number");
      check(avro_value_set_double(v, json_number_value(j)), "Avro value");
      break;
    case AVRO_STRING:
      expect(json_is_string(j), "a string");
      check(avro_value_set_string_len(v, json_string_value(j), json_string_length(j) + 1),
            "Avro value");
      break;
    case AVRO_BYTES: {
      expect(json_is_string(j), "a string of bytes");
      std::string b = latin1_bytes(json_string_value(j), json_string_length(j), path);
      check(avro_value_set_bytes(v, b.data(), b.size()), "Avro value");
      break;
    }
    case AVRO_FIXED: {
      expect(json_is_string(j), "a string of bytes");
      std::string b = latin1_bytes(json_string_value(j), json_string_length(j), path);
      expect(static_cast<int64_t>(b.size()) == avro_schema_fixed_size(s),
             ("exactly " + std::to_string(avro_schema_fixed_size(s)) + " bytes").c_str());
      check(avro_value_set_fixed(v, b.data(), b.size()), "Avro value");
      break;
    }
    case AVRO_ENUM: {
      expect(json_is_string(j), "an enum symbol");
      int i = avro_schema_enum_get_by_name(s, json_string_value(j));
      expect(i >= 0, "a symbol of the enum");
      check(avro_value_set_enum(v, i), "Avro value");
      break;
    }
    case AVRO_RECORD: {
      expect(json_is_object(j), "an object (record)");
      size_t n = 0;
      check(avro_value_get_size(v, &n), "Avro value");
      for (size_t i = 0; i < n; ++i) {
        avro_value_t field;
        const char* name = nullptr;
        check(avro_value_get_by_index(v, i, &field, &name), "Avro value");
        json_t* fj = json_object_get(j, name);
        if (fj == nullptr) fail(path + ": missing field '" + name + "'");
        from_json(&field, fj, path + "." + name);
      }
      break;
    }
    case AVRO_ARRAY: {
      expect(json_is_array(j), "an array");
      for (size_t i = 0; i < json_array_size(j); ++i) {
        avro_value_t e;
        check(avro_value_append(v, &e, nullptr), "Avro value");
        from_json(&e, json_array_get(j, i), path + "[" + std::to_string(i) + "]");
      }
      break;
    }
    case AVRO_MAP: {
      expect(json_is_object(j), "an object (map)");
      const char* key;
      json_t* val;
      json_object_foreach(j, key, val) {
        avro_value_t e;
        check(avro_value_add(v, key, &e, nullptr, nullptr), "Avro value");
        from_json(&e, val, path + "." + key);
      }
      break;
    }
    case AVRO_UNION: {
      avro_value_t branch;
      int n = static_cast<int>(avro_schema_union_size(s));
      if (json_is_null(j)) {
        for (int i = 0; i < n; ++i) {
          if (avro_typeof(avro_schema_union_branch(s, i)) == AVRO_NULL) {
            check(avro_value_set_branch(v, i, &branch), "Avro value");
            check(avro_value_set_null(&branch), "Avro value");
            return;
          }
        }
        fail(path + ": null is not a branch of the union");
      }
      expect(json_is_object(j) && json_object_size(j) == 1, "a union as {\"type\": value} or null");
      const char* key = json_object_iter_key(json_object_iter(j));
      for (int i = 0; i < n; ++i) {
        avro_schema_t b = avro_schema_union_branch(s, i);
        if (branch_name(b, true) == key || branch_name(b, false) == key) {
          check(avro_value_set_branch(v, i, &branch), "Avro value");
          from_json(&branch, json_object_get(j, key), path + "<" + key + ">");
          return;
        }
      }
      fail(path + ": '" + key + "' is not a branch of the union");
    }
    default:
      fail(path + ": unsupported Avro type");
  }
}

}  // namespace

AvroSchema::AvroSchema(const std::string& json) : schema_(nullptr) {
  avro_schema_t s = nullptr;
  if (avro_schema_from_json_length(json.data(), json.size(), &s) != 0) {
    fail(std::string("Invalid --value-schema: ") + avro_strerror());
  }
  schema_ = s;
}

AvroSchema::~AvroSchema() { avro_schema_decref(as_schema(schema_)); }

std::vector<std::string> AvroSchema::random_values(int count, std::mt19937_64& rng) const {
  std::vector<std::string> out;
  out.reserve(static_cast<size_t>(count));
  RandomFiller filler(rng);
  for (int i = 0; i < count; ++i) {
    Value v(as_schema(schema_));
    filler.fill(v.get(), false);
    out.push_back(v.encode());
  }
  return out;
}

std::string AvroSchema::value_from_json(const std::string& text) const {
  json_error_t err;
  std::unique_ptr<json_t, JsonDeleter> j(
      json_loadb(text.data(), text.size(), JSON_DECODE_ANY, &err));
  if (!j) fail(std::string("invalid JSON: ") + err.text);
  Value v(as_schema(schema_));
  from_json(v.get(), j.get(), "value");
  return v.encode();
}

std::vector<std::string> AvroSchema::values_from_file(const std::string& path) const {
  std::ifstream in(path);
  if (!in) fail("Cannot read --values-file " + path);
  std::vector<std::string> out;
  std::string line;
  for (int n = 1; std::getline(in, line); ++n) {
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    try {
      out.push_back(value_from_json(line));
    } catch (const AvroError& e) {
      fail(path + ":" + std::to_string(n) + ": " + e.what());
    }
  }
  if (out.empty()) fail("--values-file " + path + " holds no values");
  return out;
}

std::string confluent_frame(int32_t schema_id, const std::string& body) {
  std::string out(5, '\0');
  auto id = static_cast<uint32_t>(schema_id);
  out[1] = static_cast<char>(id >> 24);
  out[2] = static_cast<char>(id >> 16);
  out[3] = static_cast<char>(id >> 8);
  out[4] = static_cast<char>(id);
  return out + body;
}

}  // namespace shale::perf

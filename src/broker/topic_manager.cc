#include "broker/topic_manager.h"

#include <charconv>
#include <random>
#include <sstream>

#include <spdlog/spdlog.h>

#include "meta/meta_store.h"

namespace shale::broker {
namespace {

constexpr size_t kMaxTopicNameLength = 249;

// Record encoding: one "field value" per line; values percent-encode '%', '\n' and '\r'.
std::string escape(std::string_view s) {
  std::string out;
  for (char c : s) {
    if (c == '%' || c == '\n' || c == '\r') {
      char buf[4];
      std::snprintf(buf, sizeof buf, "%%%02X", static_cast<unsigned char>(c));
      out += buf;
    } else {
      out += c;
    }
  }
  return out;
}

std::string unescape(std::string_view s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '%' && i + 2 < s.size()) {
      int v = 0;
      std::from_chars(s.data() + i + 1, s.data() + i + 3, v, 16);
      out += static_cast<char>(v);
      i += 2;
    } else {
      out += s[i];
    }
  }
  return out;
}

}  // namespace

std::string topic_id_hex(const protocol::Uuid& u) {
  std::string out;
  char buf[3];
  for (uint8_t b : u.bytes) {
    std::snprintf(buf, sizeof buf, "%02x", b);
    out += buf;
  }
  return out;
}

bool parse_topic_id_hex(std::string_view s, protocol::Uuid& u) {
  if (s.size() != 32) return false;
  for (size_t i = 0; i < 16; ++i) {
    unsigned v = 0;
    auto r = std::from_chars(s.data() + 2 * i, s.data() + 2 * i + 2, v, 16);
    if (r.ec != std::errc()) return false;
    u.bytes[i] = static_cast<uint8_t>(v);
  }
  return true;
}

namespace {

struct StoredTopic {
  protocol::Uuid id;
  std::map<std::string, std::string> configs;
  std::vector<int64_t> streams;
};

std::string encode_topic(const Topic& t) {
  std::string out = "version 1\nid " + topic_id_hex(t.id) + "\n";
  for (const auto& [k, v] : t.configs) out += "config " + escape(k) + " " + escape(v) + "\n";
  for (const auto& p : t.partitions) out += "stream " + std::to_string(p->stream_id()) + "\n";
  return out;
}

Result<StoredTopic> decode_topic(std::string_view text) {
  StoredTopic st;
  std::istringstream in{std::string(text)};
  std::string line;
  bool have_id = false;
  while (std::getline(in, line)) {
    auto sp = line.find(' ');
    if (sp == std::string::npos) continue;
    std::string field = line.substr(0, sp);
    std::string rest = line.substr(sp + 1);
    if (field == "id") {
      have_id = parse_topic_id_hex(rest, st.id);
    } else if (field == "config") {
      auto sp2 = rest.find(' ');
      if (sp2 == std::string::npos) continue;
      st.configs[unescape(rest.substr(0, sp2))] = unescape(rest.substr(sp2 + 1));
    } else if (field == "stream") {
      int64_t id = 0;
      auto r = std::from_chars(rest.data(), rest.data() + rest.size(), id);
      if (r.ec != std::errc())
        return Error::make(Errc::kCorruption, "bad stream id in topic record");
      st.streams.push_back(id);
    }
  }
  if (!have_id) return Error::make(Errc::kCorruption, "topic record without an id");
  return st;
}

}  // namespace

Status validate_topic_name(std::string_view name) {
  auto bad = [](std::string m) { return Error::make(Errc::kInvalidArgument, std::move(m)); };
  if (name.empty()) return bad("Topic name is illegal, it can't be empty");
  if (name == "." || name == "..") return bad("Topic name cannot be \".\" or \"..\"");
  if (name.size() > kMaxTopicNameLength) {
    return bad("Topic name is illegal, it can't be longer than 249 characters, topic name: " +
               std::string(name));
  }
  for (char c : name) {
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '.' || c == '_' || c == '-';
    if (!ok) {
      return bad("Topic name \"" + std::string(name) +
                 "\" is illegal, it contains a character other than ASCII alphanumerics, '.', "
                 "'_' and '-'");
    }
  }
  return ok_status();
}

std::string topic_collision_key(std::string_view name) {
  std::string k(name);
  for (char& c : k) {
    if (c == '.') c = '_';
  }
  return k;
}

protocol::Uuid random_topic_id() {
  static thread_local std::mt19937_64 rng{std::random_device{}()};
  while (true) {
    protocol::Uuid u;
    uint64_t a = rng(), b = rng();
    for (int i = 0; i < 8; ++i) {
      u.bytes[i] = static_cast<uint8_t>(a >> (56 - 8 * i));
      u.bytes[8 + i] = static_cast<uint8_t>(b >> (56 - 8 * i));
    }
    u.bytes[6] = static_cast<uint8_t>((u.bytes[6] & 0x0f) | 0x40);
    u.bytes[8] = static_cast<uint8_t>((u.bytes[8] & 0x3f) | 0x80);
    protocol::Uuid one;
    one.bytes[15] = 1;
    if (u.is_zero() || u == one || u.to_base64().starts_with("-")) continue;
    return u;
  }
}

TopicManager::TopicManager(storage::Engine* engine, meta::MetaStore* meta, std::string ns,
                           BrokerTopicDefaults defaults)
    : engine_(engine), meta_(meta), ns_(std::move(ns)), defaults_(std::move(defaults)) {}

std::string TopicManager::key_for(std::string_view name) const {
  return ns_ + "/topics/" + std::string(name);
}

Status TopicManager::load() {
  std::lock_guard admin(admin_mu_);
  auto kvs = meta_->prefix(ns_ + "/topics/");
  if (!kvs.ok()) return std::move(kvs).error();
  const size_t prefix_len = ns_.size() + 8;
  for (const auto& kv : *kvs) {
    auto st = decode_topic(kv.value);
    if (!st.ok()) return std::move(st).error();
    auto t = std::make_shared<Topic>();
    t->name = kv.key.substr(prefix_len);
    t->id = st->id;
    t->configs = st->configs;
    t->settings = TopicSettings::resolve(t->configs, defaults_);
    for (size_t i = 0; i < st->streams.size(); ++i) {
      auto p = std::make_shared<Partition>(t->name, static_cast<int32_t>(i), st->streams[i]);
      if (!cluster_mode()) SHALE_TRY(p->open(*engine_));
      t->partitions.push_back(std::move(p));
    }
    mod_revisions_[t->name] = kv.mod_revision;
    publish(std::move(t));
  }
  spdlog::info("loaded {} topics", kvs->size());
  return ok_status();
}

BrokerTopicDefaults TopicManager::defaults() const {
  std::shared_lock lock(mu_);
  return defaults_;
}

namespace {

// "key=value" lines; keys and values are validated config names and numbers.
std::string encode_config_map(const std::map<std::string, std::string>& m) {
  std::string out;
  for (const auto& [k, v] : m) out += k + "=" + v + "\n";
  return out;
}

std::map<std::string, std::string> decode_config_map(const std::string& s) {
  std::map<std::string, std::string> out;
  size_t pos = 0;
  while (pos < s.size()) {
    size_t nl = s.find('\n', pos);
    if (nl == std::string::npos) nl = s.size();
    const std::string line = s.substr(pos, nl - pos);
    if (auto eq = line.find('='); eq != std::string::npos) {
      out[line.substr(0, eq)] = line.substr(eq + 1);
    }
    pos = nl + 1;
  }
  return out;
}

}  // namespace

Status TopicManager::load_dynamic_configs(const std::string& node_key) {
  std::lock_guard admin(admin_mu_);
  auto dflt = meta_->get(ns_ + "/broker-configs/default");
  if (!dflt.ok()) return std::move(dflt).error();
  auto mine = meta_->get(ns_ + "/broker-configs/" + node_key);
  if (!mine.ok()) return std::move(mine).error();
  std::unique_lock lock(mu_);
  if (dflt->has_value()) defaults_.dynamic_default = decode_config_map((*dflt)->value);
  if (mine->has_value()) defaults_.dynamic_broker = decode_config_map((*mine)->value);
  return ok_status();
}

Status TopicManager::set_dynamic_configs(bool per_broker, const std::string& node_key,
                                         std::map<std::string, std::string> configs) {
  std::lock_guard admin(admin_mu_);
  const std::string key = ns_ + "/broker-configs/" + (per_broker ? node_key : "default");
  SHALE_TRY(meta_->put(key, encode_config_map(configs)));
  BrokerTopicDefaults d = defaults();
  (per_broker ? d.dynamic_broker : d.dynamic_default) = std::move(configs);
  std::vector<TopicPtr> topics = list();
  std::unique_lock lock(mu_);
  defaults_ = d;
  for (const auto& old : topics) {
    auto t = std::make_shared<Topic>(*old);
    t->settings = TopicSettings::resolve(t->configs, d);
    by_name_[t->name] = std::move(t);
  }
  return ok_status();
}

void TopicManager::publish(TopicPtr t) {
  std::unique_lock lock(mu_);
  by_name_[t->name] = std::move(t);
}

TopicPtr TopicManager::find(std::string_view name) const {
  std::shared_lock lock(mu_);
  auto it = by_name_.find(name);
  return it == by_name_.end() ? nullptr : it->second;
}

TopicPtr TopicManager::find(const protocol::Uuid& id) const {
  std::shared_lock lock(mu_);
  for (const auto& [n, t] : by_name_) {
    if (t->id == id) return t;
  }
  return nullptr;
}

std::vector<TopicPtr> TopicManager::list() const {
  std::shared_lock lock(mu_);
  std::vector<TopicPtr> out;
  out.reserve(by_name_.size());
  for (const auto& [n, t] : by_name_) out.push_back(t);
  return out;
}

std::shared_ptr<Partition> TopicManager::partition(std::string_view topic, int32_t index) const {
  TopicPtr t = find(topic);
  if (!t || index < 0 || static_cast<size_t>(index) >= t->partitions.size()) return nullptr;
  return t->partitions[static_cast<size_t>(index)];
}

Status TopicManager::persist(const Topic& t, int64_t expected_mod_revision) {
  meta::Txn txn;
  txn.compares.push_back({key_for(t.name), expected_mod_revision});
  txn.ops.push_back(meta::Op::put(key_for(t.name), encode_topic(t)));
  auto rev = meta_->commit(txn);
  if (!rev.ok()) return std::move(rev).error();
  mod_revisions_[t.name] = *rev;
  return ok_status();
}

Result<TopicPtr> TopicManager::create(const std::string& name, int32_t partitions,
                                      const std::map<std::string, std::string>& configs) {
  SHALE_TRY(validate_topic_name(name));
  std::lock_guard admin(admin_mu_);
  if (find(name)) {
    return Error::make(Errc::kAlreadyExists, "Topic '" + name + "' already exists.");
  }
  const std::string ck = topic_collision_key(name);
  for (const auto& t : list()) {
    if (topic_collision_key(t->name) == ck) {
      return Error::make(Errc::kInvalidArgument,
                         "Topic '" + name + "' collides with existing topic: " + t->name);
    }
  }
  auto t = std::make_shared<Topic>();
  t->name = name;
  t->id = random_topic_id();
  t->configs = configs;
  t->settings = TopicSettings::resolve(configs, defaults_);
  for (int32_t i = 0; i < partitions; ++i) {
    auto sid = engine_->create_stream(
        storage::StreamOptions{{{"topic", name}, {"partition", std::to_string(i)}}});
    if (!sid.ok()) return std::move(sid).error();
    t->partitions.push_back(std::make_shared<Partition>(name, i, *sid));
  }
  // The record is written before the streams are opened: a crash in between leaves a topic
  // whose streams open at the next load, never an unreferenced open stream.
  SHALE_TRY(persist(*t, 0));
  if (cluster_mode()) {
    publish(t);
    SHALE_TRY(placed_(*t, 0, partitions));
    return TopicPtr(t);
  }
  for (auto& p : t->partitions) SHALE_TRY(p->open(*engine_));
  publish(t);
  return TopicPtr(t);
}

Status TopicManager::remove(const std::string& name) {
  std::lock_guard admin(admin_mu_);
  TopicPtr t = find(name);
  if (!t) return Error::make(Errc::kNotFound, "This server does not host this topic-partition.");
  meta::Txn txn;
  txn.ops.push_back(meta::Op::del(key_for(name)));
  auto rev = meta_->commit(txn);
  if (!rev.ok()) return std::move(rev).error();
  {
    std::unique_lock lock(mu_);
    by_name_.erase(name);
  }
  mod_revisions_.erase(name);
  if (removed_) removed_(*t);
  for (const auto& p : t->partitions) {
    p->mark_deleted();
    auto st = engine_->delete_stream(p->stream_id());
    if (!st.ok()) {
      spdlog::warn("topic {}: deleting stream {} failed: {}", name, p->stream_id(),
                   st.error().to_string());
    }
  }
  return ok_status();
}

Result<TopicPtr> TopicManager::add_partitions(const std::string& name, int32_t total) {
  std::lock_guard admin(admin_mu_);
  TopicPtr old = find(name);
  if (!old) return Error::make(Errc::kNotFound, "The topic '" + name + "' does not exist.");
  auto t = std::make_shared<Topic>(*old);
  for (auto i = static_cast<int32_t>(old->partitions.size()); i < total; ++i) {
    auto sid = engine_->create_stream(
        storage::StreamOptions{{{"topic", name}, {"partition", std::to_string(i)}}});
    if (!sid.ok()) return std::move(sid).error();
    t->partitions.push_back(std::make_shared<Partition>(name, i, *sid));
  }
  SHALE_TRY(persist(*t, mod_revisions_[name]));
  if (cluster_mode()) {
    publish(t);
    const auto first = static_cast<int32_t>(old->partitions.size());
    SHALE_TRY(placed_(*t, first, total - first));
    return TopicPtr(t);
  }
  for (size_t i = old->partitions.size(); i < t->partitions.size(); ++i) {
    SHALE_TRY(t->partitions[i]->open(*engine_));
  }
  publish(t);
  return TopicPtr(t);
}

Result<TopicPtr> TopicManager::set_configs(const std::string& name,
                                           const std::map<std::string, std::string>& configs) {
  std::lock_guard admin(admin_mu_);
  TopicPtr old = find(name);
  if (!old) return Error::make(Errc::kNotFound, "The topic '" + name + "' does not exist.");
  auto t = std::make_shared<Topic>(*old);
  t->configs = configs;
  t->settings = TopicSettings::resolve(configs, defaults_);
  SHALE_TRY(persist(*t, mod_revisions_[name]));
  publish(t);
  return TopicPtr(t);
}

void TopicManager::set_cluster_mode(PlacedHook placed, RemovedHook removed) {
  placed_ = std::move(placed);
  removed_ = std::move(removed);
}

Result<TopicPtr> TopicManager::refresh(const std::string& name) {
  auto kv = meta_->get(key_for(name));
  if (!kv.ok()) return std::move(kv).error();
  std::lock_guard admin(admin_mu_);
  TopicPtr old = find(name);
  if (!kv->has_value()) {
    if (old) {
      {
        std::unique_lock lock(mu_);
        by_name_.erase(name);
      }
      mod_revisions_.erase(name);
      for (const auto& p : old->partitions) {
        p->stop_serving();
        p->mark_deleted();
      }
      spdlog::info("topic {} was deleted on another broker", name);
    }
    return TopicPtr();
  }
  if (old && mod_revisions_[name] >= (*kv)->mod_revision) return old;
  auto st = decode_topic((*kv)->value);
  if (!st.ok()) return std::move(st).error();
  auto t = std::make_shared<Topic>();
  t->name = name;
  t->id = st->id;
  t->configs = st->configs;
  t->settings = TopicSettings::resolve(t->configs, defaults());
  const bool same = old && old->id == st->id;
  for (size_t i = 0; i < st->streams.size(); ++i) {
    if (same && i < old->partitions.size() && old->partitions[i]->stream_id() == st->streams[i]) {
      t->partitions.push_back(old->partitions[i]);
    } else {
      t->partitions.push_back(
          std::make_shared<Partition>(name, static_cast<int32_t>(i), st->streams[i]));
    }
  }
  if (old && !same) {
    for (const auto& p : old->partitions) {
      p->stop_serving();
      p->mark_deleted();
    }
  }
  mod_revisions_[name] = (*kv)->mod_revision;
  publish(t);
  return TopicPtr(t);
}

bool TopicManager::replace_partition(const protocol::Uuid& topic_id, std::shared_ptr<Partition> p) {
  std::lock_guard admin(admin_mu_);  // admin changes copy the published topic: serialise
  std::unique_lock lock(mu_);
  auto it = by_name_.find(p->topic());
  if (it == by_name_.end() || it->second->id != topic_id) return false;
  const auto idx = static_cast<size_t>(p->index());
  if (idx >= it->second->partitions.size() ||
      it->second->partitions[idx]->stream_id() != p->stream_id())
    return false;
  auto t = std::make_shared<Topic>(*it->second);
  t->partitions[idx] = std::move(p);
  it->second = std::move(t);
  return true;
}

}  // namespace shale::broker

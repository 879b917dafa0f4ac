// MetaGroupStore: GroupStore over the MetaStore interface (meta/meta_store.h). One key per
// group metadata record and one key per committed partition offset (layout in record_codec.h
// and docs/groups.md); an OffsetCommit is one MetaStore transaction, so it is atomic and
// durable when commit() returns.
//
// Threading: as MetaStore: thread-safe, blocking; never call from an event-loop thread.
// The MetaStore must outlive this object.
#pragma once

#include <string>

#include "group/group_store.h"
#include "meta/meta_store.h"

namespace shale::group {

class MetaGroupStore : public GroupStore {
 public:
  // `root` prefixes every key this store writes; it must end with '/'.
  explicit MetaGroupStore(meta::MetaStore* meta, std::string root = "groups/");

  Status save_group(const GroupRecord& group) override;
  Status save_offsets(std::string_view group_id, const std::vector<OffsetRecord>& commits,
                      const std::vector<TopicPartition>& deletes) override;
  Status delete_group(std::string_view group_id) override;
  Result<std::vector<StoredGroup>> load_all() override;

 private:
  meta::MetaStore* meta_;
  std::string root_;
};

}  // namespace shale::group

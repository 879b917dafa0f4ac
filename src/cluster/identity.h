// Cluster identity: the first broker of a cluster records, at <ns>/identity, the cluster id and
// the object store its data goes to; every later broker compares its own against it and refuses
// to start on a mismatch (a broker pointed at another cluster's metadata, or at another object
// store, would otherwise reference objects the others cannot read).
//
// Threads: blocks on the store; call at start-up.
#pragma once

#include <cstdint>
#include <string>

#include "cluster/model.h"
#include "meta/meta_store.h"

namespace shale::cluster {

// Creates the identity record if absent; otherwise kInvalidArgument naming both values when the
// cluster id, the object store or the number of group coordinator shards (when > 0; Kafka's
// offsets.topic.num.partitions) differs from the recorded one.
Status check_identity(meta::MetaStore* store, const Keys& keys, const std::string& cluster_id,
                      const std::string& object_store, int32_t group_shards = 0);

}  // namespace shale::cluster

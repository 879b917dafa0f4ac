// The Kafka API handlers of the data path and the admin APIs. Each takes the decoded request
// and returns the response to encode; the dispatcher owns decoding, encoding and routing, and
// advertises an API in ApiVersions only when it has a handler here (register_broker_handlers).
//
// Threads: every handler is a coroutine started on the connection's shard. Blocking work runs
// on Broker::blocking(); engine callbacks resume the coroutine on its shard. Requests are taken
// by value (moved in) because handlers keep slices of them (record batches) past suspension.
// Errors: each handler maps internal errors to Kafka error codes in one place.
#pragma once

#include <asio/awaitable.hpp>

#include "broker/broker.h"
#include "net/frame_handler.h"
#include "protocol/generated/alter_configs_request.h"
#include "protocol/generated/alter_configs_response.h"
#include "protocol/generated/alter_partition_reassignments_request.h"
#include "protocol/generated/alter_partition_reassignments_response.h"
#include "protocol/generated/create_partitions_request.h"
#include "protocol/generated/create_partitions_response.h"
#include "protocol/generated/create_topics_request.h"
#include "protocol/generated/create_topics_response.h"
#include "protocol/generated/delete_records_request.h"
#include "protocol/generated/delete_records_response.h"
#include "protocol/generated/delete_topics_request.h"
#include "protocol/generated/delete_topics_response.h"
#include "protocol/generated/describe_cluster_request.h"
#include "protocol/generated/describe_cluster_response.h"
#include "protocol/generated/describe_configs_request.h"
#include "protocol/generated/describe_configs_response.h"
#include "protocol/generated/describe_log_dirs_request.h"
#include "protocol/generated/describe_log_dirs_response.h"
#include "protocol/generated/describe_topic_partitions_request.h"
#include "protocol/generated/describe_topic_partitions_response.h"
#include "protocol/generated/elect_leaders_request.h"
#include "protocol/generated/elect_leaders_response.h"
#include "protocol/generated/fetch_request.h"
#include "protocol/generated/fetch_response.h"
#include "protocol/generated/get_telemetry_subscriptions_request.h"
#include "protocol/generated/get_telemetry_subscriptions_response.h"
#include "protocol/generated/incremental_alter_configs_request.h"
#include "protocol/generated/incremental_alter_configs_response.h"
#include "protocol/generated/init_producer_id_request.h"
#include "protocol/generated/init_producer_id_response.h"
#include "protocol/generated/list_offsets_request.h"
#include "protocol/generated/list_offsets_response.h"
#include "protocol/generated/list_partition_reassignments_request.h"
#include "protocol/generated/list_partition_reassignments_response.h"
#include "protocol/generated/metadata_request.h"
#include "protocol/generated/metadata_response.h"
#include "protocol/generated/offset_for_leader_epoch_request.h"
#include "protocol/generated/offset_for_leader_epoch_response.h"
#include "protocol/generated/produce_request.h"
#include "protocol/generated/produce_response.h"
#include "protocol/generated/push_telemetry_request.h"
#include "protocol/generated/push_telemetry_response.h"

namespace shale::broker {

// Produce v3+. For acks=0 the caller sends no response (the returned one is discarded), but
// the appends still happen. `order`, when given, is released once every append has been
// submitted (offsets assigned, in the WAL's queue): the connection's next request may then
// start while this one waits for durability, so pipelined produces still share a WAL write.
asio::awaitable<protocol::ProduceResponse> handle_produce(Broker& b, int16_t version,
                                                          protocol::ProduceRequest req,
                                                          net::RequestOrder* order = nullptr);
// DescribeTopicPartitions (KIP-966), paged by response_partition_limit and a cursor.
asio::awaitable<protocol::DescribeTopicPartitionsResponse> handle_describe_topic_partitions(
    Broker& b, int16_t version, protocol::DescribeTopicPartitionsRequest req);
// Client telemetry (KIP-714) as a broker without client-metrics subscriptions (telemetry.cc).
asio::awaitable<protocol::GetTelemetrySubscriptionsResponse> handle_get_telemetry_subscriptions(
    Broker& b, int16_t version, protocol::GetTelemetrySubscriptionsRequest req);
asio::awaitable<protocol::PushTelemetryResponse> handle_push_telemetry(
    Broker& b, int16_t version, protocol::PushTelemetryRequest req);
asio::awaitable<protocol::FetchResponse> handle_fetch(Broker& b, int16_t version,
                                                      protocol::FetchRequest req);
asio::awaitable<protocol::ListOffsetsResponse> handle_list_offsets(
    Broker& b, int16_t version, protocol::ListOffsetsRequest req);
asio::awaitable<protocol::OffsetForLeaderEpochResponse> handle_offset_for_leader_epoch(
    Broker& b, int16_t version, protocol::OffsetForLeaderEpochRequest req);
asio::awaitable<protocol::DeleteRecordsResponse> handle_delete_records(
    Broker& b, int16_t version, protocol::DeleteRecordsRequest req);
// `listener`: the name of the listener the request came in on; brokers are described with
// their address on it.
asio::awaitable<protocol::MetadataResponse> handle_metadata(Broker& b, int16_t version,
                                                            protocol::MetadataRequest req,
                                                            std::string listener = {});
asio::awaitable<protocol::CreateTopicsResponse> handle_create_topics(
    Broker& b, int16_t version, protocol::CreateTopicsRequest req);
asio::awaitable<protocol::DeleteTopicsResponse> handle_delete_topics(
    Broker& b, int16_t version, protocol::DeleteTopicsRequest req);
asio::awaitable<protocol::CreatePartitionsResponse> handle_create_partitions(
    Broker& b, int16_t version, protocol::CreatePartitionsRequest req);
asio::awaitable<protocol::InitProducerIdResponse> handle_init_producer_id(
    Broker& b, int16_t version, protocol::InitProducerIdRequest req);

asio::awaitable<protocol::DescribeConfigsResponse> handle_describe_configs(
    Broker& b, int16_t version, protocol::DescribeConfigsRequest req);
// Topics, and the BROKER resource for the dynamic broker keys (dynamic_broker_keys()).
asio::awaitable<protocol::AlterConfigsResponse> handle_alter_configs(
    Broker& b, int16_t version, protocol::AlterConfigsRequest req);
asio::awaitable<protocol::IncrementalAlterConfigsResponse> handle_incremental_alter_configs(
    Broker& b, int16_t version, protocol::IncrementalAlterConfigsRequest req);
asio::awaitable<protocol::DescribeClusterResponse> handle_describe_cluster(
    Broker& b, int16_t version, protocol::DescribeClusterRequest req);
// Partition reassignment (kafka-reassign-partitions): one replica per partition, moved by
// ownership without copying data (cluster mode; on one node only the identity move is valid).
asio::awaitable<protocol::AlterPartitionReassignmentsResponse> handle_alter_partition_reassignments(
    Broker& b, int16_t version, protocol::AlterPartitionReassignmentsRequest req);
asio::awaitable<protocol::ListPartitionReassignmentsResponse> handle_list_partition_reassignments(
    Broker& b, int16_t version, protocol::ListPartitionReassignmentsRequest req);
// Every partition has one replica, its leader: elections always succeed without a change.
asio::awaitable<protocol::ElectLeadersResponse> handle_elect_leaders(
    Broker& b, int16_t version, protocol::ElectLeadersRequest req);
// One log directory (BrokerConfig::log_dir) holding every partition.
asio::awaitable<protocol::DescribeLogDirsResponse> handle_describe_log_dirs(
    Broker& b, int16_t version, protocol::DescribeLogDirsRequest req);

// Config resource types of DescribeConfigs / AlterConfigs / IncrementalAlterConfigs.
constexpr int8_t kConfigResourceTopic = 2;
constexpr int8_t kConfigResourceBroker = 4;

// Current time in ms since the epoch (LogAppendTime).
int64_t now_ms();

}  // namespace shale::broker

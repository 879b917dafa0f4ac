#include "broker/broker_handlers.h"

#include <utility>

#include "broker/handlers.h"
#include "broker/security_handlers.h"
#include "broker/txn_handlers.h"

namespace shale::broker {
namespace {

// Adapts a handler of handlers.h (request by value, response always produced) to the
// dispatcher's signature. Every API names its highest version explicitly rather than the
// schema's: the schemas (kafka-clients jar, tools/codegen/kafka-clients.pin) gain versions the
// handlers do not implement (e.g. Produce v13 names topics by id only), and updating the pin
// must not advertise them. Only plain pointers are captured: the lambdas live in the dispatcher
// for the life of the process, and GCC 12 mishandles non-trivial captures across co_await.
template <typename Req, typename Resp>
void add(Dispatcher& d, Broker& b, int16_t min_version, int16_t max_version,
         asio::awaitable<Resp> (*fn)(Broker&, int16_t, Req)) {
  Broker* bp = &b;
  d.add<Req, Resp>(
      min_version, max_version,
      [bp, fn](const RequestContext& ctx, Req& req) -> asio::awaitable<std::optional<Resp>> {
        Resp resp = co_await fn(*bp, ctx.version(), std::move(req));
        co_return std::optional<Resp>(std::move(resp));
      });
}

}  // namespace

void register_broker_handlers(Dispatcher& d, Broker& b) {
  using namespace protocol;  // NOLINT: message types only
  Broker* bp = &b;
  // Produce: acks=0 gets no response, but the appends still happen.
  d.add<ProduceRequest, ProduceResponse>(
      3, 11,
      [bp](const RequestContext& ctx,
           ProduceRequest& req) -> asio::awaitable<std::optional<ProduceResponse>> {
        const bool no_response = req.acks == 0;
        ProduceResponse resp =
            co_await handle_produce(*bp, ctx.version(), std::move(req), &ctx.order);
        if (no_response) co_return std::nullopt;
        co_return std::optional<ProduceResponse>(std::move(resp));
      });
  add<FetchRequest, FetchResponse>(d, b, 4, 17, &handle_fetch);
  add<ListOffsetsRequest, ListOffsetsResponse>(d, b, 1, 10, &handle_list_offsets);
  d.add<MetadataRequest, MetadataResponse>(
      0, 12,
      [bp](const RequestContext& ctx,
           MetadataRequest& req) -> asio::awaitable<std::optional<MetadataResponse>> {
        MetadataResponse resp =
            co_await handle_metadata(*bp, ctx.version(), std::move(req), ctx.conn.listener);
        co_return std::optional<MetadataResponse>(std::move(resp));
      });
  add<CreateTopicsRequest, CreateTopicsResponse>(d, b, 2, 7, &handle_create_topics);
  add<DeleteTopicsRequest, DeleteTopicsResponse>(d, b, 1, 6, &handle_delete_topics);
  add<DeleteRecordsRequest, DeleteRecordsResponse>(d, b, 0, 2, &handle_delete_records);
  add<InitProducerIdRequest, InitProducerIdResponse>(d, b, 0, 5, &handle_init_producer_id);
  add<OffsetForLeaderEpochRequest, OffsetForLeaderEpochResponse>(d, b, 2, 4,
                                                                 &handle_offset_for_leader_epoch);
  add<CreatePartitionsRequest, CreatePartitionsResponse>(d, b, 0, 3, &handle_create_partitions);
  add<DescribeConfigsRequest, DescribeConfigsResponse>(d, b, 1, 4, &handle_describe_configs);
  add<DescribeClusterRequest, DescribeClusterResponse>(d, b, 0, 1, &handle_describe_cluster);
  add<AlterConfigsRequest, AlterConfigsResponse>(d, b, 0, 2, &handle_alter_configs);
  add<DescribeLogDirsRequest, DescribeLogDirsResponse>(d, b, 1, 4, &handle_describe_log_dirs);
  add<DescribeTopicPartitionsRequest, DescribeTopicPartitionsResponse>(
      d, b, 0, 0, &handle_describe_topic_partitions);
  add<GetTelemetrySubscriptionsRequest, GetTelemetrySubscriptionsResponse>(
      d, b, 0, 0, &handle_get_telemetry_subscriptions);
  add<PushTelemetryRequest, PushTelemetryResponse>(d, b, 0, 0, &handle_push_telemetry);
  add<AlterPartitionReassignmentsRequest, AlterPartitionReassignmentsResponse>(
      d, b, 0, 1, &handle_alter_partition_reassignments);
  add<ListPartitionReassignmentsRequest, ListPartitionReassignmentsResponse>(
      d, b, 0, 0, &handle_list_partition_reassignments);
  add<ElectLeadersRequest, ElectLeadersResponse>(d, b, 0, 2, &handle_elect_leaders);
  add<IncrementalAlterConfigsRequest, IncrementalAlterConfigsResponse>(
      d, b, 0, 1, &handle_incremental_alter_configs);
  // Transactions (txn_handlers.h): the forms before KIP-890 part 2.
  add<AddPartitionsToTxnRequest, AddPartitionsToTxnResponse>(d, b, 0, 3,
                                                             &handle_add_partitions_to_txn);
  add<AddOffsetsToTxnRequest, AddOffsetsToTxnResponse>(d, b, 0, 4, &handle_add_offsets_to_txn);
  add<TxnOffsetCommitRequest, TxnOffsetCommitResponse>(d, b, 0, 4, &handle_txn_offset_commit);
  add<EndTxnRequest, EndTxnResponse>(d, b, 0, 4, &handle_end_txn);
  add<DescribeTransactionsRequest, DescribeTransactionsResponse>(d, b, 0, 0,
                                                                 &handle_describe_transactions);
  add<ListTransactionsRequest, ListTransactionsResponse>(d, b, 0, 2, &handle_list_transactions);
  add<DescribeProducersRequest, DescribeProducersResponse>(d, b, 0, 0, &handle_describe_producers);
  // SaslHandshake v1, SaslAuthenticate v0-2, Describe/AlterUserScramCredentials v0.
  register_security_handlers(d, b);
}

}  // namespace shale::broker

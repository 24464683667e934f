// Collector mode's pure parts (eventd/collector/): the CollectorSource key's checks and a
// forwarded record split back into a row — header fields to columns, the rest to the payload
// with the forwarding host first, and the accounting that de-duplication and the central audit
// rest on.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "eventd/collector/record_row.hpp"
#include "eventd/collector/source_config.hpp"
#include "store/row_chain.hpp"

namespace {

using nlohmann::json;
using namespace eventd::collector;

constexpr const char* kBoot = "0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0";

std::string source_error(const json& v) {
    auto r = parse_source_config(v);
    REQUIRE_FALSE(r);
    return r.error().message;
}

eventd::HandoffItem item_of(const json& record, const char* host = "web-3") {
    const std::vector<uint8_t> bytes = json::to_msgpack(record);
    auto r = item_from_record(bytes, host);
    INFO(record.dump());
    REQUIRE(r);
    // The converter hashes the row for its shard's chain once every column is final: the
    // writer links that digest as it is (store/row_chain.hpp).
    CHECK(r->row.content_digest == eventd::store::row_digest(r->row));
    return std::move(*r);
}

std::string record_error(const std::vector<uint8_t>& bytes) {
    auto r = item_from_record(bytes, "web-3");
    REQUIRE_FALSE(r);
    return r.error().message;
}

json payload_of(const eventd::HandoffItem& item) {
    REQUIRE(item.row.payload);
    return json::from_msgpack(*item.row.payload);
}

}  // namespace

TEST_CASE("collector source: defaults and refusals naming the key", "[collector]") {
    auto ok = parse_source_config(json{{"NatsUrl", "nats://127.0.0.1:4222"}});
    REQUIRE(ok);
    CHECK(ok->stream == "EVENTD");
    CHECK(ok->durable == "eventd-collector");
    CHECK(ok->filter_subject.empty());
    CHECK(ok->subject_prefix == "eventd");
    CHECK(ok->ack_wait_seconds == 30);

    CHECK_THAT(source_error(json::array()), Catch::Contains("CollectorSource must be an object"));
    CHECK_THAT(source_error(json::object()), Catch::Contains("CollectorSource.NatsUrl is required"));
    CHECK_THAT(source_error(json{{"NatsUrl", "x"}, {"Typo", 1}}), Catch::Contains("CollectorSource.Typo is not a known key"));
    CHECK_THAT(source_error(json{{"NatsUrl", ""}}), Catch::Contains("NatsUrl must be a non-empty string"));
    CHECK_THAT(source_error(json{{"NatsUrl", "x"}, {"Durable", "a.b"}}), Catch::Contains("CollectorSource.Durable must not"));
    CHECK_THAT(source_error(json{{"NatsUrl", "x"}, {"AckWaitSeconds", 0}}),
               Catch::Contains("AckWaitSeconds must be an integer from 1 to 3600, got 0"));
    CHECK_THAT(source_error(json{{"NatsUrl", "x"}, {"FetchBatch", 500}, {"MaxAckPending", 200}}),
               Catch::Contains("MaxAckPending must be at least FetchBatch (500)"));
    CHECK_THAT(source_error(json{{"NatsUrl", "x"}, {"TlsKeyFile", "/k"}}), Catch::Contains("TlsCertFile is needed"));
    CHECK_THAT(source_error(json{{"NatsUrl", "x"}, {"SubjectPrefix", "a.>"}}),
               Catch::Contains("CollectorSource.SubjectPrefix must be dot-separated tokens"));
}

TEST_CASE("collector source: NatsUrl lists a cluster's servers, each checked", "[collector]") {
    auto ok = parse_source_config(json{{"NatsUrl", "nats://a:4222,nats://b:4222, nats://c:4222"}});
    REQUIRE(ok);
    CHECK(ok->nats_url == "nats://a:4222,nats://b:4222, nats://c:4222");
    CHECK_THAT(source_error(json{{"NatsUrl", "nats://a:4222,,nats://c:4222"}}),
               Catch::Contains("CollectorSource.NatsUrl element 2 of 3 ('') is empty"));
    CHECK_THAT(source_error(json{{"NatsUrl", "nats://a:4222,https://b:4222"}}),
               Catch::Contains("CollectorSource.NatsUrl element 2 of 2 ('https://b:4222') has the scheme 'https'"));
    CHECK_THAT(source_error(json{{"NatsUrl", "tls://"}}),
               Catch::Contains("CollectorSource.NatsUrl 'tls://' names no host"));
}

TEST_CASE("collected KMES event: columns from the header fields, host first in the payload", "[collector]") {
    const auto item = item_of(json{{"boot_id", kBoot},
                                   {"timestamp", 1795493460061943023ull},
                                   {"cpu_id", 3},
                                   {"sequence", 42},
                                   {"origin_class", 2},
                                   {"event_type", "kacs.access_denied"},
                                   {"effective_token_guid", kBoot},
                                   {"true_token_guid", nullptr},
                                   {"process_guid", nullptr},
                                   {"user", "mallory"},
                                   {"host", "spoofed"}});
    const auto& row = item.row;
    CHECK(row.timestamp == 1795493460061943023ull);
    CHECK(row.cpu_id == uint16_t(3));
    CHECK(row.sequence == uint64_t(42));
    CHECK(row.origin_class == uint8_t(2));
    CHECK(row.event_type == "kacs.access_denied");
    CHECK(row.effective_token.has_value());
    CHECK_FALSE(row.true_token.has_value());
    CHECK(item.receipt.source == nullptr);  // the collector sets its receipt
    REQUIRE(item.accounting);
    CHECK(item.accounting->cpu_id == 3);
    CHECK(item.accounting->first == 42);
    CHECK(item.accounting->last == 42);
    // The forwarding host's name is the `host`; the event's own `host` cannot pose as one.
    CHECK(payload_of(item) == json{{"host", "web-3"}, {"user", "mallory"}, {"event_host", "spoofed"}});
    const std::vector<uint8_t>& p = *row.payload;
    CHECK(p[1] == 0xa4);  // fixstr "host" is the first key
}

TEST_CASE("collected gap record accounts its range; other synthetic records nothing", "[collector]") {
    const auto gap = item_of(json{{"boot_id", kBoot},
                                  {"timestamp", 5},
                                  {"cpu_id", 1},
                                  {"sequence", nullptr},
                                  {"event_type", "synthetic.gap"},
                                  {"first_sequence", 10},
                                  {"last_sequence", 19},
                                  {"count", 10}});
    REQUIRE(gap.accounting);
    CHECK(gap.accounting->cpu_id == 1);
    CHECK(gap.accounting->first == 10);
    CHECK(gap.accounting->last == 19);
    CHECK_FALSE(gap.row.sequence.has_value());

    const auto startup = item_of(json{{"boot_id", kBoot},
                                      {"timestamp", 5},
                                      {"cpu_id", nullptr},
                                      {"sequence", nullptr},
                                      {"event_type", "synthetic.startup"},
                                      {"version", "1"}});
    CHECK_FALSE(startup.accounting.has_value());
    CHECK_FALSE(startup.row.cpu_id.has_value());
    CHECK(payload_of(startup) == json{{"host", "web-3"}, {"version", "1"}});
}

TEST_CASE("collected bytes that are no eventd record are refused with the reason", "[collector]") {
    CHECK_THAT(record_error(json::to_msgpack(json::array({1, 2}))), Catch::Contains("not a msgpack map"));
    CHECK_THAT(record_error({}), Catch::Contains("not an eventd record"));
    CHECK_THAT(record_error(json::to_msgpack(json{{"timestamp", 1}, {"event_type", "a"}})),
               Catch::Contains("boot_id, timestamp or event_type is missing"));
    CHECK_THAT(record_error(json::to_msgpack(json{{"boot_id", "nope"}, {"timestamp", 1}, {"event_type", "a"}})),
               Catch::Contains("boot_id is not a GUID string"));
    CHECK_THAT(record_error(json::to_msgpack(json{{"boot_id", kBoot}, {"timestamp", -1}, {"event_type", "a"}})),
               Catch::Contains("timestamp is not an integer"));
    CHECK_THAT(record_error(json::to_msgpack(json{{"boot_id", kBoot}, {"timestamp", 1}, {"event_type", "a"}, {"cpu_id", 70000}})),
               Catch::Contains("cpu_id is not an integer from 0 to 65535"));
    CHECK_THAT(record_error(json::to_msgpack(json{{"boot_id", kBoot}, {"timestamp", 1}, {"event_type", json::array()}})),
               Catch::Contains("event_type is not a scalar"));
    CHECK_THAT(record_error(json::to_msgpack(json{{"boot_id", kBoot}, {"timestamp", 1ull << 63}, {"event_type", "a"}})),
               Catch::Contains("timestamp is not an integer from 0 to 9223372036854775807"));
    CHECK_THAT(record_error(json::to_msgpack(
                   json{{"boot_id", kBoot}, {"timestamp", 1}, {"event_type", "a"}, {"cpu_id", 0}, {"sequence", 1ull << 63}})),
               Catch::Contains("sequence is not an integer"));
    CHECK_THAT(record_error(json::to_msgpack(
                   json{{"boot_id", kBoot}, {"timestamp", 1}, {"event_type", "a"}, {"host", "x"}, {"event_host", "y"}})),
               Catch::Contains("both host and event_host"));
    // A truncated record and trailing bytes.
    auto bytes = json::to_msgpack(json{{"boot_id", kBoot}, {"timestamp", 1}, {"event_type", "a"}});
    auto cut = bytes;
    cut.pop_back();
    CHECK_THAT(record_error(cut), Catch::Contains("not an eventd record"));
    bytes.push_back(0xc0);
    CHECK_THAT(record_error(bytes), Catch::Contains("bytes after the record's map"));
}

TEST_CASE("collector: a message body is one record or an array of records, each checked on its own",
          "[collector]") {
    const json r1 = {{"boot_id", kBoot}, {"timestamp", 5}, {"event_type", "x"}, {"cpu_id", 0}, {"sequence", 1}};
    const json r2 = {{"boot_id", kBoot}, {"timestamp", 6}, {"event_type", "x"}, {"cpu_id", 0}, {"sequence", 2}};
    const auto single = json::to_msgpack(r1);
    auto one = records_of_message(single);
    REQUIRE(one);
    REQUIRE(one->size() == 1);
    CHECK(std::vector<uint8_t>(one->at(0).begin(), one->at(0).end()) == single);

    const auto packed = json::to_msgpack(json::array({r1, r2}));
    auto two = records_of_message(packed);
    REQUIRE(two);
    REQUIRE(two->size() == 2);
    CHECK(std::vector<uint8_t>(two->at(1).begin(), two->at(1).end()) == json::to_msgpack(r2));
    auto item = item_from_record(two->at(1), "web-3");
    REQUIRE(item);
    CHECK(item->accounting->first == 2);

    auto refused = [](const std::vector<uint8_t>& body) {
        auto r = records_of_message(body);
        REQUIRE_FALSE(r);
        return r.error().message;
    };
    CHECK(refused(json::to_msgpack(json::array())).find("empty array") != std::string::npos);
    CHECK(refused(json::to_msgpack(json("text"))).find("neither a record") != std::string::npos);
    auto cut = packed;
    cut.resize(cut.size() - 3);
    CHECK(refused(cut).find("record 2 of 2") != std::string::npos);
    auto trailing = packed;
    trailing.push_back(0xc0);
    CHECK(refused(trailing).find("bytes after") != std::string::npos);
    // An element that is not a map is found by item_from_record, which refuses the message.
    const auto mixed_body = json::to_msgpack(json::array({r1, 7}));  // the spans point into it
    auto mixed = records_of_message(mixed_body);
    REQUIRE(mixed);
    CHECK_FALSE(item_from_record(mixed->at(1), "web-3"));
}

TEST_CASE("collector: a packed message read in one pass gives each record's row, and names a bad record",
          "[collector]") {
    // Records of every shape the conversion treats apart: a KMES event with tokens, a payload
    // `host` (renamed event_host), nested payload values, a non-string payload key, a gap
    // record (its range accounted), a record without cpu or sequence (nothing accounted).
    const json records = json::array({
        {{"boot_id", kBoot}, {"timestamp", 5}, {"event_type", "app.login"}, {"cpu_id", 1}, {"sequence", 41},
         {"origin_class", 2}, {"effective_token_guid", kBoot}, {"true_token_guid", nullptr},
         {"process_guid", kBoot}, {"user", "alice"}, {"host", "laptop"}},
        {{"boot_id", kBoot}, {"timestamp", 6}, {"event_type", "app.login"}, {"cpu_id", 1}, {"sequence", 42},
         {"nested", {{"a", json::array({1, {{"b", 2}}})}}}, {"n", -3}},
        {{"boot_id", kBoot}, {"timestamp", 7}, {"event_type", "synthetic.gap"}, {"cpu_id", 0},
         {"first_sequence", 10}, {"last_sequence", 19}, {"lost", 10}},
        {{"boot_id", kBoot}, {"timestamp", 8}, {"event_type", "synthetic.startup"}},
    });
    std::vector<uint8_t> body = json::to_msgpack(records);
    // A payload key that is not a string (msgpack allows it, nlohmann cannot write it): the
    // last record's map gets a fifth pair {7: true}.
    const auto last = records_of_message(body);
    REQUIRE(last);
    const size_t map_at = static_cast<size_t>(last->back().data() - body.data());
    REQUIRE(body[map_at] == 0x83);  // a fixmap of three pairs
    body[map_at] = 0x84;
    body.push_back(0x07);
    body.push_back(0xc3);

    auto records_each = records_of_message(body);
    REQUIRE(records_each);
    auto rows = items_of_message(body, "web-3");
    REQUIRE(rows);
    REQUIRE(rows->size() == records_each->size());
    for (size_t i = 0; i < rows->size(); ++i) {
        INFO("record " << i + 1);
        auto alone = item_from_record(records_each->at(i), "web-3");
        REQUIRE(alone);
        const auto& a = rows->at(i);
        const auto& b = *alone;
        CHECK(a.row.boot_id == b.row.boot_id);
        CHECK(a.row.timestamp == b.row.timestamp);
        CHECK(a.row.cpu_id == b.row.cpu_id);
        CHECK(a.row.sequence == b.row.sequence);
        CHECK(a.row.origin_class == b.row.origin_class);
        CHECK(a.row.event_type == b.row.event_type);
        CHECK(a.row.effective_token == b.row.effective_token);
        CHECK(a.row.true_token == b.row.true_token);
        CHECK(a.row.process == b.row.process);
        CHECK(a.row.payload == b.row.payload);
        CHECK(a.accounting.has_value() == b.accounting.has_value());
        if (a.accounting && b.accounting) {
            CHECK(a.accounting->cpu_id == b.accounting->cpu_id);
            CHECK(a.accounting->first == b.accounting->first);
            CHECK(a.accounting->last == b.accounting->last);
        }
    }
    CHECK(payload_of(rows->at(0)) == json{{"host", "web-3"}, {"user", "alice"}, {"event_host", "laptop"}});
    CHECK(payload_of(rows->at(1)).at("nested") == records[1].at("nested"));
    CHECK(rows->at(2).accounting->first == 10);
    CHECK(rows->at(2).accounting->last == 19);
    CHECK_FALSE(rows->at(3).accounting);
    CHECK(rows->at(3).row.payload->back() == 0xc3);  // the non-string key's pair kept as it came

    // One body that is a single record reads as one row.
    auto single = items_of_message(json::to_msgpack(records[1]), "web-3");
    REQUIRE(single);
    REQUIRE(single->size() == 1);
    CHECK(single->at(0).row.sequence == 42);

    // A bad record refuses the message and is named; so is what is wrong around the records.
    auto refused = [](const std::vector<uint8_t>& b) {
        auto r = items_of_message(b, "web-3");
        REQUIRE_FALSE(r);
        return r.error().message;
    };
    json broken = records;
    broken[2]["timestamp"] = "soon";
    CHECK_THAT(refused(json::to_msgpack(broken)), Catch::Contains("record 3 of 4: not an eventd record: timestamp"));
    broken = records;
    broken[1] = 7;
    CHECK_THAT(refused(json::to_msgpack(broken)), Catch::Contains("record 2 of 4: not an eventd record: not a msgpack map"));
    auto cut = body;
    cut.resize(cut.size() - 1);
    CHECK_THAT(refused(cut), Catch::Contains("record 4 of 4"));
    auto trailing = body;
    trailing.push_back(0xc0);
    CHECK_THAT(refused(trailing), Catch::Contains("bytes after the array of records"));
    auto single_trailing = json::to_msgpack(records[1]);
    single_trailing.push_back(0xc0);
    CHECK_THAT(refused(single_trailing), Catch::Contains("bytes after the record's map"));
    CHECK_THAT(refused(json::to_msgpack(json::array())), Catch::Contains("empty array"));
    CHECK_THAT(refused(json::to_msgpack(json("text"))), Catch::Contains("neither a record"));
    // Issue 40: an array header claiming 4 billion records in a 5-byte body is refused, not
    // allocated (std::bad_alloc ended the collector, and the message came back after each start).
    const std::vector<uint8_t> poison = {0xdd, 0xff, 0xff, 0xff, 0xff};
    CHECK_THAT(refused(poison), Catch::Contains("record 1 of 4294967295"));
    CHECK_FALSE(records_of_message(poison));
}

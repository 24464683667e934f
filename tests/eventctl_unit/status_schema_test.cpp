// The STATUS schema (protocol/status.hpp): what eventd writes is what a reader gets back, and a
// reader copes with a daemon of another version — unknown keys ignored, missing keys at their
// defaults — but not with a key of the wrong type, which it names.
#include <catch2/catch.hpp>

#include "protocol/status.hpp"

namespace {

using nlohmann::json;
namespace status = protocol::status;

}  // namespace

TEST_CASE("a status record travels with its kind and comes back equal", "[status]") {
    status::Shard shard;
    shard.shard = 2;
    shard.file = "shard-0002.db";
    shard.rows = std::nullopt;  // not counted in time
    shard.last_commit_ns = 1'700'000'000'000'000'000ull;
    shard.avg_batch_size = 12.5;
    shard.queued = 7;
    const json record = status::to_record(shard);
    CHECK(record["kind"] == "shard");
    CHECK(record["rows"].is_null());
    CHECK(record["last_commit_ns"] == 1'700'000'000'000'000'000ull);
    CHECK(record.size() == 15);  // 14 keys and the kind
    auto back = status::from_record<status::Shard>(record);
    REQUIRE(back.ok());
    CHECK(back->file == "shard-0002.db");
    CHECK_FALSE(back->rows.has_value());
    CHECK(back->last_commit_ns == shard.last_commit_ns);
    CHECK(back->avg_batch_size == 12.5);
    CHECK(back->queued == 7);
}

TEST_CASE("the daemon record names the schema's version", "[status]") {
    const json record = status::to_record(status::Daemon{});
    CHECK(record["kind"] == "daemon");
    CHECK(record["version"] == status::kVersion);
}

TEST_CASE("a reader ignores keys it does not know and defaults the ones it misses", "[status]") {
    const json newer = {{"kind", "retention"}, {"runs", 3}, {"deleted_rows", 40}, {"next_run_ns", 5}};
    auto r = status::from_record<status::Retention>(newer);
    REQUIRE(r.ok());
    CHECK(r->runs == 3);
    CHECK(r->deleted_rows == 40);
    CHECK_FALSE(r->last_run_ns.has_value());  // absent: its default
}

TEST_CASE("a key of the wrong type or a record of another kind is an error", "[status]") {
    auto wrong = status::from_record<status::Ring>(json{{"kind", "ring"}, {"cpu", "zero"}});
    REQUIRE_FALSE(wrong.ok());
    CHECK_THAT(wrong.error().message, Catch::Contains("ring"));
    CHECK_FALSE(status::from_record<status::Ring>(json{{"kind", "shard"}}).ok());
    CHECK(status::kind_of(json{{"cpu", 1}}).empty());
}

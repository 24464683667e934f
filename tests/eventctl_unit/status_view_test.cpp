// `eventctl status` cells still render every value kind through the one pretty writer.
#include <catch2/catch.hpp>

#include "eventctl/status_view.hpp"
#include "protocol/status.hpp"

namespace eventctl::test {

TEST_CASE("status cells show values as pretty does, strings unquoted", "[status]") {
    Json record = {{"kind", "extra"}, {"name", "a\tb"}, {"ratio", 0.5}, {"n", -3}, {"list", {1, "x"}}};
    record["blob"] = Json::binary({0x01, 0xab});
    record["ext"] = Json::binary({0xff}, 7);
    const std::string text = render_status({record});
    CHECK(text.find("Other: extra") != std::string::npos);
    CHECK(text.find("a\\tb") != std::string::npos);
    CHECK(text.find("0.5") != std::string::npos);
    CHECK(text.find("-3") != std::string::npos);
    CHECK(text.find("[1,\"x\"]") != std::string::npos);
    CHECK(text.find("bin:01ab") != std::string::npos);
    CHECK(text.find("ext(7):ff") != std::string::npos);
}

}  // namespace eventctl::test

namespace eventctl::test {

TEST_CASE("status shows the adaptive index policy: settings, desired set, counters", "[status]") {
    const Json record = {
        {"kind", "index_policy"},
        {"last_recompute_ns", 1764043709000000000},
        {"interval_s", 3600.0},
        {"window_s", 86400.0},
        {"create_threshold", 100},
        {"drop_threshold", 10},
        {"meta_db", "/var/lib/eventd/events/eventd-meta.db"},
        {"meta_db_problem", nullptr},
        {"desired", {{{"field", "user"}, {"priority", 0}, {"is_expression", true}, {"manual", false}}}},
        {"counters", {{{"field", "user"}, {"query_count", 123}, {"window_start_ns", 1764000000000000000}}}},
        {"counted_fields", 1},
        {"not_counted", 0}};
    const std::string text = render_status({record});
    INFO(text);
    CHECK(text.find("Adaptive indexing") != std::string::npos);
    CHECK(text.find("2025-11-25T04:08:29.000Z") != std::string::npos);
    CHECK(text.find("problem") == std::string::npos);  // null: not shown
    CHECK(text.find("Desired indexes") != std::string::npos);
    CHECK(text.find("PRIORITY") != std::string::npos);
    CHECK(text.find("123") != std::string::npos);
    CHECK(text.find("Other") == std::string::npos);
}

}  // namespace eventctl::test

namespace eventctl::test {

// Issue 39: a deny entry that denies everyone because a name did not resolve is shown, named.
TEST_CASE("status shows the access policy: deny entries failing closed, a refused policy", "[status]") {
    const protocol::status::AccessPolicy failing{
        .loaded_ns = 1764043709000000000,
        .patterns = 2,
        .warnings = 1,
        .deny_failing_closed = 1,
        .failing_closed = "Security.Events pattern 'kacs', entry 1 (user:late)"};
    std::string text = render_status({protocol::status::to_record(failing)});
    INFO(text);
    CHECK(text.find("Access policy") != std::string::npos);
    CHECK(text.find("deny entries failing closed (name not resolved)  1") != std::string::npos);
    CHECK(text.find("pattern 'kacs', entry 1 (user:late)") != std::string::npos);
    CHECK(text.find("refused because") == std::string::npos);  // nil: not shown
    CHECK(text.find("Other") == std::string::npos);

    const protocol::status::AccessPolicy refused{.refused = true, .problem = "Security.Events: expected an object"};
    text = render_status({protocol::status::to_record(refused)});
    CHECK(text.find("refused because") != std::string::npos);
    CHECK(text.find("expected an object") != std::string::npos);
    CHECK(text.find("failing closed  ") == std::string::npos);
}

}  // namespace eventctl::test

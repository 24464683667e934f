// The format writers as eventctl uses them: framing (lines, the JSON array) and errors.
#include <catch2/catch.hpp>

#include <sys/mman.h>
#include <unistd.h>

#include "eventctl/record_writer.hpp"
#include "msgpack_bytes.hpp"
#include "writer_output.hpp"

namespace eventctl::test {
namespace {

const std::vector<Bytes> kTwo = {map_of({{"a", Bytes{0x01}}}), map_of({{"b", str("x y")}})};

}  // namespace

TEST_CASE("jsonl writes one object per line", "[writer]") {
    CHECK(run(Format::jsonl, kTwo) == "{\"a\":1}\n{\"b\":\"x y\"}\n");
}

TEST_CASE("json writes one array, empty or not", "[writer]") {
    CHECK(run(Format::json, kTwo) == "[\n{\"a\":1},\n{\"b\":\"x y\"}\n]\n");
    CHECK(run(Format::json, {}) == "[]\n");
}

TEST_CASE("pretty writes one line per record when the keys differ", "[writer]") {
    CHECK(run(Format::pretty, kTwo) == "a=1\nb=\"x y\"\n");
    // The same keys in another order differ too.
    CHECK(run(Format::pretty, {map_of({{"a", Bytes{0x01}}, {"b", Bytes{0x02}}}),
                               map_of({{"b", Bytes{0x03}}, {"a", Bytes{0x04}}})}) == "a=1 b=2\nb=3 a=4\n");
    CHECK(run(Format::pretty, {}).empty());
}

TEST_CASE("pretty writes a finished result whose records share their keys as a table", "[writer]") {
    const std::vector<Bytes> by_type = {
        map_of({{"event_type", str("kacs.access_denied")}, {"count", tagged(0xcd, 1200, 2)}}),
        map_of({{"event_type", str("app.login")}, {"count", Bytes{0x07}}}),
        map_of({{"event_type", str("x \"q\"\n")}, {"count", Bytes{0xc0}}}),
    };
    CHECK(run(Format::pretty, by_type) ==
          "event_type          count\n"
          "kacs.access_denied   1200\n"
          "app.login               7\n"
          "x \\\"q\\\"\\n            null\n");
    // A column with anything but numbers is left-aligned; event times are RFC 3339.
    CHECK(run(Format::pretty, {map_of({{"timestamp", tagged(0xcf, 1795493460061943023ull, 8)}, {"n", Bytes{0x01}}}),
                               map_of({{"timestamp", Bytes{0x00}}, {"n", str("two")}})}) ==
          "timestamp                       n\n"
          "2026-11-24T04:11:00.061943023Z  1\n"
          "1970-01-01T00:00:00.000000000Z  two\n");
    CHECK(run(Format::pretty, {map_of({{"count", tagged(0xcd, 1200, 2)}})}) == "count\n 1200\n");
}

TEST_CASE("pretty writes lines once a stream goes live, the held records first", "[writer]") {
    const std::vector<Bytes> same = {map_of({{"a", Bytes{0x01}}}), map_of({{"a", Bytes{0x02}}}),
                                     map_of({{"a", Bytes{0x03}}})};
    CHECK(run(Format::pretty, same, 2) == "a=1\na=2\na=3\n");
    CHECK(run(Format::pretty, same, 0) == "a=1\na=2\na=3\n");
    CHECK(run(Format::pretty, same) == "a\n1\n2\n3\n");
}

TEST_CASE("msgpack writes each record's bytes behind its length", "[writer]") {
    CHECK(run(Format::msgpack, {Bytes{0x80}}) == std::string("\x01\x00\x00\x00\x80", 5));
}

TEST_CASE("a record that cannot be decoded is an error naming it", "[writer]") {
    const int fd = memfd_create("eventctl-out", 0);
    REQUIRE(fd >= 0);
    Output out(fd);
    for (const Format f : {Format::pretty, Format::jsonl, Format::json}) {
        auto writer = make_record_writer(f, false, out);
        for (const Bytes& bad : {Bytes{0x81, 0xa1, 'k'},
                                 // a map announcing 2^32-1 pairs (found by the fuzz corpus: the
                                 // table cells once allocated that many up front)
                                 Bytes{0xdf, 0xff, 0xff, 0xff, 0xff, 0xa1, 'k', 0x01}}) {
            const auto st = writer->write(bad);
            REQUIRE_FALSE(st.ok());
            CHECK(st.error().message.find("eventd sent a record eventctl cannot decode") == 0);
        }
    }
    close(fd);
}

}  // namespace eventctl::test

namespace eventctl::test {

TEST_CASE("pretty leaves the wide header fields of whole records out unless --all-fields", "[writer]") {
    const Bytes nil{0xc0};
    const Bytes guid = str("e0000000-0000-4000-8000-000000000001");
    // A whole record as eventd sends it: every header field, then the payload's.
    const Bytes whole = map_of({{"boot_id", guid},
                                {"timestamp", Bytes{0x01}},
                                {"cpu_id", Bytes{0x02}},
                                {"sequence", Bytes{0x03}},
                                {"origin_class", Bytes{0x04}},
                                {"event_type", str("audit.syscall")},
                                {"effective_token_guid", guid},
                                {"true_token_guid", guid},
                                {"process_guid", nil},
                                {"exe", str("/usr/bin/true")}});
    const PrettyOptions default_view{
        .all_fields = false, .width = LineWidth::fixed(120), .accounts = [] { return std::vector<LocalAccount>{}; }};
    const std::string compact = run(Format::pretty, {whole, whole}, std::nullopt, default_view);
    CHECK(compact.find("boot_id") == std::string::npos);
    CHECK(compact.find("guid") == std::string::npos);
    CHECK(compact.find("sequence") == std::string::npos);
    CHECK(compact.find("event_type") != std::string::npos);
    CHECK(compact.find("/usr/bin/true") != std::string::npos);
    CHECK(compact.find("1970-01-01T00:00:00.000000001Z") != std::string::npos);  // the time
    const std::string all = run(Format::pretty, {whole}, std::nullopt, {.all_fields = true});
    CHECK(all.find("boot_id") != std::string::npos);
    CHECK(all.find("process_guid") != std::string::npos);
    // A SELECT of header fields is what the user asked for: never shortened.
    const Bytes selected = map_of({{"boot_id", guid}, {"sequence", Bytes{0x03}}});
    CHECK(run(Format::pretty, {selected}, std::nullopt, default_view).find("boot_id") != std::string::npos);
    // The machine formats always carry everything.
    CHECK(run(Format::jsonl, {whole}, std::nullopt, default_view).find("boot_id") != std::string::npos);
}

}  // namespace eventctl::test

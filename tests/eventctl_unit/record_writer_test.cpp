// The format writers as eventctl uses them: framing (lines, the JSON array) and errors.
#include <catch2/catch.hpp>

#include <sys/mman.h>
#include <unistd.h>

#include "eventctl/record_writer.hpp"
#include "msgpack_bytes.hpp"

namespace eventctl::test {
namespace {

// What a writer printed, through a real Output on an in-memory file.
std::string run(Format format, const std::vector<Bytes>& records) {
    const int fd = memfd_create("eventctl-out", 0);
    REQUIRE(fd >= 0);
    {
        Output out(fd);
        auto writer = make_record_writer(format, false, out);
        writer->begin();
        for (const auto& r : records) REQUIRE(writer->write(r).ok());
        writer->finish();
        REQUIRE(out.flush().ok());
    }
    std::string text(static_cast<std::size_t>(lseek(fd, 0, SEEK_END)), '\0');
    REQUIRE(pread(fd, text.data(), text.size(), 0) == static_cast<ssize_t>(text.size()));
    close(fd);
    return text;
}

const std::vector<Bytes> kTwo = {map_of({{"a", Bytes{0x01}}}), map_of({{"b", str("x y")}})};

}  // namespace

TEST_CASE("jsonl writes one object per line", "[writer]") {
    CHECK(run(Format::jsonl, kTwo) == "{\"a\":1}\n{\"b\":\"x y\"}\n");
}

TEST_CASE("json writes one array, empty or not", "[writer]") {
    CHECK(run(Format::json, kTwo) == "[\n{\"a\":1},\n{\"b\":\"x y\"}\n]\n");
    CHECK(run(Format::json, {}) == "[]\n");
}

TEST_CASE("pretty writes one line per record", "[writer]") { CHECK(run(Format::pretty, kTwo) == "a=1\nb=\"x y\"\n"); }

TEST_CASE("msgpack writes each record's bytes behind its length", "[writer]") {
    CHECK(run(Format::msgpack, {Bytes{0x80}}) == std::string("\x01\x00\x00\x00\x80", 5));
}

TEST_CASE("a record that cannot be decoded is an error naming it", "[writer]") {
    const int fd = memfd_create("eventctl-out", 0);
    REQUIRE(fd >= 0);
    Output out(fd);
    for (const Format f : {Format::pretty, Format::jsonl, Format::json}) {
        auto writer = make_record_writer(f, false, out);
        const auto st = writer->write(Bytes{0x81, 0xa1, 'k'});
        REQUIRE_FALSE(st.ok());
        CHECK(st.error().message.find("eventd sent a record eventctl cannot decode") == 0);
    }
    close(fd);
}

}  // namespace eventctl::test

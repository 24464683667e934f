// The spool keeps small results in memory and moves large ones to a temporary file; either way
// records come back complete and in arrival order.
#include <catch2/catch.hpp>

#include <cstdlib>
#include <optional>
#include <string>
#include <vector>

#include "eventctl/spool.hpp"

namespace eventctl::test {
namespace {

// Points TMPDIR somewhere for one test, then puts it back.
class TmpdirOverride {
public:
    explicit TmpdirOverride(const char* dir) {
        if (const char* old = std::getenv("TMPDIR")) old_ = old;
        setenv("TMPDIR", dir, 1);
    }
    ~TmpdirOverride() {
        if (old_) {
            setenv("TMPDIR", old_->c_str(), 1);
        } else {
            unsetenv("TMPDIR");
        }
    }

private:
    std::optional<std::string> old_;
};

constexpr const char* kNoSuchDirectory = "/nonexistent/eventctl-spool-test";

// Record i: its number in the first 4 bytes, then filler of a size that varies with i.
std::vector<uint8_t> record(uint32_t i, std::size_t size) {
    std::vector<uint8_t> r(size, static_cast<uint8_t>(i * 7));
    for (std::size_t b = 0; b < 4 && b < size; ++b) r[b] = static_cast<uint8_t>(i >> (8 * b));
    return r;
}

// Drains and checks that record i comes back as record(i, size_of(i)), in order.
template <class SizeOf>
void require_drains_in_order(Spool& spool, uint32_t n, SizeOf size_of) {
    uint32_t next = 0;
    const auto st = spool.drain([&](std::span<const uint8_t> r) -> base::Status {
        const auto expected = record(next, size_of(next));
        REQUIRE(std::vector<uint8_t>(r.begin(), r.end()) == expected);
        ++next;
        return {};
    });
    REQUIRE(st.ok());
    CHECK(next == n);
    CHECK(spool.count() == 0);
}

}  // namespace

TEST_CASE("a small result stays in memory: no temporary file is needed", "[spool]") {
    TmpdirOverride tmp(kNoSuchDirectory);  // creating a file here would fail
    Spool spool;
    const auto size_of = [](uint32_t i) -> std::size_t { return 50 + i % 300; };
    for (uint32_t i = 0; i < 10000; ++i) REQUIRE(spool.append(record(i, size_of(i))).ok());
    CHECK(spool.count() == 10000);
    require_drains_in_order(spool, 10000, size_of);
}

TEST_CASE("an empty spool drains nothing", "[spool]") {
    Spool spool;
    int calls = 0;
    REQUIRE(spool
                .drain([&](std::span<const uint8_t>) -> base::Status {
                    ++calls;
                    return {};
                })
                .ok());
    CHECK(calls == 0);
}

TEST_CASE("a result past 8 MiB moves to a temporary file", "[spool]") {
    TmpdirOverride tmp(kNoSuchDirectory);
    Spool spool;
    base::Status st;
    uint32_t i = 0;
    std::size_t bytes = 0;
    while (st.ok() && bytes <= Spool::kMemoryLimit) {
        st = spool.append(record(i++, 1000));
        bytes += 1004;
    }
    REQUIRE_FALSE(st.ok());  // the file could not be created: so one was needed
    CHECK(st.error().message.find(kNoSuchDirectory) != std::string::npos);
    CHECK(bytes > Spool::kMemoryLimit - 1004);
}

TEST_CASE("a large result spills to the file and drains in order", "[spool]") {
    TmpdirOverride tmp("/tmp");
    Spool spool;
    const auto size_of = [](uint32_t i) -> std::size_t { return 1 + (i * 7919) % 5000; };
    std::size_t bytes = 0;
    uint32_t n = 0;
    while (bytes < 3 * Spool::kMemoryLimit) {  // well past the limit, through many file chunks
        REQUIRE(spool.append(record(n, size_of(n))).ok());
        bytes += 4 + size_of(n);
        ++n;
    }
    CHECK(spool.count() == n);
    require_drains_in_order(spool, n, size_of);
}

TEST_CASE("one record larger than 8 MiB goes straight to the file", "[spool]") {
    TmpdirOverride tmp("/tmp");
    Spool spool;
    const auto size_of = [](uint32_t i) -> std::size_t { return i == 1 ? Spool::kMemoryLimit + 10 : 20; };
    for (uint32_t i = 0; i < 3; ++i) REQUIRE(spool.append(record(i, size_of(i))).ok());
    require_drains_in_order(spool, 3, size_of);
}

TEST_CASE("a sink error stops the drain and is returned", "[spool]") {
    Spool spool;
    for (uint32_t i = 0; i < 5; ++i) REQUIRE(spool.append(record(i, 10)).ok());
    int calls = 0;
    const auto st = spool.drain([&](std::span<const uint8_t>) -> base::Status {
        if (++calls == 2) return base::Error{EPIPE, "stop"};
        return {};
    });
    REQUIRE_FALSE(st.ok());
    CHECK(st.error().message == "stop");
    CHECK(calls == 2);
}

}  // namespace eventctl::test

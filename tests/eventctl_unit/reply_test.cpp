// parse_reply (protocol/reply.hpp, PSD-008 §8.8): one reply frame cut into its parts. A reply
// comes from whatever listens on the socket, so its counts are not believed.
#include <catch2/catch.hpp>

#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "protocol/reply.hpp"
#include "msgpack_bytes.hpp"
#include "sanitizers.hpp"

namespace eventctl::test {

using protocol::parse_reply;
using protocol::ReplyStatus;

TEST_CASE("a reply's records are cut out whole, in order", "[reply]") {
    const Bytes first = cat({Bytes{0x81}, str("user"), str("alice")});
    const Bytes second = cat({Bytes{0x80}});
    const Bytes frame = cat({Bytes{0x82}, str("status"), str("ok"), str("records"), Bytes{0x92}, first, second});
    auto reply = parse_reply(frame);
    REQUIRE(reply.ok());
    CHECK(reply->status == ReplyStatus::ok);
    REQUIRE(reply->records.size() == 2);
    CHECK(Bytes(reply->records[0].begin(), reply->records[0].end()) == first);
    CHECK(Bytes(reply->records[1].begin(), reply->records[1].end()) == second);
}

// From fuzz/frame_fuzz.cpp (fuzz/corpus/frame/regression-records-count): 13 bytes announcing
// 2^32 - 1 records had eventctl reserve 64 GiB before reading the first one — an abort
// (std::bad_alloc) wherever memory is not overcommitted that far.
TEST_CASE("a reply announcing more records than its bytes hold is refused without allocating for them", "[reply]") {
    const Bytes frame = cat({Bytes{0x81}, str("records"), tagged(0xdd, 0xffffffff, 4)});
#if TEST_UNDER_ASAN
    CHECK_FALSE(parse_reply(frame).ok());  // ASan needs its address space: no limit below
#else
    // In a child limited to 1 GiB of address space, as a machine without overcommit would be.
    const pid_t child = fork();
    REQUIRE(child >= 0);
    if (child == 0) {
        const rlimit limit{1ul << 30, 1ul << 30};
        setrlimit(RLIMIT_AS, &limit);
        try {
            _exit(parse_reply(frame).ok() ? 1 : 0);
        } catch (...) {
            _exit(2);  // std::bad_alloc: what the old reserve(count) threw here
        }
    }
    int status = 0;
    REQUIRE(waitpid(child, &status, 0) == child);
    CHECK(WIFEXITED(status));
    CHECK(WEXITSTATUS(status) == 0);  // refused (1: accepted, 2: threw)
#endif
}

}  // namespace eventctl::test

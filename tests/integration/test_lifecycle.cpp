// kmes-shimd as a service: readiness, clean shutdown, one shim per socket, stale sockets,
// and emitters that survive a shim restart (which is a KMES "reboot": sequences from 1).
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <cstring>
#include <fstream>
#include <thread>

#include <catch2/catch.hpp>

#include "kmes/kmes.h"
#include "ring_capture.hpp"
#include "support/shim_fixture.hpp"
#include "support/temp_dir.hpp"
#include "thread_state.hpp"

using namespace kmes::it;
using nlohmann::json;

namespace {

// A socket file with no listener, as a crashed shim leaves behind.
void make_stale_socket(const std::string& path) {
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::strncpy(addr.sun_path, path.c_str(), sizeof addr.sun_path - 1);
    const int fd = socket(AF_UNIX, SOCK_SEQPACKET, 0);
    REQUIRE(fd >= 0);
    REQUIRE(bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0);
    close(fd);
}

bool exists(const std::string& path) { return access(path.c_str(), F_OK) == 0; }

}  // namespace

TEST_CASE("lifecycle: SIGTERM ends the shim with exit status 0 and removes the socket file", "[lifecycle]") {
    auto shim = ShimProcess::start({.cpus = 1});
    REQUIRE(exists(shim->socket_path()));
    const int status = shim->terminate();
    INFO(shim->log());
    CHECK(describe_status(status) == "exit 0");
    CHECK_FALSE(exists(shim->socket_path()));
}

TEST_CASE("lifecycle: SIGINT ends the shim with exit status 0 while clients are attached", "[lifecycle]") {
    auto shim = ShimProcess::start({.cpus = 1});
    auto ring = attach_ring(0);  // an open attachment must not hold up the shutdown
    REQUIRE(emit("x", json::object()) == 0);
    shim->signal(SIGINT);
    const auto status = shim->wait_exit(std::chrono::seconds(10));
    REQUIRE(status);
    CHECK(describe_status(*status) == "exit 0");
}

TEST_CASE("lifecycle: a second shim on the same socket refuses to start and the first keeps serving", "[lifecycle]") {
    auto first = ShimProcess::start({.cpus = 1});
    ShimProcess second(ShimOptions{.cpus = 1, .socket_path = first->socket_path()});
    const auto status = second.wait_exit(std::chrono::seconds(10));
    REQUIRE(status);
    CHECK(describe_status(*status) != "exit 0");
    CHECK(second.log().find("already listening") != std::string::npos);
    std::string why;
    CHECK_FALSE(second.wait_notification("READY=1", std::chrono::milliseconds(0), &why));
    CHECK(exists(first->socket_path()));
    CHECK(attach_capacity(0) == KMES_DEFAULT_BUFFER_CAPACITY);  // the first shim still answers
    CHECK(emit("first.alive", json::object()) == 0);
}

TEST_CASE("lifecycle: a stale socket file without a listener is replaced", "[lifecycle]") {
    test_support::TempDir dir;
    const std::string path = dir / "kmes.sock";
    make_stale_socket(path);
    auto shim = ShimProcess::start({.cpus = 1, .socket_path = path});
    CHECK(emit("after.stale", json::object()) == 0);
    CHECK(of_type(capture_ring(0), "after.stale").size() == 1);
}

TEST_CASE("lifecycle: a file at the socket path that is not a socket is left alone and the shim refuses",
          "[lifecycle]") {
    test_support::TempDir dir;
    const std::string path = dir / "kmes.sock";
    std::ofstream(path) << "precious";
    ShimProcess shim(ShimOptions{.cpus = 1, .socket_path = path});
    const auto status = shim.wait_exit(std::chrono::seconds(10));
    REQUIRE(status);
    CHECK(describe_status(*status) != "exit 0");
    std::string content;
    std::ifstream(path) >> content;
    CHECK(content == "precious");
}

TEST_CASE("lifecycle: an emitter reconnects after a shim restart, which starts sequences and boot id anew",
          "[lifecycle]") {
    test_support::TempDir dir;
    const std::string path = dir / "kmes.sock";
    uint8_t first_boot[16], second_boot[16];
    {
        auto shim = ShimProcess::start({.cpus = 1, .socket_path = path});
        REQUIRE(kmes_boot_id(first_boot) == 0);
        REQUIRE(emit("one", json::object()) == 0);
        REQUIRE(emit("two", json::object()) == 0);
    }
    auto shim = ShimProcess::start({.cpus = 1, .socket_path = path});
    REQUIRE(emit("again", json::object()) == 0);  // same process, same emit connection object
    REQUIRE(kmes_boot_id(second_boot) == 0);
    CHECK(std::memcmp(first_boot, second_boot, 16) != 0);
    const auto events = capture_ring(0);
    REQUIRE(events.size() == 1);
    CHECK(events[0].type() == "again");
    CHECK(events[0].sequence() == 1);
}

TEST_CASE("lifecycle: a reader waiting on a ring wakes when the shim stops and next() reports the shim gone",
          "[lifecycle]") {
    auto shim = ShimProcess::start({.cpus = 1});
    auto reader = kmes::RingReader::open(0);
    REQUIRE(reader.ok());
    REQUIRE(emit("before.stop", json::object()) == 0);
    auto first = reader->next();
    REQUIRE(first.ok());
    REQUIRE(first->has_value());

    // Stop the shim once the reader sleeps (blocked in futex_wait): the shutdown retires the
    // ring (generation bump and wake-up), so the 10 s wait ends long before its timeout.
    const pid_t reader_tid = kmes::test::current_tid();
    std::thread stopper([&] {
        CHECK(kmes::test::wait_until_in_futex(reader_tid));
        CHECK(shim->terminate() == 0);
    });
    const auto started = std::chrono::steady_clock::now();
    const kmes::WaitResult woke = reader->wait(std::chrono::seconds(10));
    const auto waited = std::chrono::steady_clock::now() - started;
    stopper.join();
    CHECK(woke != kmes::WaitResult::timed_out);
    CHECK(waited < std::chrono::seconds(5));

    // The old ring is drained; re-attaching finds no shim: an error, not an endless empty ring.
    auto after = reader->next();
    REQUIRE_FALSE(after.ok());
    CHECK((after.error().code == base::ErrorCode::not_found ||
           after.error().code == base::ErrorCode::connection_refused));
}

TEST_CASE("lifecycle: a reader refuses to resume on the rings of a restarted shim (new boot id)", "[lifecycle]") {
    test_support::TempDir dir;
    const std::string path = dir / "kmes.sock";
    auto first = ShimProcess::start({.cpus = 1, .socket_path = path});
    auto reader = kmes::RingReader::open(0);
    REQUIRE(reader.ok());
    REQUIRE(emit("first.boot", json::object()) == 0);
    REQUIRE(reader->next().ok());
    REQUIRE(first->terminate() == 0);
    first.reset();
    auto second = ShimProcess::start({.cpus = 1, .socket_path = path});
    REQUIRE(emit("second.boot", json::object()) == 0);  // sequence 1 again

    // Resuming "after sequence 1" on the new boot would skip this event silently.
    auto next = reader->next();
    REQUIRE_FALSE(next.ok());
    CHECK(next.error().code == base::ErrorCode::stale);
}

namespace {

// A shim (one ring) started with KMES_TEST_THROW_AT=<sync_point> in its environment.
std::unique_ptr<ShimProcess> shim_throwing_at(const char* sync_point) {
    setenv("KMES_TEST_THROW_AT", sync_point, 1);
    struct Unset {
        ~Unset() { unsetenv("KMES_TEST_THROW_AT"); }
    } unset;
    return ShimProcess::start(ShimOptions{.cpus = 1});
}

}  // namespace

TEST_CASE("lifecycle: an exception in the acceptor stops the shim cleanly with exit status 1", "[lifecycle]") {
    // base/thread_boundary.hpp: no exception leaves a thread (std::terminate would leave the
    // socket file behind and skip the audit source's undo); the acceptor cannot be done without.
    auto shim = shim_throwing_at("Shim::accept_loop:accepted");
    uint64_t capacity = 0;
    kmes_attach(0, &capacity);  // a connection: the acceptor throws when it comes
    const auto status = shim->wait_exit(std::chrono::seconds(10));
    INFO(shim->log());
    REQUIRE(status);
    CHECK((WIFEXITED(*status) && WEXITSTATUS(*status) == 1));
    CHECK_THAT(shim->log(), Catch::Contains("kmes-shimd acceptor stopped on an unexpected error: test: thrown at sync point "
                                            "Shim::accept_loop:accepted"));
    CHECK_THAT(shim->log(), Catch::Contains("stopped after a failure"));
    CHECK_FALSE(exists(shim->socket_path()));  // the orderly stop ran
}

TEST_CASE("lifecycle: an exception serving one connection ends that connection only", "[lifecycle]") {
    auto shim = shim_throwing_at("Shim::serve:connected");
    uint64_t capacity = 0;
    CHECK(kmes_attach(0, &capacity) == -1);  // the connection closed under the request
    CHECK(kmes_attach(0, &capacity) == -1);  // and the next one: every connection throws here
    INFO(shim->log());
    CHECK(shim->running());
    CHECK_THAT(shim->log(), Catch::Contains("kmes-shimd connection stopped on an unexpected error"));
    CHECK(shim->terminate() == 0);
}

TEST_CASE("lifecycle: a daemon a test started does not outlive the test's death", "[lifecycle]") {
    // A test killed by a sanitizer report or meson's timeout must not leave kmes-shimd, eventd
    // or auditd running (an orphaned shim or auditd keeps the machine's audit daemon role).
    // spawn_tied_to_caller's child gets SIGTERM when the spawning thread ends. Played out in a
    // forked "test" that is itself a child subreaper, so the orphan is reparented to it and its
    // end can be observed with waitpid.
    int report[2];
    REQUIRE(pipe(report) == 0);
    const pid_t harness = fork();
    REQUIRE(harness >= 0);
    if (harness == 0) {
        close(report[0]);
        prctl(PR_SET_CHILD_SUBREAPER, 1);
        const pid_t doomed_test = fork();
        if (doomed_test == 0) {
            char sleep_path[] = "/bin/sleep";
            char seconds[] = "60";
            char* argv[] = {sleep_path, seconds, nullptr};
            const pid_t daemon = spawn_tied_to_caller(argv, environ, "/dev/null");
            (void)!write(report[1], &daemon, sizeof daemon);
            _exit(0);  // the test dies, its daemon still running
        }
        close(report[1]);
        int status = 0;
        waitpid(doomed_test, &status, 0);
        // The daemon is now this subreaper's child: its end, and how, is ours to see.
        const pid_t ended = wait(&status);
        _exit(ended > 0 && WIFSIGNALED(status) && WTERMSIG(status) == SIGTERM ? 0 : 1);
    }
    close(report[1]);
    pid_t daemon = 0;
    REQUIRE(read(report[0], &daemon, sizeof daemon) == sizeof daemon);
    close(report[0]);
    int status = 0;
    // Without the tie, sleep 60 would hold this wait for a minute and exit 0: the check fails.
    REQUIRE(waitpid(harness, &status, 0) == harness);
    CHECK(WIFEXITED(status));
    CHECK(WEXITSTATUS(status) == 0);
    CHECK(kill(daemon, 0) != 0);
}

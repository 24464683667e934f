// [tools]: kmes-emit and kmes-tail as an operator runs them — their options against a real
// kmes-shimd, and their exit statuses: 0 done, 1 the shim failed them (or is not there), 2 a
// usage error (issue 25 item 7).
#include <sys/wait.h>

#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "ring_capture.hpp"
#include "support/shim_fixture.hpp"
#include "support/temp_dir.hpp"

using namespace kmes::it;
using nlohmann::json;

namespace {

struct ToolRun {
    int exit_code = -1;
    std::string out;
    std::string err;
};

std::string tool(const char* variable) {
    const char* path = std::getenv(variable);
    if (!path || !*path) throw std::runtime_error(std::string(variable) + " is not set: run the tests through `meson test`");
    return path;
}

// Run `command` (a shell line; the tool's path first) with `socket` as KMES_SOCKET.
ToolRun run_tool(const test_support::TempDir& dir, const std::string& socket, const std::string& command) {
    const std::string err_file = dir / "stderr";
    const std::string line = "KMES_SOCKET='" + socket + "' " + command + " 2>'" + err_file + "'";
    ToolRun r;
    FILE* pipe = popen(line.c_str(), "r");
    REQUIRE(pipe != nullptr);
    char buffer[4096];
    for (size_t n; (n = fread(buffer, 1, sizeof buffer, pipe)) > 0;) r.out.append(buffer, n);
    const int status = pclose(pipe);
    r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    std::ifstream in(err_file);
    r.err.assign(std::istreambuf_iterator<char>(in), {});
    return r;
}

std::vector<json> json_lines(const std::string& text) {
    std::vector<json> out;
    std::istringstream in(text);
    for (std::string line; std::getline(in, line);)
        if (!line.empty()) out.push_back(json::parse(line));
    return out;
}

}  // namespace

TEST_CASE("kmes-emit and kmes-tail: options, payloads and exit statuses", "[tools]") {
    auto shim = ShimProcess::start({.cpus = 1});
    test_support::TempDir dir;
    const std::string emit = tool("KMES_EMIT"), tail = tool("KMES_TAIL");
    const std::string socket = shim->socket_path();
    auto run = [&](const std::string& command) { return run_tool(dir, socket, command); };

    // Emitting: JSON and msgpack payloads, counts, batches, the summary of -v.
    ToolRun r = run(emit + " --type tools.one --json '{\"x\":3}'");
    INFO(r.err);
    CHECK(r.exit_code == 0);
    CHECK(r.out.empty());  // quiet unless --verbose
    const std::string msgpack = dir / "payload.bin";
    {
        const auto bytes = json::to_msgpack(json{{"raw", true}});
        std::ofstream(msgpack, std::ios::binary).write(reinterpret_cast<const char*>(bytes.data()), bytes.size());
    }
    CHECK(run(emit + " -t tools.raw --msgpack '" + msgpack + "'").exit_code == 0);
    r = run(emit + " -t tools.many -n 5 --batch 2 -v");
    CHECK(r.exit_code == 0);
    CHECK_THAT(r.err, Catch::Contains("5"));  // the summary counts them

    // Reading them back: everything still in the ring, as JSON lines, then exit.
    r = run(tail + " --from-start --json");
    INFO(r.err);
    REQUIRE(r.exit_code == 0);
    const auto events = json_lines(r.out);
    std::vector<std::string> types;
    for (const json& e : events)
        if (e.contains("type")) types.push_back(e["type"]);
    CHECK(types == std::vector<std::string>{"tools.one", "tools.raw", "tools.many", "tools.many", "tools.many",
                                            "tools.many", "tools.many"});
    CHECK(events.at(0)["payload"] == json{{"x", 3}});
    CHECK(events.at(1)["payload"] == json{{"raw", true}});
    // -n stops after N events; --info describes the rings.
    CHECK(json_lines(run(tail + " --from-start --json -n 2").out).size() == 2);
    r = run(tail + " --info --json");
    REQUIRE(r.exit_code == 0);
    const auto rings = json_lines(r.out);
    REQUIRE(rings.size() == 1);
    CHECK(rings[0]["cpu_id"] == 0);
    CHECK(rings[0]["write_pos"].get<uint64_t>() > 0);

    // Usage errors: exit 2, a reason on stderr, nothing emitted.
    for (const std::string& bad : {emit + " --json '{}'",                            // no --type
                                   emit + " -t tools.bad --json '{not json'",         // invalid --json
                                   emit + " -t tools.bad --msgpack " + (dir / "absent.bin").native(),
                                   emit + " -t tools.bad --no-such-option",
                                   tail + " --no-such-option"}) {
        INFO(bad);
        r = run(bad);
        CHECK(r.exit_code == 2);
        CHECK_FALSE(r.err.empty());
    }
    CHECK(json_lines(run(tail + " --from-start --json").out).size() == events.size());

    // The shim refuses: exit 1 with the errno's name (an event larger than the limit).
    r = run(emit + " -t tools.huge --json '{\"s\":\"" + std::string(70000, 'x') + "\"}'");
    CHECK(r.exit_code == 1);
    CHECK_THAT(r.err, Catch::Contains("ENOSPC") && Catch::Contains("larger than MaxEventSize"));
    // A reserved type (issue 39): EPERM, and why — the product's namespace, not a missing group.
    r = run(emit + " -t audit.syscall --json '{\"uid\":0,\"exe\":\"/usr/bin/sudo\"}'");
    CHECK(r.exit_code == 1);
    CHECK_THAT(r.err, Catch::Contains("EPERM") && Catch::Contains("only eventd and kmes-shimd write"));

    // No shim at all: exit 1, saying where it looked.
    const std::string nowhere = dir / "no-shim.sock";
    r = run_tool(dir, nowhere, emit + " -t tools.x");
    CHECK(r.exit_code == 1);
    CHECK_THAT(r.err, Catch::Contains("no-shim.sock"));
    r = run_tool(dir, nowhere, tail + " --from-start");
    CHECK(r.exit_code == 1);
    CHECK_FALSE(r.err.empty());
}

// Issue 39 part 5: an emitter's type and payload reach an administrator's terminal through
// kmes-tail. Escape sequences (OSC title, CSI as C1), CR/LF (a forged line), a right-to-left
// override and bytes that are not UTF-8 come out escaped, in the text and the JSON view alike.
TEST_CASE("kmes-tail shows no raw control, C1 or bidi character of an emitter's event", "[tools]") {
    auto shim = ShimProcess::start({.cpus = 1});
    test_support::TempDir dir;
    const std::string tail = tool("KMES_TAIL");
    const std::string type = "evil\x1b]0;owned\x07.\xc2\x9b" "2J\r\n2026-01-01T00:00:00Z cpu=0 forged\xe2\x80\xae.x";
    const json payload = {{"exe", "/tmp/\xe2\x80\xae" "hs.exe\x1b[31m"}, {"c1", "\xc2\x85"}};
    REQUIRE(emit(type, payload) == 0);
    for (const std::string& mode : {std::string(), std::string(" --json")}) {
        INFO("kmes-tail" << mode);
        const ToolRun r = run_tool(dir, shim->socket_path(), tail + " --from-start" + mode);
        REQUIRE(r.exit_code == 0);
        std::istringstream lines(r.out);
        size_t n = 0;
        for (std::string line; std::getline(lines, line); ++n) {
            INFO(line);
            for (const char c : line) CHECK((static_cast<uint8_t>(c) >= 0x20 && c != 0x7f));
            CHECK(line.find("\xc2\x9b") == std::string::npos);
            CHECK(line.find("\xc2\x85") == std::string::npos);
            CHECK(line.find("\xe2\x80\xae") == std::string::npos);
        }
        CHECK(n == 1);  // one event, one line: the CR/LF forged none
        CHECK_THAT(r.out, Catch::Contains("\\u202e"));
    }
}

// The audit source's pure parts (issue 24; docs/AUDIT.md): audit.log lines (what auditd writes
// for the records the kernel sends) reassembled by libauparse into events and mapped to KMES
// events; and the rules file parser with its undo. The kernel half is tests/integration
// test_audit.cpp.
#include <catch2/catch.hpp>

#include <optional>
#include <string>
#include <vector>

#include "audit/audit_assembler.hpp"
#include "audit/audit_rules.hpp"

namespace {

using kmes::audit::AuditAssembler;
using nlohmann::json;

// An event as the shim writes it, its msgpack payload read back as a tree to check.
struct AuditEvent {
    std::string type;
    json payload;
    std::optional<uint32_t> uid, euid;
    std::optional<pid_t> pid;
};

AuditEvent read_back(kmes::audit::AuditEvent e) {
    json payload = json::from_msgpack(e.payload);
    // No key twice: it would read back as one, and the tree would encode shorter.
    CHECK(json::to_msgpack(payload).size() == e.payload.size());
    return {std::move(e.type), std::move(payload), e.uid, e.euid, e.pid};
}

std::vector<AuditEvent> assemble(const std::vector<std::string>& lines, kmes::audit::MappingLimits limits = {}) {
    std::vector<AuditEvent> events;
    AuditAssembler assembler([&](kmes::audit::AuditEvent e) { events.push_back(read_back(std::move(e))); }, 2, {},
                             limits);
    for (const std::string& line : lines) assembler.feed_line(line);
    assembler.flush();
    return events;
}

// One execve as Debian 12's kernel logs it (argument 1 hex-encoded: it holds a space).
const std::vector<std::string> kExecve = {
    R"(type=SYSCALL msg=audit(1700000000.123:42): arch=c000003e syscall=59 success=yes exit=0 a0=55d5 a1=55d6 a2=55d7 a3=0 items=2 ppid=100 pid=101 auid=1000 uid=0 gid=0 euid=0 suid=0 fsuid=0 egid=0 sgid=0 fsgid=0 tty=pts0 ses=3 comm="true" exe="/usr/bin/true" subj=unconfined key="exec")",
    R"(type=EXECVE msg=audit(1700000000.123:42): argc=2 a0="/bin/true" a1=68656C6C6F20776F726C64)",
    R"(type=CWD msg=audit(1700000000.123:42): cwd="/home/alice")",
    R"(type=PATH msg=audit(1700000000.123:42): item=0 name="/bin/true" inode=1234 dev=fe:01 mode=0100755 ouid=0 ogid=0 rdev=00:00 nametype=NORMAL cap_fp=0 cap_fi=0 cap_fe=0 cap_fver=0 cap_frootid=0)",
    R"(type=PATH msg=audit(1700000000.123:42): item=1 name="/lib64/ld-linux-x86-64.so.2" inode=99 dev=fe:01 mode=0100755 ouid=0 ogid=0 rdev=00:00 nametype=NORMAL cap_fp=0 cap_fi=0 cap_fe=0 cap_fver=0 cap_frootid=0)",
    R"(type=PROCTITLE msg=audit(1700000000.123:42): proctitle=2F62696E2F7472756500)",
};

}  // namespace

TEST_CASE("an execve's records become one audit.syscall event with its fields decoded", "[audit]") {
    std::vector<std::string> lines = kExecve;
    lines.push_back("type=EOE msg=audit(1700000000.123:42): ");
    const auto events = assemble(lines);
    REQUIRE(events.size() == 1);
    const AuditEvent& e = events[0];
    CHECK(e.type == "audit.syscall");
    const json& p = e.payload;
    CHECK(p["serial"] == 42);
    CHECK(p["audit_time"] == int64_t{1700000000123000000});
    CHECK(p["syscall"] == "execve");
    CHECK(p["syscall_nr"] == 59);
    CHECK(p["arch"] == "x86_64");
    CHECK(p["success"] == "yes");
    CHECK(p["exit"] == 0);
    CHECK(p["pid"] == 101);
    CHECK(p["ppid"] == 100);
    CHECK(p["uid"] == 0);
    CHECK(p["uid_name"] == "root");
    CHECK(p["auid"] == 1000);
    CHECK(p["ses"] == 3);
    CHECK(p["comm"] == "true");
    CHECK(p["exe"] == "/usr/bin/true");
    CHECK(p["key"] == "exec");
    CHECK(p["a0"] == "55d5");  // syscall arguments stay hex text
    CHECK(p["argv"] == json::array({"/bin/true", "hello world"}));
    CHECK(p["cwd"] == "/home/alice");
    REQUIRE(p["paths"].size() == 2);
    CHECK(p["paths"][0]["name"] == "/bin/true");
    CHECK(p["paths"][0]["mode"].is_string());  // octal text, never read as a decimal number
    CHECK(p["paths"][1]["inode"] == 99);
    CHECK(p["proctitle"].get<std::string>().rfind("/bin/true", 0) == 0);
    CHECK(p["record_types"] == json::array({"SYSCALL", "EXECVE", "CWD", "PATH", "PATH", "PROCTITLE"}));
    CHECK_FALSE(p.contains("type"));  // the record's own type field: the event type says it
    CHECK(e.uid == 0u);
    CHECK(e.euid == 0u);
}

// Issue 39 part 2: the kernel spreads a long argument list over several EXECVE records and a
// long argument over pieces (aN_len, aN[0], aN[1], …, each quoted or hex on its own).
namespace {

std::string hex_of(std::string_view bytes) {
    static const char* digits = "0123456789ABCDEF";
    std::string out;
    for (const char c : bytes) {
        out += digits[static_cast<uint8_t>(c) >> 4];
        out += digits[static_cast<uint8_t>(c) & 15];
    }
    return out;
}

std::vector<std::string> exec_event(const std::vector<std::string>& execve_records) {
    std::vector<std::string> lines = {kExecve[0]};
    for (const std::string& r : execve_records) lines.push_back("type=EXECVE msg=audit(1700000000.123:42): " + r);
    lines.push_back("type=EOE msg=audit(1700000000.123:42): ");
    return lines;
}

}  // namespace

TEST_CASE("argv: every EXECVE record and every piece of a split argument, whatever their order", "[audit]") {
    const std::string long_arg(9000, 'x');
    const auto events = assemble(exec_event({
        // The kernel logs a split argument's pieces in hex, and aN_len as the hex length.
        "argc=5 a0=\"/bin/true\" a1=\"one\" a2_len=18008 a2[1]=" + hex_of(long_arg.substr(4500) + "TAIL"),
        "a2[0]=" + hex_of(long_arg.substr(0, 4500)) + " a3=" + hex_of("two words"),
        "a4=\"EVIL\"",
    }));
    REQUIRE(events.size() == 1);
    const json& p = events[0].payload;
    CHECK(p["argc"] == 5);
    CHECK(p["argv"] == json::array({"/bin/true", "one", long_arg + "TAIL", "two words", "EVIL"}));
    CHECK_FALSE(p.contains("argv_truncated"));
}

TEST_CASE("argv: beyond Audit.ArgvMaxBytes, or with records missing, the cut is declared with its counts",
          "[audit]") {
    const std::string big(5000, 'y');
    SECTION("over the limit: whole arguments up to it, the rest counted") {
        const auto events = assemble(exec_event({"argc=4 a0=\"/bin/true\" a1=\"" + big + "\" a2=\"EVIL\" a3=\"z\""}),
                                     kmes::audit::MappingLimits{4096});
        REQUIRE(events.size() == 1);
        const json& p = events[0].payload;
        CHECK(p["argc"] == 4);
        CHECK(p["argv"] == json::array({"/bin/true"}));
        CHECK(p["argv_truncated"] == true);
        CHECK(p["argv_cut_args"] == 3);
        CHECK(p["argv_cut_bytes"] == 5000 + 4 + 1);
    }
    SECTION("under the ring's bound too: arguments cut so that the event can be written, with counts") {
        // A ring of 64 KiB takes events of at most 32 KiB: 15 arguments of 4 KiB (60 KiB, under
        // ArgvMaxBytes) would make an event the ring drops whole.
        std::vector<std::string> args = {"a0=\"/bin/true\""};
        for (int i = 1; i <= 15; ++i) args.push_back("a" + std::to_string(i) + "=\"" + std::string(4096, 'q') + "\"");
        std::string record = "argc=16";
        for (const std::string& a : args) record += " " + a;
        constexpr uint64_t kMaxEvent = 32 * 1024 - 64;
        std::vector<kmes::audit::AuditEvent> raw;
        AuditAssembler assembler(
            [&](kmes::audit::AuditEvent e) { raw.push_back(std::move(e)); }, 2, {},
            kmes::audit::MappingLimits{kmes::audit::kDefaultArgvMaxBytes, [] { return kMaxEvent; }});
        for (const std::string& line : exec_event({record})) assembler.feed_line(line);
        assembler.flush();
        REQUIRE(raw.size() == 1);
        CHECK(raw[0].type.size() + raw[0].payload.size() <= kMaxEvent);
        const json p = read_back(raw[0]).payload;
        CHECK(p["argc"] == 16);
        REQUIRE(p["argv"].size() == 8);  // /bin/true and 7 × 4 KiB: the rest of the event takes the remainder
        CHECK(p["argv"][7] == std::string(4096, 'q'));
        CHECK(p["argv_truncated"] == true);
        CHECK(p["argv_cut_args"] == 8);
        CHECK(p["argv_cut_bytes"] == 8 * 4096);
        // What no cut of the arguments brings under the bound is written as a declared loss.
        const kmes::audit::AuditEvent lost = kmes::audit::oversized_event(raw[0], 1000);
        CHECK(lost.type == "audit.lost");
        CHECK(lost.lost_records == 2);
        const json l = json::from_msgpack(lost.payload);
        CHECK(l["source"] == "size");
        CHECK(l["records"] == 2);
        CHECK(l["serial"] == 42);
        CHECK(l["event_type"] == "audit.syscall");
        CHECK(l["event_bytes"] == raw[0].type.size() + raw[0].payload.size());
        CHECK(l["max_event_bytes"] == 1000);
    }
    SECTION("a record the kernel did not deliver: argc says how many are missing") {
        const auto events = assemble(exec_event({"argc=4 a0=\"/bin/true\" a1=\"one\""}));
        REQUIRE(events.size() == 1);
        const json& p = events[0].payload;
        CHECK(p["argv"] == json::array({"/bin/true", "one"}));
        CHECK(p["argv_truncated"] == true);
        CHECK(p["argv_cut_args"] == 2);
    }
    SECTION("a piece missing from a split argument: that argument is not whole, so it is cut") {
        const auto events =
            assemble(exec_event({"argc=2 a0=\"/bin/true\" a1_len=20 a1[0]=\"0123456789\""}));
        REQUIRE(events.size() == 1);
        const json& p = events[0].payload;
        CHECK(p["argv"] == json::array({"/bin/true"}));
        CHECK(p["argv_cut_args"] == 1);
        CHECK(p["argv_cut_bytes"] == 20);
    }
}

// Issue 40 item 1: argc and an argument's index are the record's word, not a loop bound. Both
// inputs below ran the cut-bytes loop once per declared argument — 10^18 and 2^40 rounds.
TEST_CASE("argv: a count no record backs is counted, not walked: argc=10^18 or an index of 2^40 maps at once",
          "[audit]") {
    SECTION("argc far beyond the arguments the records hold") {
        const auto events = assemble(exec_event(
            {"argc=1000000000000000000 a0=\"/bin/true\" a1=\"one\" a3=\"xyz\" a7_len=20 a7[0]=\"0123456789\""}));
        REQUIRE(events.size() == 1);
        const json& p = events[0].payload;
        CHECK(p["argc"] == uint64_t{1000000000000000000});
        CHECK(p["argv"] == json::array({"/bin/true", "one"}));
        CHECK(p["argv_truncated"] == true);
        CHECK(p["argv_cut_args"] == uint64_t{1000000000000000000} - 2);
        CHECK(p["argv_cut_bytes"] == 3 + 20);  // a3's bytes and a7's declared length
    }
    SECTION("no argc, and an argument numbered 2^40 - 1") {
        const auto events = assemble(exec_event({"a0=\"/bin/true\" a1099511627775=\"last\""}));
        REQUIRE(events.size() == 1);
        const json& p = events[0].payload;
        CHECK(p["argc"] == uint64_t{1} << 40);
        CHECK(p["argv"] == json::array({"/bin/true"}));
        CHECK(p["argv_cut_args"] == (uint64_t{1} << 40) - 1);
        CHECK(p["argv_cut_bytes"] == 4);
    }
}

// Issue 39 part 6: what the kernel recorded, byte for byte — not auparse's "\ooo" text.
TEST_CASE("exact strings: a real ESC and the text \\033 stay distinct; bytes that are not UTF-8 are bin",
          "[audit]") {
    auto with_exe = [](const std::string& exe_field) {
        std::vector<std::string> lines = exec_event({"argc=1 a0=\"x\""});
        const std::string from = "exe=\"/usr/bin/true\"";
        lines[0].replace(lines[0].find(from), from.size(), "exe=" + exe_field);
        const auto events = assemble(lines);
        REQUIRE(events.size() == 1);
        return events[0].payload["exe"];
    };
    const json real_esc = with_exe(hex_of("/tmp/\x1b[31mx"));
    const json literal = with_exe(R"("/tmp/\033[31mx")");
    CHECK(real_esc == "/tmp/\x1b[31mx");
    CHECK(literal == "/tmp/\\033[31mx");
    CHECK(real_esc != literal);
    const json invalid = with_exe(hex_of("/tmp/\xff\xfe"));
    REQUIRE(invalid.is_binary());
    const std::vector<uint8_t> bytes(invalid.get_binary().begin(), invalid.get_binary().end());
    CHECK(bytes == std::vector<uint8_t>({'/', 't', 'm', 'p', '/', 0xff, 0xfe}));
}

TEST_CASE("proctitle: NULs between arguments shown as spaces; at the kernel's 128-byte cap, marked cut", "[audit]") {
    const std::string arg(200, 'p');
    std::vector<std::string> lines = exec_event({"argc=2 a0=\"/bin/true\" a1=\"" + arg + "\""});
    const std::string title = std::string("/bin/true") + '\0' + arg;
    lines.insert(lines.end() - 1, "type=PROCTITLE msg=audit(1700000000.123:42): proctitle=" + hex_of(title.substr(0, 128)));
    const auto events = assemble(lines);
    REQUIRE(events.size() == 1);
    const json& p = events[0].payload;
    CHECK(p["proctitle"] == "/bin/true " + arg.substr(0, 118));
    CHECK(p["proctitle_truncated"] == true);
    CHECK(p["proctitle_cut_bytes"] == title.size() - 128);
}

TEST_CASE("events end at PROCTITLE without EOE, interleave by serial, and stand alone below 1300", "[audit]") {
    // Two events interleaved record by record, neither with EOE, then a user message.
    std::vector<std::string> a = kExecve, b = kExecve;
    for (auto& line : b) line.replace(line.find(":42)"), 4, ":43)");
    std::vector<std::string> lines;
    for (size_t i = 0; i < a.size(); ++i) {
        lines.push_back(a[i]);
        lines.push_back(b[i]);
    }
    lines.push_back(
        R"(type=USER_LOGIN msg=audit(1700000001.000:44): pid=7 uid=0 auid=1000 ses=3 msg='op=login id=1000 exe="/usr/sbin/sshd" hostname=? addr=10.0.0.1 terminal=ssh res=success')");
    const auto events = assemble(lines);
    REQUIRE(events.size() == 3);
    CHECK(events[0].payload["serial"] == 42);
    CHECK(events[1].payload["serial"] == 43);
    CHECK(events[0].payload["argv"] == events[1].payload["argv"]);
    CHECK(events[2].type == "audit.user_login");
    CHECK(events[2].payload["auid_name"].is_string());
    CHECK(events[2].payload["pid"] == 7);
}

TEST_CASE("a user message keeps its free text; a message of fields does not repeat them", "[audit]") {
    const auto events = assemble({
        R"(type=USER msg=audit(1700000000.100:10): pid=1 uid=0 auid=4294967295 ses=4294967295 msg='kmes marker 42 exe="/usr/sbin/auditctl" hostname=? addr=? terminal=? res=success')",
        R"(type=USER_START msg=audit(1700000000.200:11): pid=2 uid=0 auid=0 ses=1 msg='op=PAM:session_open grantors=pam_unix acct="nobody" exe="/usr/bin/su" hostname=? addr=? terminal=pts/0 res=success')",
    });
    REQUIRE(events.size() == 2);
    CHECK(events[0].type == "audit.user");
    CHECK(events[0].payload["msg"] == R"(kmes marker 42 exe="/usr/sbin/auditctl" hostname=? addr=? terminal=? res=success)");
    CHECK(events[0].payload["exe"] == "/usr/sbin/auditctl");
    CHECK(events[1].type == "audit.user_start");
    CHECK_FALSE(events[1].payload.contains("msg"));
    CHECK(events[1].payload["acct"] == "nobody");
}

TEST_CASE("a time beyond what nanoseconds hold is nil, not an overflow", "[audit]") {
    const auto events =
        assemble({"type=USER_CMD msg=audit(1700000000400.000:9): pid=1 uid=0 auid=0 ses=1 msg='cmd=6C73 res=success'"});
    REQUIRE(events.size() == 1);
    CHECK(events[0].payload["audit_time"].is_null());
    CHECK(events[0].payload["serial"] == 9);
}

TEST_CASE("a malformed record is refused before reassembly and takes no other event with it", "[audit]") {
    std::vector<std::pair<int, std::string>> refused;
    std::vector<AuditEvent> events;
    AuditAssembler assembler([&](kmes::audit::AuditEvent e) { events.push_back(read_back(std::move(e))); }, 2,
                             [&](int type, std::string_view text) { refused.emplace_back(type, std::string(text)); });
    assembler.feed_line("type=SYSCALL msg=garbage without a timestamp");
    assembler.feed_line("not an audit line at all");
    // From the kernel: a record whose text lacks the header, and one with a broken serial,
    // between the records of a good event.
    assembler.feed_record(1300, kExecve[0].substr(kExecve[0].find("msg=") + 4));
    assembler.feed_record(1309, "argc=2 a0=\"x\"");
    assembler.feed_record(1307, "audit(1700000000.123:4x2): cwd=\"/\"");
    for (size_t i = 1; i < kExecve.size(); ++i) {
        const std::string& line = kExecve[i];
        const int type = line.rfind("type=EXECVE", 0) == 0 ? 1309 : line.rfind("type=CWD", 0) == 0 ? 1307
                         : line.rfind("type=PATH", 0) == 0 ? 1302 : 1327;
        assembler.feed_record(type, line.substr(line.find("msg=") + 4));
    }
    assembler.flush();
    REQUIRE(refused.size() == 4);
    CHECK(refused[0].first == 0);
    CHECK(refused[2] == std::pair<int, std::string>{1309, "argc=2 a0=\"x\""});
    CHECK(refused[3].first == 1307);
    REQUIRE(events.size() == 1);
    CHECK(events[0].type == "audit.syscall");
    CHECK(events[0].payload["serial"] == 42);
    CHECK(events[0].payload["argv"] == json::array({"/bin/true", "hello world"}));
    CHECK(events[0].payload["cwd"] == "/home/alice");  // the broken CWD never joined it
    CHECK_FALSE(events[0].payload.contains("incomplete"));
}

TEST_CASE("an event cut by the timeout is marked incomplete; its late records are counted, not a new event",
          "[audit]") {
    std::vector<AuditEvent> events;
    AuditAssembler assembler([&](kmes::audit::AuditEvent e) { events.push_back(read_back(std::move(e))); }, 1);
    // The SYSCALL of serial 42, then the time runs out (the records' time is long past, so
    // age() hands the event on at once, as it would 1 s after a live record).
    assembler.feed_line(kExecve[0]);
    assembler.age();
    REQUIRE(events.size() == 1);
    CHECK(events[0].type == "audit.syscall");
    CHECK(events[0].payload["incomplete"] == true);
    CHECK(events[0].payload["record_types"] == json::array({"SYSCALL"}));
    // The rest arrives: EXECVE, CWD, two PATHs, PROCTITLE and EOE — five records lost to their event.
    for (size_t i = 1; i < kExecve.size(); ++i) assembler.feed_line(kExecve[i]);
    assembler.feed_line("type=EOE msg=audit(1700000000.123:42): ");
    // A whole event after it, untouched.
    std::vector<std::string> next = kExecve;
    for (auto& line : next) line.replace(line.find(":42)"), 4, ":43)");
    for (const auto& line : next) assembler.feed_line(line);
    assembler.flush();
    REQUIRE(events.size() == 3);
    const json& lost = events[1].payload;
    CHECK(events[1].type == "audit.lost");
    CHECK(lost["source"] == "reassembly");
    CHECK(lost["records"] == 5);
    CHECK(lost["serial"] == 42);
    CHECK(lost["record_types"] == json::array({"EXECVE", "CWD", "PATH", "PATH", "PROCTITLE"}));
    CHECK(lost["noticed_time"].is_number_integer());
    CHECK(events[2].type == "audit.syscall");
    CHECK(events[2].payload["serial"] == 43);
    CHECK_FALSE(events[2].payload.contains("incomplete"));
}

TEST_CASE("a record after its event's end is counted as late; a late EOE alone counts nothing", "[audit]") {
    std::vector<AuditEvent> events;
    AuditAssembler assembler([&](kmes::audit::AuditEvent e) { events.push_back(read_back(std::move(e))); }, 1);
    for (const auto& line : kExecve) assembler.feed_line(line);  // ends at PROCTITLE
    assembler.feed_line("type=EOE msg=audit(1700000000.123:42): ");  // auparse folds it in
    assembler.feed_line(kExecve[3]);                                 // a PATH out of order
    assembler.flush();
    REQUIRE(events.size() == 2);
    CHECK(events[0].type == "audit.syscall");
    CHECK(events[1].type == "audit.lost");
    CHECK(events[1].payload["records"] == 1);
    CHECK(events[1].payload["record_types"] == json::array({"PATH"}));
}

TEST_CASE("a record that stands alone is complete without EOE", "[audit]") {
    const auto events = assemble({
        R"(type=AVC msg=audit(1700000000.500:50): avc:  denied  { read } for  pid=1 comm="x" name="y" dev="sda1" ino=3 scontext=a tcontext=b tclass=file permissive=0)",
        R"(type=ANOM_PROMISCUOUS msg=audit(1700000000.600:51): dev=eth0 prom=256 old_prom=0 auid=1000 uid=0 gid=0 ses=2)",
    });
    REQUIRE(events.size() == 2);
    CHECK(events[0].type == "audit.avc");
    CHECK(events[1].type == "audit.anom_promiscuous");
    for (const auto& e : events) CHECK_FALSE(e.payload.contains("incomplete"));
}

TEST_CASE("rules files: auditctl's rule lines with their undo; -D only first, -e refused, with the line", "[audit]") {
    auto parsed = kmes::audit::parse_rules(
        "# comment\n\n-b 320\n--backlog_wait_time 0\n"
        "-a always,exit -F arch=b64 -S execve -k \"exec\"  # trailing\n"
        "-w /etc/passwd -p wa -k identity\n",
        "r.rules");
    REQUIRE(parsed.ok());
    CHECK(parsed->backlog_limit == 320u);
    CHECK(parsed->backlog_wait_time == 0u);
    REQUIRE(parsed->rules.size() == 2);
    CHECK(parsed->rules[0].line == 5);
    CHECK(parsed->rules[0].args ==
          std::vector<std::string>{"-a", "always,exit", "-F", "arch=b64", "-S", "execve", "-k", "exec"});
    CHECK(kmes::audit::inverse_rule(parsed->rules[0].args)[0] == "-d");
    CHECK(kmes::audit::inverse_rule(parsed->rules[1].args) ==
          std::vector<std::string>{"-W", "/etc/passwd", "-p", "wa", "-k", "identity"});
    CHECK_FALSE(parsed->delete_existing);
    auto first = kmes::audit::parse_rules("# as auditd's files begin\n-D\n-b 8192\n-w /x -p r\n", "r.rules");
    REQUIRE(first.ok());
    CHECK(first->delete_existing);
    CHECK(first->rules.size() == 1);
    auto d = kmes::audit::parse_rules("-w /x -p r\n-D\n", "r.rules");
    REQUIRE_FALSE(d.ok());
    CHECK(d.error().message == "r.rules line 2: '-D' must come before the first rule (it would delete the file's own)");
    CHECK_FALSE(kmes::audit::parse_rules("-e 2\n", "r.rules").ok());
    CHECK_FALSE(kmes::audit::parse_rules("-l\n", "r.rules").ok());
    CHECK_FALSE(kmes::audit::parse_rules("-b lots\n", "r.rules").ok());
}

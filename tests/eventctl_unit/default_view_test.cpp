// The default pretty view of whole records as eventctl prints them (issue 24 item 5): the time,
// the type, the subject, then the payload's fields, in lines no wider than the terminal — for
// records built the way eventd sends them (every header field, then the payload map; the audit
// payload is what kmes-shimd's mapping makes of docs/AUDIT.md's execve, keys in its order).
#include <catch2/catch.hpp>

#include <string>
#include <utility>
#include <vector>

#include "base/guid_text.hpp"
#include "base/identity_guid.hpp"
#include "eventctl/display_width.hpp"
#include "msgpack_bytes.hpp"
#include "wrapped_lines.hpp"
#include "writer_output.hpp"

namespace eventctl::test {
namespace {

using Fields = std::vector<std::pair<std::string, Bytes>>;

const Bytes kNil{0xc0};

Bytes map_of_fields(const Fields& fields) {
    Bytes out = map_header(static_cast<uint32_t>(fields.size()));
    for (const auto& [k, v] : fields) out = cat({out, str(k), v});
    return out;
}

Bytes u64(uint64_t v) { return v < 128 ? Bytes{static_cast<uint8_t>(v)} : tagged(0xcf, v, 8); }

Bytes token(uint32_t uid) { return str(base::guid_text(base::token_guid(uid))); }

// A record as eventd sends it: the header fields in the store's column order, then the payload's.
// `true_token`, `effective_token`: a token GUID string, or nil.
Bytes whole_record(std::string_view event_type, const Bytes& true_token, const Bytes& effective_token,
                   const Fields& payload, const Bytes& origin_class = Bytes{0x04}) {
    Fields fields = {{"boot_id", str("0c1f2e3d-4b5a-6978-8796-a5b4c3d2e1f0")},
                     {"timestamp", u64(1700000000125431867ull)},
                     {"cpu_id", u64(3)},
                     {"sequence", u64(88213)},
                     {"origin_class", origin_class},
                     {"event_type", str(event_type)},
                     {"effective_token_guid", effective_token},
                     {"true_token_guid", true_token},
                     {"process_guid", kNil}};
    fields.insert(fields.end(), payload.begin(), payload.end());
    return map_of_fields(fields);
}

Bytes path_record(uint64_t item, std::string_view name, uint64_t inode, std::string_view mode) {
    return map_of_fields({{"cap_fe", u64(0)},
                          {"cap_fi", str("0")},
                          {"cap_fp", str("0")},
                          {"cap_frootid", u64(0)},
                          {"cap_fver", u64(0)},
                          {"dev", str("fe:01")},
                          {"inode", u64(inode)},
                          {"item", u64(item)},
                          {"mode", str(mode)},
                          {"name", str(name)},
                          {"nametype", str("NORMAL")},
                          {"ogid", u64(0)},
                          {"ogid_name", str("root")},
                          {"ouid", u64(0)},
                          {"ouid_name", str("root")},
                          {"rdev", str("00:00")}});
}

// alice (uid 1000, auid 1000) runs `chsh -s /bin/zsh`, a setuid-root program (euid 0): an execve
// like docs/AUDIT.md's example, as kmes-shimd maps it.
Bytes audit_execve() {
    return whole_record("audit.syscall", token(1000), token(0),
                        {{"a0", str("55d5")},
                         {"a1", str("55d6")},
                         {"a2", str("55d7")},
                         {"a3", str("0")},
                         {"arch", str("x86_64")},
                         {"argv", array_of({str("chsh"), str("-s"), str("/bin/zsh")})},
                         {"audit_time", u64(1700000000123000000ull)},
                         {"auid", u64(1000)},
                         {"auid_name", str("alice")},
                         {"comm", str("chsh")},
                         {"cwd", str("/home/alice")},
                         {"egid", u64(0)},
                         {"egid_name", str("root")},
                         {"euid", u64(0)},
                         {"euid_name", str("root")},
                         {"exe", str("/usr/bin/chsh")},
                         {"exit", u64(0)},
                         {"fsgid", u64(0)},
                         {"fsgid_name", str("root")},
                         {"fsuid", u64(0)},
                         {"fsuid_name", str("root")},
                         {"gid", u64(1000)},
                         {"gid_name", str("alice")},
                         {"items", u64(2)},
                         {"key", str("exec")},
                         {"paths", array_of({path_record(0, "/usr/bin/chsh", 1234, "0104755"),
                                             path_record(1, "/lib64/ld-linux-x86-64.so.2", 99, "0100755")})},
                         {"pid", u64(14570)},
                         {"ppid", u64(14483)},
                         {"proctitle", str("chsh -s /bin/zsh")},
                         {"record_types", array_of({str("SYSCALL"), str("EXECVE"), str("CWD"), str("PATH"), str("PATH"),
                                                    str("PROCTITLE")})},
                         {"serial", u64(812)},
                         {"ses", u64(3)},
                         {"sgid", u64(0)},
                         {"sgid_name", str("root")},
                         {"subj", str("unconfined")},
                         {"success", str("yes")},
                         {"suid", u64(0)},
                         {"suid_name", str("root")},
                         {"syscall", str("execve")},
                         {"syscall_nr", u64(59)},
                         {"tty", str("pts0")},
                         {"uid", u64(1000)},
                         {"uid_name", str("alice")}});
}

// The kernel's own change of its audit rules: no process subject, null tokens.
Bytes audit_config_change() {
    return whole_record("audit.config_change", kNil, kNil,
                        {{"audit_time", u64(1700000000100000000ull)},
                         {"auid", u64(4294967295ull)},
                         {"key", str("exec")},
                         {"list", u64(4)},
                         {"op", str("add_rule")},
                         {"record_types", array_of({str("CONFIG_CHANGE")})},
                         {"res", u64(1)},
                         {"serial", u64(811)},
                         {"ses", u64(4294967295ull)}});
}

std::vector<LocalAccount> accounts() { return {{0, "root"}, {1000, "alice"}}; }

PrettyOptions default_view(std::size_t width = 120) {
    return {.all_fields = false, .width = LineWidth::fixed(width), .accounts = accounts};
}

std::size_t widest_line(const std::string& text) {
    std::size_t widest = 0;
    for (const std::string& line : lines_of(text)) widest = std::max(widest, display_columns(line));
    return widest;
}

}  // namespace

TEST_CASE("default view of an audit execve: time, type, subject, payload, no line past 120 columns", "[view]") {
    // A result of this one record: its table would be far wider than 120 columns, so it is lines.
    const std::string out = run(Format::pretty, {audit_execve()}, std::nullopt, default_view());
    CHECK(
        out ==
        R"(timestamp=2023-11-14T22:13:20.125431867Z event_type="audit.syscall" subject="alice→root" a0="55d5" a1="55d6" a2="55d7"
    a3="0" arch="x86_64" argv=["chsh","-s","/bin/zsh"] audit_time=1700000000123000000 auid=1000 auid_name="alice"
    comm="chsh" cwd="/home/alice" egid=0 egid_name="root" euid=0 euid_name="root" exe="/usr/bin/chsh" exit=0 fsgid=0
    fsgid_name="root" fsuid=0 fsuid_name="root" gid=1000 gid_name="alice" items=2 key="exec"
    paths=[{"cap_fe":0,"cap_fi":"0","cap_fp":"0","cap_frootid":0,"cap_fver":0,"dev":"fe:01","inode":1234,"item":0,
        "mode":"0104755","name":"/usr/bin/chsh","nametype":"NORMAL","ogid":0,"ogid_name":"root","ouid":0,
        "ouid_name":"root","rdev":"00:00"},{"cap_fe":0,"cap_fi":"0","cap_fp":"0","cap_frootid":0,"cap_fver":0,
        "dev":"fe:01","inode":99,"item":1,"mode":"0100755","name":"/lib64/ld-linux-x86-64.so.2","nametype":"NORMAL",
        "ogid":0,"ogid_name":"root","ouid":0,"ouid_name":"root","rdev":"00:00"}]
    pid=14570 ppid=14483 proctitle="chsh -s /bin/zsh" record_types=["SYSCALL","EXECVE","CWD","PATH","PATH","PROCTITLE"]
    serial=812 ses=3 sgid=0 sgid_name="root" subj="unconfined" success="yes" suid=0 suid_name="root" syscall="execve"
    syscall_nr=59 tty="pts0" uid=1000 uid_name="alice"
)");
    CHECK(widest_line(out) <= 120);
}

TEST_CASE("default view: no line wider than the width, whatever the width", "[view]") {
    for (std::size_t width = kMinWidth; width <= 200; width += 7) {
        INFO("width " << width);
        const std::string out =
            run(Format::pretty, {audit_execve(), audit_config_change()}, std::nullopt, default_view(width));
        CHECK(widest_line(out) <= width);
        CHECK(out.find("subject=\"alice\xe2\x86\x92root\"") != std::string::npos);
    }
}

// Issue 39: a row of a reserved namespace without the product's origin (what a shim before the
// refusal let an emitter write) says where it came from, right after its type.
TEST_CASE("default view: a reserved type from an emitter is marked with its origin; the product's are not",
          "[view]") {
    const Fields payload = {{"uid", u64(0)}, {"exe", str("/usr/bin/sudo")}};
    std::string forged =
        run(Format::pretty, {whole_record("audit.syscall", kNil, kNil, payload, u64(0))}, 0, default_view());
    for (size_t at; (at = forged.find("\n    ")) != std::string::npos;) forged.replace(at, 5, " ");  // unwrap
    CHECK_THAT(forged, Catch::StartsWith("timestamp=2023-11-14T22:13:20.125431867Z event_type=\"audit.syscall\" "
                                         "origin!=\"userspace (0), not kmes-shimd's audit source: not the "
                                         "product's record\" "));
    const std::string genuine = run(Format::pretty, {whole_record("audit.syscall", kNil, kNil, payload)}, 0, default_view());
    CHECK(genuine.find("origin!") == std::string::npos);
    CHECK(run(Format::pretty, {whole_record("synthetic.checkpoint", kNil, kNil, {}, u64(0))}, 0, default_view())
              .find("origin!=\"userspace (0), not eventd") != std::string::npos);
    CHECK(run(Format::pretty, {whole_record("synthetic.checkpoint", kNil, kNil, {}, kNil)}, 0, default_view())
              .find("origin!") == std::string::npos);
    CHECK(run(Format::pretty, {whole_record("app.login", kNil, kNil, {}, u64(0))}, 0, default_view())
              .find("origin!") == std::string::npos);
}

TEST_CASE("default view: a record without a subject (null tokens) shows none", "[view]") {
    // A result of one record is a table when it fits (as before); a stream's records are lines.
    CHECK(
        run(Format::pretty, {audit_config_change()}, 0, default_view()) ==
        R"(timestamp=2023-11-14T22:13:20.125431867Z event_type="audit.config_change" audit_time=1700000000100000000 auid=4294967295
    key="exec" list=4 op="add_rule" record_types=["CONFIG_CHANGE"] res=1 serial=811 ses=4294967295
)");
}

TEST_CASE("default view: the subject of a token no local account has is its first 8 hex digits", "[view]") {
    const std::string stranger = base::guid_text(base::token_guid(4242));
    const Bytes record = whole_record("app.login", token(4242), token(4242), {{"user", str("bob")}});
    CHECK(run(Format::pretty, {record}, 0, default_view()) ==
          "timestamp=2023-11-14T22:13:20.125431867Z event_type=\"app.login\" subject=\"" + stranger.substr(0, 8) +
              "\" user=\"bob\"\n");
    CHECK(run(Format::pretty, {record}, std::nullopt, default_view()) ==
          "timestamp                       event_type  subject   user\n"
          "2023-11-14T22:13:20.125431867Z  app.login   " +
              stranger.substr(0, 8) + "  bob\n");
}

TEST_CASE("--all-fields and --width 0: each record on one line, as before", "[view]") {
    const std::string all = run(Format::pretty, {audit_execve()}, 0, {.all_fields = true});
    CHECK(lines_of(all).size() == 2);  // one line and the empty rest after its newline
    CHECK(all.rfind("boot_id=\"0c1f2e3d-4b5a-6978-8796-a5b4c3d2e1f0\" timestamp=", 0) == 0);
    CHECK(all.find("effective_token_guid=") != std::string::npos);
    CHECK(all.find("subject=") == std::string::npos);
    const std::string unwrapped_view = run(Format::pretty, {audit_execve()}, 0, default_view(0));
    CHECK(lines_of(unwrapped_view).size() == 2);
    CHECK(unwrapped_view.find("subject=\"alice\xe2\x86\x92root\" a0=") != std::string::npos);
    // The wrapped view is that line with line breaks.
    const std::string view = run(Format::pretty, {audit_execve()}, 0, default_view());
    CHECK(unwrapped(view) == unwrapped_view);
}

TEST_CASE("default view: records of one shape are a table only when the table fits", "[view]") {
    const Bytes login_alice = whole_record("app.login", token(1000), token(1000), {{"ok", Bytes{0xc3}}});
    const Bytes login_root = whole_record("app.login", token(0), token(0), {{"ok", Bytes{0xc2}}});
    CHECK(run(Format::pretty, {login_alice, login_root}, std::nullopt, default_view()) ==
          "timestamp                       event_type  subject  ok\n"
          "2023-11-14T22:13:20.125431867Z  app.login   alice    true\n"
          "2023-11-14T22:13:20.125431867Z  app.login   root     false\n");
    // Two execs: their table would be far wider than 120 columns, so they are wrapped lines.
    const std::string execs = run(Format::pretty, {audit_execve(), audit_execve()}, std::nullopt, default_view());
    CHECK(widest_line(execs) <= 120);
    CHECK(execs.find("timestamp=") == 0);
    CHECK(execs.find("\ntimestamp=") != std::string::npos);
}

TEST_CASE("default view: a SELECT or an aggregate is printed as before, however wide", "[view]") {
    const Bytes wide = map_of({{"exe", str(std::string(150, 'x'))}, {"count", u64(2)}});
    CHECK(run(Format::pretty, {wide, wide}, std::nullopt, default_view()) == "exe" + std::string(149, ' ') + "count\n" +
                                                                                 std::string(150, 'x') + "      2\n" +
                                                                                 std::string(150, 'x') + "      2\n");
    const Bytes other = map_of({{"exe", str(std::string(150, 'y'))}});
    CHECK(run(Format::pretty, {wide, other}, std::nullopt, default_view()) ==
          "exe=\"" + std::string(150, 'x') + "\" count=2\nexe=\"" + std::string(150, 'y') + "\"\n");
}

TEST_CASE("default view: the machine formats are never changed", "[view]") {
    for (const Format format : {Format::jsonl, Format::json, Format::msgpack}) {
        CHECK(run(format, {audit_execve(), audit_config_change()}, std::nullopt, default_view()) ==
              run(format, {audit_execve(), audit_config_change()}, std::nullopt, {.all_fields = true}));
    }
    const std::string jsonl = run(Format::jsonl, {audit_execve()}, std::nullopt, default_view());
    CHECK(jsonl.find("\"true_token_guid\":\"" + base::guid_text(base::token_guid(1000)) + "\"") != std::string::npos);
    CHECK(jsonl.find("subject") == std::string::npos);
}

}  // namespace eventctl::test

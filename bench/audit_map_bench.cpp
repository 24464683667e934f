// The shim's audit mapping on its own (issue 24, docs/PERFORMANCE.md §14): kernel records of an
// exec (SYSCALL, EXECVE, CWD, two PATHs, PROCTITLE, EOE) and of a plain syscall (SYSCALL,
// PROCTITLE, EOE), fed record by record as the kernel sends them, through AuditAssembler —
// libauparse's reassembly, the record → event mapping, the msgpack payload the shim writes into
// a ring — against the floor of libauparse's feed alone on the same records (auditd's log-line
// form, a callback that only walks the records). No kernel, no /proc, no ring: what the mapping
// costs per event, side by side with what reassembly alone costs.
//
//   kmes-bench-audit-map [--quick] [--time S]
#include <auparse.h>
#include <libaudit.h>

#include <cstdio>
#include <string>
#include <vector>

#include "audit/audit_assembler.hpp"
#include "harness.hpp"

namespace {

// One record: its netlink type and its text after "type=NAME msg=", with a 10-digit serial
// written over the `SERIAL____` placeholder for every event.
struct RecordTemplate {
    int type;
    std::string text;
    size_t serial_at = 0;
};

std::vector<RecordTemplate> records(std::vector<std::pair<int, std::string>> lines) {
    std::vector<RecordTemplate> out;
    for (auto& [type, text] : lines) {
        RecordTemplate r{type, std::move(text)};
        r.serial_at = r.text.find("SERIAL____");
        out.push_back(std::move(r));
    }
    return out;
}

const std::vector<RecordTemplate> kExec = records({
    {AUDIT_SYSCALL,
     "audit(1700000000.123:SERIAL____): arch=c000003e syscall=59 success=yes exit=0 a0=55d5e0a1b2c0 "
     "a1=55d5e0a1b300 a2=7ffd6c2a4e58 a3=0 items=2 ppid=4121 pid=4122 auid=1000 uid=1000 gid=1000 euid=1000 "
     "suid=1000 fsuid=1000 egid=1000 sgid=1000 fsgid=1000 tty=pts0 ses=3 comm=\"true\" exe=\"/usr/bin/true\" "
     "subj=unconfined key=\"exec\""},
    {AUDIT_EXECVE, "audit(1700000000.123:SERIAL____): argc=2 a0=\"/bin/true\" a1=\"kmesbench-000001\""},
    {AUDIT_CWD, "audit(1700000000.123:SERIAL____): cwd=\"/home/alice\""},
    {AUDIT_PATH,
     "audit(1700000000.123:SERIAL____): item=0 name=\"/bin/true\" inode=1234 dev=fe:01 mode=0100755 ouid=0 "
     "ogid=0 rdev=00:00 nametype=NORMAL cap_fp=0 cap_fi=0 cap_fe=0 cap_fver=0 cap_frootid=0"},
    {AUDIT_PATH,
     "audit(1700000000.123:SERIAL____): item=1 name=\"/lib64/ld-linux-x86-64.so.2\" inode=99 dev=fe:01 "
     "mode=0100755 ouid=0 ogid=0 rdev=00:00 nametype=NORMAL cap_fp=0 cap_fi=0 cap_fe=0 cap_fver=0 cap_frootid=0"},
    {AUDIT_PROCTITLE, "audit(1700000000.123:SERIAL____): proctitle=2F62696E2F74727565006B6D657362656E6368"},
    {AUDIT_EOE, "audit(1700000000.123:SERIAL____): "},
});

const std::vector<RecordTemplate> kSyscall = records({
    {AUDIT_SYSCALL,
     "audit(1700000000.123:SERIAL____): arch=c000003e syscall=63 success=yes exit=0 a0=7ffd6c2a4e00 a1=0 a2=0 "
     "a3=0 items=0 ppid=4121 pid=4122 auid=1000 uid=1000 gid=1000 euid=1000 suid=1000 fsuid=1000 egid=1000 "
     "sgid=1000 fsgid=1000 tty=pts0 ses=3 comm=\"kmes-bench-aud\" exe=\"/usr/bin/kmes-bench-audit-load\" "
     "subj=unconfined key=\"kmesbench\""},
    {AUDIT_PROCTITLE, "audit(1700000000.123:SERIAL____): proctitle=6B6D65732D62656E6368"},
    {AUDIT_EOE, "audit(1700000000.123:SERIAL____): "},
});

void put_serial(std::string& text, size_t at, uint64_t serial) {
    char digits[11];
    std::snprintf(digits, sizeof digits, "%010llu", static_cast<unsigned long long>(serial % 10'000'000'000ULL));
    text.replace(at, 10, digits, 10);
}

// The mapping as the shim runs it: every event ends as its msgpack payload.
struct MappingSubject {
    std::vector<RecordTemplate> event;
    uint64_t serial = 1;
    size_t payload_bytes = 0;
    kmes::audit::AuditAssembler assembler{
        [this](kmes::audit::AuditEvent e) { payload_bytes += e.payload.size(); }, 2};

    explicit MappingSubject(std::vector<RecordTemplate> e) : event(std::move(e)) {}
    void one() {
        ++serial;
        for (RecordTemplate& r : event) {
            put_serial(r.text, r.serial_at, serial);
            assembler.feed_record(r.type, r.text);
        }
    }
};

// The floor: auparse's feed of the same records as auditd logs them, a callback that walks the
// records and nothing else.
struct AuparseFloor {
    std::vector<RecordTemplate> event;
    uint64_t serial = 1;
    uint64_t records_seen = 0;
    auparse_state_t* au = nullptr;

    explicit AuparseFloor(std::vector<RecordTemplate> e) : event(std::move(e)) {
        for (RecordTemplate& r : event) {
            const std::string prefix = std::string("type=") + audit_msg_type_to_name(r.type) + " msg=";
            r.text = prefix + r.text + "\n";
            r.serial_at += prefix.size();
        }
        au = auparse_init(AUSOURCE_FEED, nullptr);
        auparse_add_callback(
            au,
            [](auparse_state_t* a, auparse_cb_event_t type, void* self) {
                if (type != AUPARSE_CB_EVENT_READY || auparse_first_record(a) <= 0) return;
                do ++static_cast<AuparseFloor*>(self)->records_seen;
                while (auparse_next_record(a) > 0);
            },
            this, nullptr);
    }
    ~AuparseFloor() {
        auparse_flush_feed(au);
        auparse_destroy(au);
    }
    void one() {
        ++serial;
        for (RecordTemplate& r : event) {
            put_serial(r.text, r.serial_at, serial);
            auparse_feed(au, r.text.data(), r.text.size());
        }
    }
};

}  // namespace

int main(int argc, char** argv) {
    const bench::Options options = bench::Options::parse(argc, argv);
    bench::Table table({"event", "auparse feed alone, ns/event", "assembler + mapping + msgpack, ns/event",
                        "× the feed alone", "payload bytes"});
    for (auto [name, event] : {std::pair{"exec (7 records)", &kExec}, std::pair{"syscall (3 records)", &kSyscall}}) {
        AuparseFloor floor(*event);
        MappingSubject subject(*event);
        bench::Contender f{bench::loop_of([&] { floor.one(); })};
        bench::Contender s{bench::loop_of([&] { subject.one(); })};
        bench::interleave({&f, &s}, options);
        const double events = double(subject.serial - 1);
        table.add({name, bench::fmt("%.0f", f.ns.med()), bench::fmt("%.0f", s.ns.med()),
                   bench::fmt("%.2f", bench::ratio_median(s.ns, f.ns)),
                   bench::fmt("%.0f", double(subject.payload_bytes) / std::max(1.0, events))});
    }
    table.print("The shim's audit mapping per event (kmes-bench-audit-map)");
    return 0;
}

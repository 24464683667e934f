#include "audit_event.hpp"

#include <auparse.h>
#include <libaudit.h>

#include <algorithm>
#include <map>
#include <set>
#include <span>
#include <string>
#include <vector>

#include <cctype>
#include <chrono>
#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <string_view>

#include "base/hex.hpp"
#include "base/utf8.hpp"
#include "payload_map.hpp"

namespace kmes::audit {
namespace {

namespace mp = eventd::msgpack;
using Bytes = mp::Bytes;

// A decimal integer (optionally negative) as written by the kernel; nullopt otherwise
// (hex values such as a0=7ffd…, words, quoted strings stay text).
std::optional<int64_t> decimal(const char* text) {
    if (!text || !*text) return std::nullopt;
    const char* p = text;
    if (*p == '-') ++p;
    if (!*p) return std::nullopt;
    for (const char* q = p; *q; ++q)
        if (!std::isdigit(static_cast<unsigned char>(*q))) return std::nullopt;
    errno = 0;
    char* end = nullptr;
    const long long v = std::strtoll(text, &end, 10);
    if (errno != 0 || *end) {
        // Above INT64_MAX (an unsigned 64-bit counter): keep the digits as text.
        return std::nullopt;
    }
    return static_cast<int64_t>(v);
}

// Strings the kernel writes in quotes when plain, in hex when they hold anything unusual;
// auparse's interpretation decodes both.
bool is_escaped(int type) {
    return type == AUPARSE_TYPE_ESCAPED || type == AUPARSE_TYPE_ESCAPED_KEY || type == AUPARSE_TYPE_ESCAPED_FILE ||
           type == AUPARSE_TYPE_PROCTITLE;
}

bool all_hex(std::string_view text) {
    if (text.empty()) return false;
    for (char c : text)
        if (!std::isxdigit(static_cast<unsigned char>(c))) return false;
    return true;
}

// auparse's interpretation of the field under the cursor, asked only of values in the form the
// kernel writes for the field's type: libauparse 3.0.9 reads past the end of some malformed
// values (a heap overflow in auparse_do_interpretation on an odd, non-hex `proctitle=`, found
// by the audit_mapping fuzz target), and only the kinds below are used. nullptr otherwise: the
// raw text is kept.
const char* interpret_checked(auparse_state_t* au, int type, const char* raw) {
    const std::string_view text(raw);
    bool well_formed = false;
    switch (type) {
        case AUPARSE_TYPE_UID:
        case AUPARSE_TYPE_GID:
        case AUPARSE_TYPE_SYSCALL:
            well_formed = decimal(raw).has_value();
            break;
        case AUPARSE_TYPE_ARCH:
            well_formed = all_hex(text);
            break;
        default:
            if (is_escaped(type))
                well_formed = (text.size() >= 2 && text.front() == '"' && text.back() == '"') ||
                              (all_hex(text) && text.size() % 2 == 0);
            break;
    }
    return well_formed ? auparse_interpret_field(au) : nullptr;
}

// A value the kernel wrote in quotes, without them (the kernel quotes only plain text).
std::optional<std::string_view> unquoted(std::string_view text) {
    if (text.size() >= 2 && text.front() == '"' && text.back() == '"') return text.substr(1, text.size() - 2);
    return std::nullopt;
}

// What the kernel recorded for a field it writes in quotes or in hex (issue 39 part 6): the
// quoted text without its quotes — the kernel quotes only printable ASCII without '"' — or
// the hex decoded to its bytes. Not auparse's interpretation, which shows control bytes as
// "\ooo" text: a file named with a real ESC and one named "\033" must stay two names. Anything
// else as written.
std::string recorded_bytes(std::string_view raw) {
    if (auto text = unquoted(raw)) return std::string(*text);
    if (!all_hex(raw) || raw.size() % 2 != 0) return std::string(raw);
    std::string bytes(raw.size() / 2, '\0');
    if (!base::hex_bytes(raw, std::span(reinterpret_cast<uint8_t*>(bytes.data()), bytes.size())))
        return std::string(raw);
    return bytes;
}

// Bytes as the payload keeps them: a msgpack str when they are valid UTF-8 (so queries compare
// them as text), bin otherwise — never invalid UTF-8 in a str.
void put_recorded(Bytes& out, std::string_view bytes) {
    if (base::is_valid_utf8(bytes)) return mp::put_string(out, bytes);
    mp::put_binary(out, std::span(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()));
}

// The value of the field under auparse's cursor, and any name to put beside it. Fills the
// subject's ids when `event` is given (the first record's fields).
void put_field(auparse_state_t* au, PayloadMap& into, AuditEvent* event) {
    const char* name = auparse_get_field_name(au);
    const char* raw = auparse_get_field_str(au);
    if (!name || !raw) return;
    const std::string_view key(name);
    // auparse shows a record's own "type=…" as its first field: the event type says it already.
    if (key == "type" && auparse_get_field_num(au) == 0) return;
    if (!into.add(key)) return;  // the first occurrence wins, as in eventd's reads
    Bytes& out = into.value();
    const int type = auparse_get_field_type(au);
    switch (type) {
        case AUPARSE_TYPE_UID:
        case AUPARSE_TYPE_GID: {
            const auto n = decimal(raw);
            if (!n) {
                put_recorded(out, raw);
                return;
            }
            mp::put_signed(out, *n);
            if (event && type == AUPARSE_TYPE_UID && *n >= 0 && *n < 4294967295LL) {  // 4294967295: unset
                if (key == "uid") event->uid = static_cast<uint32_t>(*n);
                if (key == "euid") event->euid = static_cast<uint32_t>(*n);
            }
            // 4294967295 is "unset" (-1): auparse says "unset"; the name adds nothing then.
            const char* interpreted = interpret_checked(au, type, raw);
            if (interpreted && std::strcmp(interpreted, "unset") != 0 && std::strcmp(interpreted, raw) != 0) {
                std::string name_key(key);
                name_key += "_name";
                if (into.add(name_key)) mp::put_string(into.value(), interpreted);
            }
            return;
        }
        case AUPARSE_TYPE_SYSCALL:
        case AUPARSE_TYPE_ARCH: {
            const char* interpreted = interpret_checked(au, type, raw);
            put_recorded(out, interpreted ? interpreted : raw);
            if (type == AUPARSE_TYPE_SYSCALL)
                if (const auto n = decimal(raw); n && into.add("syscall_nr")) mp::put_signed(into.value(), *n);
            return;
        }
        default:
            break;
    }
    if (is_escaped(type)) {
        // "(null)" is how the kernel writes an absent key or name.
        if (std::strcmp(raw, "(null)") == 0) return mp::put_nil(out);
        return put_recorded(out, recorded_bytes(raw));
    }
    // Numbers only where the field is a number: a mode ("0100755"), a permission, flags or a
    // syscall argument look like digits but are octal or hex text.
    const bool numeric = type == AUPARSE_TYPE_UNCLASSIFIED || type == AUPARSE_TYPE_EXIT || type == AUPARSE_TYPE_SESSION;
    if (numeric && !(raw[0] == '0' && raw[1] != '\0'))
        if (const auto n = decimal(raw)) {
            if (event && key == "pid") event->pid = static_cast<pid_t>(*n);
            return mp::put_signed(out, *n);
        }
    put_recorded(out, unquoted(raw).value_or(raw));  // never invalid UTF-8 in a str
}

void record_fields(auparse_state_t* au, PayloadMap& into, AuditEvent* event = nullptr) {
    if (auparse_first_field(au) <= 0) return;
    do {
        put_field(au, into, event);
    } while (auparse_next_field(au) > 0);
}

// The free text of a user-space message: `msg='TEXT key=value …'` whose TEXT is not a field
// (auditctl -m "TEXT", USER_AVC's "avc:  denied { … }"). auparse splits msg='…' into fields and
// drops words without '=': the whole of msg='…' is kept then, so nothing the sender wrote is lost.
std::optional<std::string_view> free_msg_text(std::string_view record) {
    const size_t start = record.find(" msg='");
    if (start == std::string_view::npos) return std::nullopt;
    std::string_view inner = record.substr(start + 6);
    const size_t end = inner.rfind('\'');
    if (end == std::string_view::npos) return std::nullopt;
    inner = inner.substr(0, end);
    const std::string_view first_word = inner.substr(0, inner.find(' '));
    if (first_word.empty() || first_word.find('=') != std::string_view::npos) return std::nullopt;
    return inner;
}

// The arguments of an exec, from every EXECVE record of the event (issue 39 part 2): the kernel
// writes `argc` in the first, then a0, a1, … across as many records as they need, and an
// argument longer than its chunk size as aN_len=LEN aN[0]=… aN[1]=… — each piece quoted or hex
// on its own (kernel/auditsc.c, audit_log_execve_info).
struct ExecArgs {
    std::optional<uint64_t> argc;
    std::map<uint64_t, std::map<uint64_t, std::string>> pieces;  // argument → piece → bytes
    // aN_len: the length the kernel logs the argument with — twice its bytes when it wrote the
    // pieces in hex (kernel/auditsc.c), its bytes when quoted.
    std::map<uint64_t, uint64_t> declared_length;
    std::set<uint64_t> hex_pieces;  // arguments whose pieces came in hex

    // "a12" → 12, "a12[3]" → 12 and piece 3, "a12_len" → 12 and `length`.
    void add_field(std::string_view name, std::string_view raw) {
        if (name == "argc") {
            if (const auto n = decimal(std::string(raw).c_str()); n && *n >= 0) argc = uint64_t(*n);
            return;
        }
        if (name.size() < 2 || name[0] != 'a' || !std::isdigit(static_cast<unsigned char>(name[1]))) return;
        uint64_t index = 0;
        size_t at = 1;
        while (at < name.size() && std::isdigit(static_cast<unsigned char>(name[at])) && index < (uint64_t{1} << 40))
            index = index * 10 + uint64_t(name[at++] - '0');
        const std::string_view rest = name.substr(at);
        if (rest.empty()) {
            pieces[index][0] = recorded_bytes(raw);
        } else if (rest == "_len") {
            if (const auto n = decimal(std::string(raw).c_str()); n && *n >= 0) declared_length[index] = uint64_t(*n);
        } else if (rest.size() > 2 && rest.front() == '[' && rest.back() == ']') {
            const auto piece = decimal(std::string(rest.substr(1, rest.size() - 2)).c_str());
            if (piece && *piece >= 0) {
                pieces[index][uint64_t(*piece)] = recorded_bytes(raw);
                if (!unquoted(raw)) hex_pieces.insert(index);
            }
        }
    }

    void collect(auparse_state_t* au) {
        if (auparse_first_field(au) <= 0) return;
        do {
            const char* name = auparse_get_field_name(au);
            const char* raw = auparse_get_field_str(au);
            if (name && raw) add_field(name, raw);
        } while (auparse_next_field(au) > 0);
    }

    // The most bytes the pairs write_to() adds besides argv's elements: the five keys, argc,
    // argv's array header and the three cut values.
    static constexpr uint64_t kPairsBytes = 128;
    // The most bytes one argument adds besides its own: its str or bin header.
    static constexpr uint64_t kElementHeaderBytes = 5;

    // argc, argv (whole arguments from a0 on, while they are all there, within `max_bytes` in
    // all, and their encoding and the pairs below within `max_encoded`), and — when any is
    // not — argv_truncated with the arguments and the bytes cut (bytes: of the cut arguments
    // whose length is known).
    void write_to(PayloadMap& payload, uint64_t max_bytes, uint64_t max_encoded) const {
        const uint64_t count = argc.value_or(pieces.empty() ? 0 : pieces.rbegin()->first + 1);
        std::vector<std::string> argv;
        uint64_t bytes = 0, encoded = kPairsBytes;
        // Whole arguments from a0 on: each one taken is in the records, so this loop is bounded by
        // their bytes; it stops at the first argument missing, incomplete or over a limit.
        for (uint64_t i = 0; i < count; ++i) {
            const auto found = pieces.find(i);
            if (found == pieces.end()) break;
            std::string arg;
            bool complete = true;
            uint64_t next = 0;
            for (const auto& [k, piece] : found->second) {
                complete &= k == next++;  // a piece missing: the argument is not whole
                arg += piece;
            }
            if (const auto len = declared_length.find(i); len != declared_length.end())
                complete &= arg.size() == bytes_of(i, len->second);
            const uint64_t element = arg.size() + kElementHeaderBytes;
            if (!complete || bytes + arg.size() > max_bytes || encoded + element > max_encoded) break;
            bytes += arg.size();
            encoded += element;
            argv.push_back(std::move(arg));
        }
        // The bytes of the arguments cut (from argv.size() to argc, in order: nothing after a cut
        // one), counted over what the records hold or declare — never a loop to argc, which is
        // the record's word (issue 40 item 1: argc=10^18 in one line would have looped for ever).
        uint64_t cut_bytes = 0;
        for (auto it = pieces.lower_bound(argv.size()); it != pieces.end() && it->first < count; ++it) {
            if (declared_length.count(it->first)) continue;  // counted below
            for (const auto& [k, piece] : it->second) cut_bytes += piece.size();
        }
        for (auto it = declared_length.lower_bound(argv.size()); it != declared_length.end() && it->first < count; ++it)
            cut_bytes += bytes_of(it->first, it->second);
        payload.add_reserved("argc");
        mp::put_unsigned(payload.value(), count);
        payload.add_reserved("argv");
        mp::put_array_header(payload.value(), argv.size());
        for (const std::string& arg : argv) put_recorded(payload.value(), arg);
        if (argv.size() == count) return;
        payload.add_reserved("argv_truncated");
        mp::put_bool(payload.value(), true);
        payload.add_reserved("argv_cut_args");
        mp::put_unsigned(payload.value(), count - argv.size());
        payload.add_reserved("argv_cut_bytes");
        mp::put_unsigned(payload.value(), cut_bytes);
    }

    // The bytes of argument `i` the kernel declared `logged` for (aN_len).
    uint64_t bytes_of(uint64_t i, uint64_t logged) const { return hex_pieces.count(i) ? logged / 2 : logged; }

    // The arguments joined as the kernel joins a process title (NUL between them), for the
    // bytes a capped proctitle lacks.
    uint64_t joined_length() const {
        uint64_t n = 0;
        for (const auto& [i, parts] : pieces) {
            if (const auto len = declared_length.find(i); len != declared_length.end()) {
                n += bytes_of(i, len->second);
            } else {
                for (const auto& [k, piece] : parts) n += piece.size();
            }
        }
        return n + (pieces.empty() ? 0 : pieces.size() - 1);
    }
};

// The process title (PROCTITLE): the arguments as the process holds them, NUL between them,
// shown with a space there (the exact arguments are argv). The kernel records at most
// kProctitleCap bytes of it (MAX_PROCTITLE_AUDIT_LEN): a title of that length may have been cut,
// and is marked proctitle_truncated — with the bytes cut when the exec's arguments tell them.
constexpr size_t kProctitleCap = 128;

void put_proctitle(PayloadMap& payload, std::string title, std::optional<uint64_t> full_length) {
    const size_t recorded = title.size();
    while (!title.empty() && title.back() == '\0') title.pop_back();  // the last argument's end
    std::replace(title.begin(), title.end(), '\0', ' ');
    payload.add_reserved("proctitle");
    put_recorded(payload.value(), title);
    if (recorded < kProctitleCap) return;
    if (full_length && *full_length <= recorded) return;  // exactly the cap, nothing cut
    payload.add_reserved("proctitle_truncated");
    mp::put_bool(payload.value(), true);
    if (full_length) {
        payload.add_reserved("proctitle_cut_bytes");
        mp::put_unsigned(payload.value(), *full_length - recorded);
    }
}

// What the kernel recorded in the field `name` of the record under the cursor.
std::optional<std::string> field_text(auparse_state_t* au, const char* name) {
    const char* raw = auparse_find_field(au, name);
    if (!raw) return std::nullopt;
    if (is_escaped(auparse_get_field_type(au))) return recorded_bytes(raw);
    return std::string(raw);
}

// A msgpack map's header: at most 5 bytes.
constexpr uint64_t kMapHeaderBytes = 5;

// An audit record type's name as a key: "USER_LOGIN" → "user_login".
void put_lower(std::string& out, std::string_view name) {
    for (char c : name) out += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
}

// The records after the first that have no key of their own (AVC, SOCKADDR, …): each a map of
// its fields under its lower-case type name, an array of maps when the type repeats.
struct OtherRecords {
    std::string key;
    std::vector<Bytes> maps;
};

}  // namespace

AuditEvent map_event(auparse_state_t* au, const MappingLimits& limits) {
    AuditEvent event;
    PayloadMap payload(1024);  // an exec event's payload: ~1 KB
    // What the mapping puts under its own keys wins over a first record's field of that name.
    bool has_execve = false, has_cwd = false, has_paths = false, has_proctitle = false, first_record = true;
    // Whether the event ended as the kernel ends a syscall event (EOE or PROCTITLE).
    bool syscall = false, ended = false;
    if (auparse_first_record(au) > 0) {
        do {
            const int type = auparse_get_type(au);
            syscall |= type == AUDIT_SYSCALL;
            ended |= type == AUDIT_EOE || type == AUDIT_PROCTITLE;
            if (first_record) {
                first_record = false;
                continue;
            }
            has_execve |= type == AUDIT_EXECVE;
            has_cwd |= type == AUDIT_CWD;
            has_paths |= type == AUDIT_PATH;
            has_proctitle |= type == AUDIT_PROCTITLE;
        } while (auparse_next_record(au) > 0);
    }
    payload.reserve({"serial", "audit_time", "record_types", "msg"});
    if (has_execve) payload.reserve({"argc", "argv", "argv_truncated", "argv_cut_args", "argv_cut_bytes"});
    if (has_cwd) payload.reserve({"cwd"});
    if (has_paths) payload.reserve({"paths"});
    if (has_proctitle) payload.reserve({"proctitle", "proctitle_truncated", "proctitle_cut_bytes"});
    // Handed on by the timeout before its end came.
    const bool incomplete = syscall && !ended;
    if (incomplete) payload.reserve({"incomplete"});

    if (const au_event_t* ts = auparse_get_timestamp(au)) {
        payload.add_reserved("serial");
        mp::put_unsigned(payload.value(), static_cast<uint64_t>(ts->serial));
        event.serial = static_cast<uint64_t>(ts->serial);
        // A time the kernel never writes (beyond 2262, or negative) has no ns form: nil
        // (found by the audit_mapping fuzz target: the product overflowed).
        int64_t ns = 0;
        const bool fits = ts->sec >= 0 && ts->milli < 1000 &&
                          !__builtin_mul_overflow(static_cast<int64_t>(ts->sec), int64_t{1'000'000'000}, &ns) &&
                          !__builtin_add_overflow(ns, int64_t(ts->milli) * 1'000'000, &ns);
        payload.add_reserved("audit_time");
        if (fits) {
            mp::put_signed(payload.value(), ns);
            event.audit_time = ns;
        } else {
            mp::put_nil(payload.value());
        }
    }
    Bytes record_types, paths;
    record_types.reserve(128);
    size_t record_type_count = 0, path_count = 0;
    std::vector<OtherRecords> others;
    ExecArgs exec_args;
    std::optional<std::string> proctitle;
    // CWD: the record's field of the same name, as recorded, from the first such record that
    // has it (`pending` until then).
    auto put_first_text = [&](bool& pending, const char* field) {
        if (!pending) return;
        if (auto text = field_text(au, field)) {
            pending = false;
            payload.add_reserved(field);
            put_recorded(payload.value(), *text);
        }
    };
    first_record = true;
    if (auparse_first_record(au) > 0) {
        do {
            const int type = auparse_get_type(au);
            if (type == AUDIT_EOE) continue;
            const std::string name = record_type_name(au);
            mp::put_string(record_types, name);
            ++record_type_count;
            if (first_record) {
                first_record = false;
                event.type = "audit.";
                put_lower(event.type, name);
                record_fields(au, payload, &event);
                if (const char* text = auparse_get_record_text(au))
                    if (auto free_text = free_msg_text(text)) {
                        payload.add_reserved("msg");
                        put_recorded(payload.value(), *free_text);
                    }
                continue;
            }
            if (type == AUDIT_EXECVE) {
                exec_args.collect(au);  // every EXECVE record: a long argument list spans several
            } else if (type == AUDIT_CWD) {
                put_first_text(has_cwd, "cwd");
            } else if (type == AUDIT_PATH) {
                PayloadMap path(256);
                record_fields(au, path);
                path.write_to(paths);
                ++path_count;
            } else if (type == AUDIT_PROCTITLE) {
                if (!proctitle) proctitle = field_text(au, "proctitle");
            } else {
                std::string key;
                put_lower(key, name);
                auto it = std::find_if(others.begin(), others.end(), [&](const OtherRecords& o) { return o.key == key; });
                if (it == others.end()) it = others.insert(others.end(), OtherRecords{std::move(key), {}});
                PayloadMap fields;
                record_fields(au, fields);
                fields.write_to(it->maps.emplace_back());
            }
        } while (auparse_next_record(au) > 0);
    }
    if (event.type.empty()) event.type = "audit.unknown";
    event.records = static_cast<uint32_t>(record_type_count);
    if (proctitle) put_proctitle(payload, *proctitle, has_execve ? std::optional(exec_args.joined_length()) : std::nullopt);
    for (const OtherRecords& other : others) {
        if (!payload.add(other.key)) continue;
        Bytes& out = payload.value();
        if (other.maps.size() > 1) mp::put_array_header(out, other.maps.size());
        for (const Bytes& map : other.maps) out.insert(out.end(), map.begin(), map.end());
    }
    if (path_count > 0) {
        payload.add_reserved("paths");
        mp::put_array_header(payload.value(), path_count);
        payload.value().insert(payload.value().end(), paths.begin(), paths.end());
    }
    if (incomplete) {
        payload.add_reserved("incomplete");
        mp::put_bool(payload.value(), true);
    }
    payload.add_reserved("record_types");
    mp::put_array_header(payload.value(), record_type_count);
    payload.value().insert(payload.value().end(), record_types.begin(), record_types.end());
    // The arguments last: what room the rest of the event leaves them is known now.
    if (has_execve) {
        const uint64_t max_event = limits.max_event_bytes ? limits.max_event_bytes() : UINT64_MAX;
        const uint64_t rest = event.type.size() + kMapHeaderBytes + payload.value().size();
        exec_args.write_to(payload, limits.argv_max_bytes, max_event > rest ? max_event - rest : 0);
    }
    payload.write_to(event.payload);
    return event;
}

std::string record_type_name(auparse_state_t* au) {
    const char* name = auparse_get_type_name(au);
    return name ? name : "UNKNOWN[" + std::to_string(auparse_get_type(au)) + "]";
}

namespace {
int64_t now_ns() {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::system_clock::now().time_since_epoch())
        .count();
}

AuditEvent lost_event_with(uint64_t records, const char* source, const uint64_t* serial,
                           const std::vector<std::string>* record_types) {
    const int64_t now = now_ns();
    AuditEvent event;
    event.type = "audit.lost";
    event.lost_records = records;
    Bytes& out = event.payload;
    mp::put_map_header(out, serial ? 5 : 3);
    mp::put_string(out, "records");
    mp::put_unsigned(out, records);
    mp::put_string(out, "source");
    mp::put_string(out, source);
    mp::put_string(out, "noticed_time");
    mp::put_signed(out, now);
    if (serial) {
        mp::put_string(out, "serial");
        mp::put_unsigned(out, *serial);
        mp::put_string(out, "record_types");
        mp::put_array_header(out, record_types->size());
        for (const std::string& t : *record_types) mp::put_string(out, t);
    }
    return event;
}
}  // namespace

AuditEvent lost_event(uint64_t records, const char* source) { return lost_event_with(records, source, nullptr, nullptr); }

AuditEvent serial_lost_event(std::span<const std::pair<uint32_t, uint32_t>> ranges) {
    AuditEvent event;
    event.type = "audit.lost";
    for (const auto& [first, last] : ranges) event.lost_events += uint64_t{last} - first + 1;
    Bytes& out = event.payload;
    mp::put_map_header(out, 4);
    mp::put_string(out, "events");
    mp::put_unsigned(out, event.lost_events);
    mp::put_string(out, "source");
    mp::put_string(out, "serial");
    mp::put_string(out, "noticed_time");
    mp::put_signed(out, now_ns());
    mp::put_string(out, "ranges");
    mp::put_array_header(out, ranges.size());
    for (const auto& [first, last] : ranges) {
        mp::put_array_header(out, 2);
        mp::put_unsigned(out, first);
        mp::put_unsigned(out, last);
    }
    return event;
}

AuditEvent oversized_event(const AuditEvent& event, uint64_t max_event_bytes) {
    const int64_t now = now_ns();
    AuditEvent lost;
    lost.type = "audit.lost";
    lost.lost_records = event.records;
    Bytes& out = lost.payload;
    mp::put_map_header(out, event.serial ? 7 : 6);
    mp::put_string(out, "records");
    mp::put_unsigned(out, event.records);
    mp::put_string(out, "source");
    mp::put_string(out, "size");
    mp::put_string(out, "noticed_time");
    mp::put_signed(out, now);
    if (event.serial) {
        mp::put_string(out, "serial");
        mp::put_unsigned(out, *event.serial);
    }
    mp::put_string(out, "event_type");
    mp::put_string(out, event.type);
    mp::put_string(out, "event_bytes");
    mp::put_unsigned(out, event.type.size() + event.payload.size());
    mp::put_string(out, "max_event_bytes");
    mp::put_unsigned(out, max_event_bytes);
    return lost;
}

AuditEvent lost_event(uint64_t records, const char* source, uint64_t serial,
                      const std::vector<std::string>& record_types) {
    return lost_event_with(records, source, &serial, &record_types);
}

}  // namespace kmes::audit

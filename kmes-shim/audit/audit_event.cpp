#include "audit_event.hpp"

#include <auparse.h>

#include <cctype>
#include <chrono>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <string_view>

namespace kmes::audit {
namespace {

using nlohmann::json;

std::string lower(std::string_view text) {
    std::string out(text);
    for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return out;
}

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

// The value of the field under auparse's cursor, and any name to put beside it.
void put_field(auparse_state_t* au, json& into) {
    const char* name = auparse_get_field_name(au);
    const char* raw = auparse_get_field_str(au);
    if (!name || !raw) return;
    const int type = auparse_get_field_type(au);
    const char* interpreted = interpret_checked(au, type, raw);
    const std::string key(name);
    // auparse shows a record's own "type=…" as its first field: the event type says it already.
    if (key == "type" && auparse_get_field_num(au) == 0) return;
    if (into.contains(key)) return;  // the first occurrence wins, as in eventd's reads
    switch (type) {
        case AUPARSE_TYPE_UID:
        case AUPARSE_TYPE_GID: {
            const auto n = decimal(raw);
            if (n) {
                into[key] = *n;
                // 4294967295 is "unset" (-1): auparse says "unset"; the name adds nothing then.
                if (interpreted && std::strcmp(interpreted, "unset") != 0 && std::strcmp(interpreted, raw) != 0)
                    into[key + "_name"] = interpreted;
            } else {
                into[key] = raw;
            }
            return;
        }
        case AUPARSE_TYPE_SYSCALL:
        case AUPARSE_TYPE_ARCH:
            into[key] = interpreted ? interpreted : raw;
            if (type == AUPARSE_TYPE_SYSCALL)
                if (const auto n = decimal(raw)) into["syscall_nr"] = *n;
            return;
        default:
            break;
    }
    if (is_escaped(type)) {
        // "(null)" is how the kernel writes an absent key or name.
        if (std::strcmp(raw, "(null)") == 0) {
            into[key] = nullptr;
            return;
        }
        into[key] = interpreted ? interpreted : raw;
        return;
    }
    // Numbers only where the field is a number: a mode ("0100755"), a permission, flags or a
    // syscall argument look like digits but are octal or hex text.
    const bool numeric = type == AUPARSE_TYPE_UNCLASSIFIED || type == AUPARSE_TYPE_EXIT || type == AUPARSE_TYPE_SESSION;
    if (numeric && !(raw[0] == '0' && raw[1] != '\0'))
        if (const auto n = decimal(raw)) {
            into[key] = *n;
            return;
        }
    std::string_view text(raw);
    if (text.size() >= 2 && text.front() == '"' && text.back() == '"') text = text.substr(1, text.size() - 2);
    into[key] = std::string(text);
}

json record_fields(auparse_state_t* au) {
    json fields = json::object();
    if (auparse_first_field(au) <= 0) return fields;
    do {
        put_field(au, fields);
    } while (auparse_next_field(au) > 0);
    return fields;
}

// The free text of a user-space message: `msg='TEXT key=value …'` whose TEXT is not a field
// (auditctl -m "TEXT", USER_AVC's "avc:  denied { … }"). auparse splits msg='…' into fields and
// drops words without '=': the whole of msg='…' is kept then, so nothing the sender wrote is lost.
std::optional<std::string> free_msg_text(std::string_view record) {
    const size_t start = record.find(" msg='");
    if (start == std::string_view::npos) return std::nullopt;
    std::string_view inner = record.substr(start + 6);
    const size_t end = inner.rfind('\'');
    if (end == std::string_view::npos) return std::nullopt;
    inner = inner.substr(0, end);
    const std::string_view first_word = inner.substr(0, inner.find(' '));
    if (first_word.empty() || first_word.find('=') != std::string_view::npos) return std::nullopt;
    return std::string(inner);
}

// EXECVE: a0, a1, … (and a1[0], a1[1] … for an argument the kernel split) → argv.
json execve_argv(auparse_state_t* au) {
    json argv = json::array();
    if (auparse_first_field(au) <= 0) return argv;
    std::string split;  // pieces of one long argument (aN_len=…, aN[0]=…, aN[1]=…)
    do {
        const char* name = auparse_get_field_name(au);
        if (!name || name[0] != 'a' || !std::isdigit(static_cast<unsigned char>(name[1]))) continue;
        const char* raw = auparse_get_field_str(au);
        const char* value = raw ? interpret_checked(au, AUPARSE_TYPE_ESCAPED, raw) : nullptr;
        if (!value) value = raw;
        const std::string_view n(name);
        if (n.find("_len") != std::string_view::npos) {
            if (!split.empty()) argv.push_back(split);
            split.clear();
            split.reserve(64);
            continue;
        }
        if (n.find('[') != std::string_view::npos) {
            split += value ? value : "";
            continue;
        }
        if (!split.empty()) {
            argv.push_back(split);
            split.clear();
        }
        argv.push_back(value ? value : "");
    } while (auparse_next_field(au) > 0);
    if (!split.empty()) argv.push_back(split);
    return argv;
}

const char* field_text(auparse_state_t* au, const char* name) {
    const char* raw = auparse_find_field(au, name);
    if (!raw) return nullptr;
    const char* interpreted = interpret_checked(au, auparse_get_field_type(au), raw);
    return interpreted ? interpreted : raw;
}

std::optional<uint32_t> id_field(const json& fields, const char* name) {
    const auto it = fields.find(name);
    if (it == fields.end() || !it->is_number_integer()) return std::nullopt;
    const int64_t v = it->get<int64_t>();
    if (v < 0 || v >= 4294967295LL) return std::nullopt;  // unset
    return static_cast<uint32_t>(v);
}

}  // namespace

AuditEvent map_event(auparse_state_t* au) {
    AuditEvent event;
    json& payload = event.payload;
    if (const au_event_t* ts = auparse_get_timestamp(au)) {
        payload["serial"] = static_cast<uint64_t>(ts->serial);
        // A time the kernel never writes (beyond 2262, or negative) has no ns form: nil
        // (found by the audit_mapping fuzz target: the product overflowed).
        int64_t ns = 0;
        const bool fits = ts->sec >= 0 && ts->milli < 1000 &&
                          !__builtin_mul_overflow(static_cast<int64_t>(ts->sec), int64_t{1'000'000'000}, &ns) &&
                          !__builtin_add_overflow(ns, int64_t(ts->milli) * 1'000'000, &ns);
        payload["audit_time"] = fits ? json(ns) : json(nullptr);
    }
    json record_types = json::array();
    json paths = json::array();
    bool first = true;
    if (auparse_first_record(au) > 0) {
        do {
            const std::string type = record_type_name(au);
            if (type == "EOE") continue;
            record_types.push_back(type);
            if (first) {
                first = false;
                event.type = "audit." + lower(type);
                json fields = record_fields(au);
                for (auto& [k, v] : fields.items())
                    if (!payload.contains(k)) payload[k] = v;
                if (const char* text = auparse_get_record_text(au)) {
                    if (auto free_text = free_msg_text(text)) payload["msg"] = std::move(*free_text);
                }
                continue;
            }
            if (type == "EXECVE") {
                payload["argv"] = execve_argv(au);
            } else if (type == "CWD") {
                if (const char* cwd = field_text(au, "cwd")) payload["cwd"] = cwd;
            } else if (type == "PATH") {
                paths.push_back(record_fields(au));
            } else if (type == "PROCTITLE") {
                if (const char* title = field_text(au, "proctitle")) payload["proctitle"] = title;
            } else {
                const std::string key = lower(type);
                json fields = record_fields(au);
                if (!payload.contains(key)) {
                    payload[key] = std::move(fields);
                } else if (payload[key].is_array()) {
                    payload[key].push_back(std::move(fields));
                } else if (payload[key].is_object()) {
                    payload[key] = json::array({payload[key], std::move(fields)});
                }
            }
        } while (auparse_next_record(au) > 0);
    }
    if (event.type.empty()) event.type = "audit.unknown";
    payload["record_types"] = std::move(record_types);
    if (!paths.empty()) payload["paths"] = std::move(paths);
    event.uid = id_field(payload, "uid");
    event.euid = id_field(payload, "euid");
    if (const auto pid = payload.find("pid"); pid != payload.end() && pid->is_number_integer())
        event.pid = static_cast<pid_t>(pid->get<int64_t>());
    return event;
}

std::string record_type_name(auparse_state_t* au) {
    const char* name = auparse_get_type_name(au);
    return name ? name : "UNKNOWN[" + std::to_string(auparse_get_type(au)) + "]";
}

AuditEvent lost_event(uint64_t records, const char* source) {
    const int64_t now =
        std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::system_clock::now().time_since_epoch())
            .count();
    AuditEvent event;
    event.type = "audit.lost";
    event.payload = {{"records", records}, {"source", source}, {"noticed_time", now}};
    return event;
}

}  // namespace kmes::audit

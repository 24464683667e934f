// Synthetic KMES events for the store benchmarks: ~20 event types with skewed frequencies,
// realistic msgpack payloads (maps shaped by the type's family, most with a `user` string and a
// `source` map {name, pid}; ~0.1 % of them with the rare user "mallory"), token, process and
// boot GUIDs. Shared by kmes-bench-query-store (the 10-million-event query store) and
// kmes-bench-index (shards for the index benchmarks), so both measure the same rows.
//
// Everything is drawn from one std::mt19937_64: for a given seed, the same draws in the same
// order give the same store (kmes-bench-query-store's reuse check depends on it).
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <iterator>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <vector>

#include "kmes/guid.hpp"

namespace bench::synthetic {

using nlohmann::json;

// Events come from this many CPUs (as eventd's routing with 4 CPUs).
inline constexpr uint32_t kCpus = 4;
// Distinct payloads per event type that rows draw from.
inline constexpr size_t kPoolPerType = 2048;

inline kmes::Guid guid_of(std::mt19937_64& rng) {
    kmes::Guid g;
    const uint64_t a = rng(), b = rng();
    std::memcpy(g.data(), &a, 8);
    std::memcpy(g.data() + 8, &b, 8);
    g[6] = static_cast<uint8_t>((g[6] & 0x0f) | 0x40);  // looks like a v4 GUID
    g[8] = static_cast<uint8_t>((g[8] & 0x3f) | 0x80);
    return g;
}

// ~20 event types with skewed frequencies (weights), origin class by family.
struct EventType {
    const char* name;
    uint8_t origin;
    uint32_t weight;
    enum Shape { access, process, file, net, login, ring, raw, none } shape;
};
inline constexpr EventType kTypes[] = {
    {"kacs.access.check", 2, 250, EventType::access}, {"kacs.access.denied", 2, 20, EventType::access},
    {"kacs.token.create", 2, 30, EventType::login},   {"kacs.token.adjust", 2, 10, EventType::login},
    {"kacs.privilege.use", 2, 15, EventType::access}, {"lcs.process.start", 3, 120, EventType::process},
    {"lcs.process.exit", 3, 120, EventType::process}, {"lcs.file.open", 3, 180, EventType::file},
    {"lcs.file.write", 3, 60, EventType::file},       {"lcs.file.unlink", 3, 8, EventType::file},
    {"lcs.net.connect", 3, 70, EventType::net},       {"lcs.net.accept", 3, 30, EventType::net},
    {"lcs.module.load", 3, 2, EventType::file},       {"kmes.ring.resize", 1, 1, EventType::ring},
    {"kmes.reader.attach", 1, 2, EventType::ring},    {"app.login.success", 0, 40, EventType::login},
    {"app.login.failure", 0, 8, EventType::login},    {"app.audit.raw", 0, 10, EventType::raw},
    {"app.heartbeat", 0, 20, EventType::none},        {"app.config.change", 0, 4, EventType::login},
};
inline constexpr size_t kTypeCount = std::size(kTypes);

inline constexpr const char* kUsers[] = {"root",  "alice", "bob",   "carol",  "dave",   "erin",    "frank",
                                         "grace", "heidi", "ivan",  "judy",   "mike",   "niaj",    "olivia",
                                         "peggy", "sybil", "trent", "victor", "walter", "www-data"};
inline constexpr const char* kPrograms[] = {"sshd",     "systemd", "cron",     "bash",        "nginx",
                                            "postgres", "python3", "curl",     "sudo",        "git",
                                            "make",     "gcc",     "journald", "dbus-daemon", "NetworkManager"};
inline constexpr const char* kPaths[] = {"/etc/passwd",
                                         "/etc/shadow",
                                         "/var/log/syslog",
                                         "/home/alice/notes.txt",
                                         "/usr/bin/python3",
                                         "/var/lib/postgresql/data/base/16384/2619",
                                         "/tmp/build-1234/main.o",
                                         "/etc/ssl/certs/ca-certificates.crt",
                                         "/proc/self/status",
                                         "/srv/www/index.html"};

// One payload per (type, pool slot): maps shaped by the type's family; the rare user
// "mallory" (~0.1 % of rows) is what the benchmark's payload WHERE looks for.
inline std::vector<uint8_t> make_payload(const EventType& t, std::mt19937_64& rng) {
    auto pick = [&](auto& list) { return list[rng() % std::size(list)]; };
    const bool mallory = rng() % 1000 == 0;
    const std::string user = mallory ? "mallory" : pick(kUsers);
    const uint64_t uid = mallory ? 6666 : (user == "root" ? 0 : 1000 + rng() % 20);
    const uint64_t pid = 100 + rng() % 60000;
    json source = {{"name", pick(kPrograms)}, {"pid", pid}};
    json p;
    switch (t.shape) {
        case EventType::access:
            p = {{"user", user},
                 {"uid", uid},
                 {"object", pick(kPaths)},
                 {"desired_access", rng() % 2 ? "read" : "read,write"},
                 {"granted", rng() % 10 != 0},
                 {"source", source},
                 {"duration_us", double(rng() % 100000) / 1000.0}};
            break;
        case EventType::process:
            p = {{"user", user},
                 {"uid", uid},
                 {"pid", pid},
                 {"ppid", 1 + rng() % 5000},
                 {"exe", std::string("/usr/bin/") + pick(kPrograms)},
                 {"argv", json::array({pick(kPrograms), "--verbose", std::to_string(rng() % 100)})},
                 {"exit_code", rng() % 20 == 0 ? 1 : 0},
                 {"source", source}};
            break;
        case EventType::file:
            p = {{"user", user},
                 {"uid", uid},
                 {"path", pick(kPaths)},
                 {"flags", rng() % 4},
                 {"bytes", rng() % 1'000'000},
                 {"source", source}};
            break;
        case EventType::net:
            p = {{"user", user},
                 {"uid", uid},
                 {"addr", "10.0." + std::to_string(rng() % 256) + "." + std::to_string(rng() % 256)},
                 {"port", rng() % 2 ? 443 : 1024 + rng() % 60000},
                 {"bytes_sent", rng() % 100000},
                 {"bytes_received", rng() % 1000000},
                 {"source", source}};
            break;
        case EventType::login:
            p = {{"user", user},
                 {"uid", uid},
                 {"session", rng() % 100000},
                 {"tty", "pts/" + std::to_string(rng() % 8)},
                 {"remote", "192.168.1." + std::to_string(rng() % 256)},
                 {"source", source}};
            break;
        case EventType::ring:
            p = {{"cpu", rng() % kCpus}, {"capacity", 4194304}, {"fill_percent", double(rng() % 1000) / 10.0}};
            break;
        case EventType::raw: {  // not msgpack at all: raw bytes, as KMES producers may send
            std::vector<uint8_t> bytes(24 + rng() % 40);
            for (auto& b : bytes) b = static_cast<uint8_t>(rng());
            bytes[0] = 0xc1;  // never a valid msgpack start
            return bytes;
        }
        case EventType::none:
            return {};
    }
    return json::to_msgpack(p);
}

// What a store draws its rows from, made once per store: kPoolPerType payloads per type,
// 64 tokens (one per user session), 4096 process GUIDs, two boots.
struct Pools {
    std::vector<std::vector<std::vector<uint8_t>>> payloads;  // [type][slot]
    std::vector<kmes::Guid> tokens = std::vector<kmes::Guid>(64);
    std::vector<kmes::Guid> processes = std::vector<kmes::Guid>(4096);
    kmes::Guid boots[2];
    std::vector<uint32_t> cumulative;  // running sums of the types' weights
    uint32_t total_weight = 0;

    explicit Pools(std::mt19937_64& rng) : payloads(kTypeCount) {
        for (size_t t = 0; t < kTypeCount; ++t)
            for (size_t i = 0; i < kPoolPerType; ++i) payloads[t].push_back(make_payload(kTypes[t], rng));
        for (auto& g : tokens) g = guid_of(rng);
        for (auto& g : processes) g = guid_of(rng);
        boots[0] = guid_of(rng);
        boots[1] = guid_of(rng);
        for (const auto& t : kTypes) cumulative.push_back(total_weight += t.weight);
    }

    // An index into kTypes, drawn by weight.
    size_t pick_type(std::mt19937_64& rng) const {
        const uint32_t r = static_cast<uint32_t>(rng() % total_weight);
        return static_cast<size_t>(std::upper_bound(cumulative.begin(), cumulative.end(), r) - cumulative.begin());
    }
};

}  // namespace bench::synthetic

// Forged product records in a sealed store (issue 39 part 3; ABI.md "Reserved namespaces").
// A shim before issue 39 let any emitter write synthetic.checkpoint, audit.*, kmes.*, …; its
// rows stay in the stores it fed. `eventctl verify` must take them for what they are, ordinary
// rows — never "a bad checkpoint", never the end of a shard's check — and a shim of today
// refuses them (EPERM), so a store into which every reserved type was attempted verifies.
// The old shim is the real kmes-shimd with the test-only KMES_TEST_ALLOW_RESERVED_TYPES=1.
#include <algorithm>
#include <cerrno>
#include <cstdlib>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "eventd/pipeline.hpp"
#include "kmes/kmes.h"
#include "seal_fixture.hpp"

using namespace eventd::seal_it;
using nlohmann::json;

namespace {

using Status = FileVerdict::Status;

const std::vector<std::string> kReservedTypes = {
    "synthetic.checkpoint", "synthetic.gap",        "synthetic.startup", "audit.syscall",
    "audit.lost",           "kmes.config_rejected", "bpf.exec",          "alert.high"};

int emit(const std::string& type, const std::vector<uint8_t>& payload) {
    return kmes_emit(type.data(), uint16_t(type.size()), payload.data(), uint32_t(payload.size())) == 0 ? 0 : errno;
}

// What a forger would write for each type: a real checkpoint's payload copied for the
// checkpoint (the most convincing forgery there is), kernel-looking maps for the rest.
std::vector<uint8_t> forged_payload(const std::string& type, const std::vector<uint8_t>& real_checkpoint) {
    if (type == "synthetic.checkpoint") return real_checkpoint;
    if (type == "synthetic.gap") return json::to_msgpack(json{{"count", 1000}, {"first_sequence", 1}});
    return json::to_msgpack(json{{"uid", 0}, {"exe", "/usr/bin/sudo"}, {"key", "exec"}});
}

// Exit 0 and every shard verified: nothing broken, nothing unsealed after the clean stop.
void check_verified(const VerifyRun& v) {
    INFO(v);
    CHECK(v.exit_code == 0);
    CHECK_THAT(v.summary, Catch::StartsWith("verify: OK: "));
    CHECK(v.files.size() == 2);
    for (const auto& [file, f] : v.files) {
        INFO(file);
        CHECK(f.status == Status::verified);
    }
}

struct AllowReservedTypes {
    AllowReservedTypes() { setenv("KMES_TEST_ALLOW_RESERVED_TYPES", "1", 1); }
    ~AllowReservedTypes() { unsetenv("KMES_TEST_ALLOW_RESERVED_TYPES"); }
};

}  // namespace

TEST_CASE("forged: reserved types an old shim let through are ordinary rows to verify; today's shim refuses them",
          "[forged]") {
    test_support::TempDir dir;
    const std::string store = dir.str() + "/events";
    const std::string key = setup_sealing(store);
    std::optional<AllowReservedTypes> old_shim{std::in_place};
    eventd::it::Pipeline p({.cpus = 2,
                            .generate = "rate=300,payload=64",
                            .eventd = {{"CheckpointIntervalSeconds", 1}},
                            .store_dir = store});
    old_shim.reset();  // the environment was read at the shim's start
    auto log = [&] { return p.eventd().log(); };
    p.start_eventd();
    wait_checkpoints(store, 2, 2, {}, log);

    // Every reserved type forged through the old shim, then sealed by later checkpoints.
    std::vector<uint8_t> real_checkpoint;
    {
        Db db(store + "/shard-0000.db");
        const auto cps = checkpoints(db);
        REQUIRE(!cps.empty());
        real_checkpoint = *read_rows(db, "id = " + std::to_string(cps.back().id)).at(0).payload;
    }
    for (const std::string& type : kReservedTypes) {
        INFO(type);
        REQUIRE(emit(type, forged_payload(type, real_checkpoint)) == 0);
    }
    wait_checkpoints(store, 2, 2, last_ids(store), log);
    p.stop_eventd();

    // A shim of today (a KMES reboot without the test knob): every attempt is EPERM.
    p.restart_shim();
    p.start_eventd();
    for (const std::string& type : kReservedTypes) {
        INFO(type);
        CHECK(emit(type, forged_payload(type, real_checkpoint)) == EPERM);
    }
    wait_checkpoints(store, 2, 2, last_ids(store), log);
    p.stop_eventd();

    // The forged rows are there — as rows of an emitter (origin class 0, a ring's sequence) —
    // and the store verifies: they are chained like any row and accuse nobody.
    int64_t forged = 0, forged_checkpoint = 0;
    std::string forged_file;
    for (const std::string& file : active_shards(store)) {
        Db db(store + "/" + file);
        for (const Row& r : read_rows(db, "origin_class = 0 AND sequence IS NOT NULL")) {
            if (r.event_type == kCheckpointType && !forged_checkpoint) {
                forged_checkpoint = r.id;
                forged_file = file;
            }
            forged += std::find(kReservedTypes.begin(), kReservedTypes.end(), r.event_type) != kReservedTypes.end();
        }
    }
    CHECK(forged == int64_t(kReservedTypes.size()));
    REQUIRE(forged_checkpoint > 0);
    check_verified(verify(store, key));

    // The check goes on past the forged checkpoint: a row changed after it is found at its id.
    Db db(store + "/" + forged_file);
    const int64_t later = forged_checkpoint + 1;
    db.exec("UPDATE events SET timestamp = timestamp + 1 WHERE id = " + std::to_string(later));
    const VerifyRun v = verify(store, key);
    INFO(v);
    CHECK(v.exit_code == 1);
    const FileVerdict f = v.file(forged_file);
    CHECK(f.status == Status::broken);
    CHECK(f.kind == "changed row");
    CHECK(f.row == later);
}

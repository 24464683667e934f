#include "seal_fixture.hpp"

#include <sqlite3.h>

#include <chrono>
#include <cstring>
#include <filesystem>
#include <set>
#include <sstream>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "base/hex.hpp"
#include "eventd/pipeline.hpp"
#include "support/eventctl_runner.hpp"
#include "support/eventually.hpp"
#include "support/store_reader.hpp"

namespace eventd::seal_it {
namespace fs = std::filesystem;

uint64_t now_ns() {
    return uint64_t(std::chrono::duration_cast<std::chrono::nanoseconds>(
                        std::chrono::system_clock::now().time_since_epoch())
                        .count());
}

std::string setup_sealing(const std::string& store, std::string* stdout_text) {
    const query_it::SealSetup setup = query_it::setup_sealing_keys(store);
    INFO(setup.error);
    REQUIRE(setup.error.empty());
    if (stdout_text) *stdout_text = setup.run.out;
    return setup.key;
}

namespace {

FileVerdict parse_verdict(const std::string& line) {
    FileVerdict v;
    v.line = line;
    const size_t colon = line.find(": ");
    if (colon == std::string::npos) return v;
    std::istringstream counts(line.substr(colon + 2));
    std::string rows_word, checkpoints_word;
    if (!(counts >> v.rows >> rows_word >> v.checkpoints >> checkpoints_word)) return v;
    if (const size_t b = line.find(": BROKEN: "); b != std::string::npos) {
        v.status = FileVerdict::Status::broken;
        const std::string rest = line.substr(b + 10);
        const size_t at = rest.find(" at row ");
        const size_t end = rest.find(": ");
        if (at != std::string::npos && (end == std::string::npos || at < end)) {
            v.kind = rest.substr(0, at);
            v.row = std::stoll(rest.substr(at + 8));
        } else {
            v.kind = rest.substr(0, end);
        }
        if (end != std::string::npos) v.what = rest.substr(end + 2);
    } else if (const size_t u = line.find(": verified through row "); u != std::string::npos) {
        v.status = FileVerdict::Status::unsealed;
        const std::string rest = line.substr(u + 23);
        v.sealed_through = std::stoll(rest);
        if (const size_t semi = rest.find("; "); semi != std::string::npos) v.what = rest.substr(semi + 2);
    } else if (line.size() >= 10 && line.compare(line.size() - 10, 10, ": verified") == 0) {
        v.status = FileVerdict::Status::verified;
    }
    return v;
}

}  // namespace

FileVerdict VerifyRun::file(const std::string& name) const {
    const auto it = files.find(name);
    return it == files.end() ? FileVerdict{} : it->second;
}

std::ostream& operator<<(std::ostream& out, const VerifyRun& run) {
    return out << "eventctl verify: exit " << run.exit_code << "\nstdout:\n" << run.out << "stderr:\n" << run.err;
}

VerifyRun verify(const std::string& store, const std::string& key) {
    const auto r = query_it::run_command({query_it::eventctl_path(), "verify", "--store", store, "--key", key},
                                         std::chrono::seconds(60));
    VerifyRun v;
    v.exit_code = r.timed_out ? -1 : r.exit_code;
    v.out = r.out;
    v.err = r.err;
    std::istringstream lines(r.out);
    std::string line;
    while (std::getline(lines, line)) {
        if (line.empty()) continue;
        v.summary = line;
        const size_t colon = line.find(": ");
        if (line.rfind("verify: ", 0) == 0 || colon == std::string::npos) continue;
        v.files[line.substr(0, colon)] = parse_verdict(line);
    }
    return v;
}

void copy_store(const std::string& from, const std::string& to) {
    fs::create_directories(to);
    for (const auto& entry : fs::directory_iterator(from))
        if (entry.is_regular_file()) fs::copy_file(entry.path(), fs::path(to) / entry.path().filename());
}

// ---- the attacker's SQLite ----

Db::Db(const std::string& path) : path_(path) {
    const int rc = sqlite3_open_v2(path.c_str(), &db_, SQLITE_OPEN_READWRITE, nullptr);
    INFO(path << ": " << (db_ ? sqlite3_errmsg(db_) : sqlite3_errstr(rc)));
    REQUIRE(rc == SQLITE_OK);
    sqlite3_busy_timeout(db_, 30000);  // a running eventd commits every few milliseconds
}

Db::~Db() { sqlite3_close_v2(db_); }

void Db::exec(const std::string& sql) {
    char* error = nullptr;
    const int rc = sqlite3_exec(db_, sql.c_str(), nullptr, nullptr, &error);
    const std::string text = error ? error : "";
    sqlite3_free(error);
    INFO(path_ << ": " << sql << ": " << text);
    REQUIRE(rc == SQLITE_OK);
}

namespace {

struct Stmt {
    sqlite3_stmt* s = nullptr;
    Stmt(sqlite3* db, const std::string& sql) {
        const int rc = sqlite3_prepare_v2(db, sql.c_str(), -1, &s, nullptr);
        INFO(sql << ": " << sqlite3_errmsg(db));
        REQUIRE(rc == SQLITE_OK);
    }
    ~Stmt() { sqlite3_finalize(s); }
};

std::optional<std::vector<uint8_t>> blob_column(sqlite3_stmt* s, int i) {
    if (sqlite3_column_type(s, i) == SQLITE_NULL) return std::nullopt;
    const auto* p = static_cast<const uint8_t*>(sqlite3_column_blob(s, i));
    return std::vector<uint8_t>(p, p + sqlite3_column_bytes(s, i));
}

std::optional<int64_t> int_column(sqlite3_stmt* s, int i) {
    if (sqlite3_column_type(s, i) == SQLITE_NULL) return std::nullopt;
    return sqlite3_column_int64(s, i);
}

void bind_blob(sqlite3_stmt* s, int i, const std::optional<std::vector<uint8_t>>& b) {
    if (!b)
        sqlite3_bind_null(s, i);
    else
        sqlite3_bind_blob(s, i, b->data(), int(b->size()), SQLITE_TRANSIENT);
}

void bind_int(sqlite3_stmt* s, int i, const std::optional<int64_t>& v) {
    if (!v)
        sqlite3_bind_null(s, i);
    else
        sqlite3_bind_int64(s, i, *v);
}

std::optional<std::span<const uint8_t>> span_of(const std::optional<std::vector<uint8_t>>& b) {
    if (!b) return std::nullopt;
    return std::span<const uint8_t>(*b);
}

std::optional<kmes::Guid> guid_of(const std::optional<std::vector<uint8_t>>& b) {
    if (!b) return std::nullopt;
    REQUIRE(b->size() == 16);
    kmes::Guid g;
    std::memcpy(g.data(), b->data(), 16);
    return g;
}

}  // namespace

std::optional<std::string> Db::text(const std::string& sql) {
    Stmt st(db_, sql);
    const int rc = sqlite3_step(st.s);
    if (rc != SQLITE_ROW) return std::nullopt;
    const auto* t = reinterpret_cast<const char*>(sqlite3_column_text(st.s, 0));
    return std::string(t ? t : "");
}

int64_t Db::integer(const std::string& sql) {
    Stmt st(db_, sql);
    INFO(path_ << ": " << sql);
    REQUIRE(sqlite3_step(st.s) == SQLITE_ROW);
    return sqlite3_column_int64(st.s, 0);
}

std::vector<int64_t> Db::ids(const std::string& sql) {
    Stmt st(db_, sql);
    std::vector<int64_t> out;
    int rc;
    while ((rc = sqlite3_step(st.s)) == SQLITE_ROW) out.push_back(sqlite3_column_int64(st.s, 0));
    REQUIRE(rc == SQLITE_DONE);
    return out;
}

std::string Db::metadata(const std::string& key) {
    const auto value = text("SELECT value FROM metadata WHERE key = '" + key + "'");
    INFO(path_ << ": metadata " << key);
    REQUIRE(value);
    return *value;
}

void Db::set_metadata(const std::string& key, const std::string& value) {
    exec("INSERT OR REPLACE INTO metadata (key, value) VALUES ('" + key + "', '" + value + "')");
}

store::StoredRow Row::view() const {
    store::StoredRow r;
    r.id = id;
    r.boot_id = std::span<const uint8_t>(boot_id);
    r.timestamp = timestamp;
    if (cpu_id) r.cpu_id = uint16_t(*cpu_id);
    if (sequence) r.sequence = uint64_t(*sequence);
    if (origin_class) r.origin_class = uint8_t(*origin_class);
    r.event_type = event_type;
    r.effective_token = span_of(effective_token);
    r.true_token = span_of(true_token);
    r.process = span_of(process);
    r.payload = span_of(payload);
    return r;
}

store::EventRow Row::event_row() const {
    store::EventRow r;
    REQUIRE(boot_id.size() == 16);
    std::memcpy(r.boot_id.data(), boot_id.data(), 16);
    r.timestamp = timestamp;
    if (cpu_id) r.cpu_id = uint16_t(*cpu_id);
    if (sequence) r.sequence = uint64_t(*sequence);
    if (origin_class) r.origin_class = uint8_t(*origin_class);
    r.event_type = event_type;
    r.effective_token = guid_of(effective_token);
    r.true_token = guid_of(true_token);
    r.process = guid_of(process);
    r.payload = payload;
    return r;
}

std::vector<Row> read_rows(Db& db, const std::string& where) {
    Stmt st(db.raw(),
            "SELECT id, boot_id, timestamp, cpu_id, sequence, origin_class, event_type, effective_token_guid, "
            "true_token_guid, process_guid, payload FROM events" +
                (where.empty() ? std::string() : " WHERE " + where) + " ORDER BY id");
    std::vector<Row> rows;
    int rc;
    while ((rc = sqlite3_step(st.s)) == SQLITE_ROW) {
        Row r;
        r.id = sqlite3_column_int64(st.s, 0);
        r.boot_id = blob_column(st.s, 1).value_or(std::vector<uint8_t>());
        r.timestamp = uint64_t(sqlite3_column_int64(st.s, 2));
        r.cpu_id = int_column(st.s, 3);
        r.sequence = int_column(st.s, 4);
        r.origin_class = int_column(st.s, 5);
        const auto* t = reinterpret_cast<const char*>(sqlite3_column_text(st.s, 6));
        r.event_type = t ? t : "";
        r.effective_token = blob_column(st.s, 7);
        r.true_token = blob_column(st.s, 8);
        r.process = blob_column(st.s, 9);
        r.payload = blob_column(st.s, 10);
        rows.push_back(std::move(r));
    }
    REQUIRE(rc == SQLITE_DONE);
    return rows;
}

void write_row(Db& db, const Row& r) {
    Stmt st(db.raw(),
            "INSERT OR REPLACE INTO events (id, boot_id, timestamp, cpu_id, sequence, origin_class, event_type, "
            "effective_token_guid, true_token_guid, process_guid, payload) "
            "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)");
    sqlite3_bind_int64(st.s, 1, r.id);
    sqlite3_bind_blob(st.s, 2, r.boot_id.data(), int(r.boot_id.size()), SQLITE_TRANSIENT);
    sqlite3_bind_int64(st.s, 3, int64_t(r.timestamp));
    bind_int(st.s, 4, r.cpu_id);
    bind_int(st.s, 5, r.sequence);
    bind_int(st.s, 6, r.origin_class);
    sqlite3_bind_text(st.s, 7, r.event_type.c_str(), -1, SQLITE_TRANSIENT);
    bind_blob(st.s, 8, r.effective_token);
    bind_blob(st.s, 9, r.true_token);
    bind_blob(st.s, 10, r.process);
    bind_blob(st.s, 11, r.payload);
    const int rc = sqlite3_step(st.s);
    INFO("write row " << r.id << ": " << sqlite3_errmsg(db.raw()));
    REQUIRE(rc == SQLITE_DONE);
}

store::ChainPoint rechain(Db& db, bool rewrite_checkpoint_heads) {
    const auto origin = store::parse_chain_point(db.metadata("chain_origin"));
    REQUIRE(origin);
    const std::string file_id = db.metadata("file_id");
    const bool own_transaction = sqlite3_get_autocommit(db.raw()) != 0;
    if (own_transaction) db.exec("BEGIN IMMEDIATE");
    const std::string after_origin = " WHERE last_id > " + std::to_string(origin->id);
    const auto eventd_ends = db.ids("SELECT last_id FROM chain_segments" + after_origin);
    std::set<int64_t> ends(eventd_ends.begin(), eventd_ends.end());
    db.exec("DELETE FROM chain_segments" + after_origin);
    auto rows = read_rows(db, "id > " + std::to_string(origin->id));
    store::ChainPoint point = *origin;
    store::SegmentHasher segment;
    auto close = [&] {
        point = {segment.last_id(), segment.finish()};
        Stmt st(db.raw(), "INSERT INTO chain_segments (last_id, first_id, head, tags) VALUES (?1, ?2, ?3, ?4)");
        sqlite3_bind_int64(st.s, 1, segment.last_id());
        sqlite3_bind_int64(st.s, 2, segment.first_id());
        sqlite3_bind_blob(st.s, 3, point.head.data(), int(point.head.size()), SQLITE_TRANSIENT);
        sqlite3_bind_blob(st.s, 4, segment.tags().data(), int(segment.tags().size()), SQLITE_TRANSIENT);
        REQUIRE(sqlite3_step(st.s) == SQLITE_DONE);
    };
    for (Row& r : rows) {
        REQUIRE(r.id == (segment.open() ? segment.last_id() : point.id) + 1);  // contiguous ids
        auto c = r.checkpoint() && r.payload ? seal::parse_checkpoint(*r.payload) : std::nullopt;
        if (c && base::hex_text(c->file_id) == file_id) {
            if (segment.open()) close();  // a checkpoint signs the head before it
            if (rewrite_checkpoint_heads) {
                auto j = nlohmann::json::from_msgpack(*r.payload);
                j["head"] = base::hex_text(point.head);
                r.payload = nlohmann::json::to_msgpack(j);
                write_row(db, r);
            }
        }
        if (!segment.open()) segment.start(point.head, r.id);
        segment.add(store::row_digest(r.view()));
        if (ends.count(r.id) || &r == &rows.back()) close();
    }
    db.set_metadata("chain_head", store::chain_point_text(point));
    if (own_transaction) db.exec("COMMIT");
    return point;
}

store::ChainPoint cut_after(Db& db, int64_t last) {
    db.exec("BEGIN IMMEDIATE");
    db.exec("DELETE FROM events WHERE id > " + std::to_string(last));
    const store::ChainPoint point = rechain(db);
    db.exec("COMMIT");
    REQUIRE(point.id == last);
    return point;
}

std::vector<CheckpointRow> checkpoints(Db& db) {
    std::vector<CheckpointRow> out;
    for (const Row& r : read_rows(db, std::string("event_type = '") + kCheckpointType + "'")) {
        INFO("checkpoint row " << r.id);
        REQUIRE(r.payload);
        auto c = seal::parse_checkpoint(*r.payload);
        REQUIRE(c);
        out.push_back({r.id, *c});
    }
    return out;
}

std::vector<std::string> active_shards(const std::string& store) {
    std::vector<std::string> out;
    for (const std::string& f : it::shard_files(store))
        if (f.size() == 13 && f.rfind("shard-", 0) == 0 && f.find('.') == 10) out.push_back(f);
    return out;
}

std::map<std::string, int64_t> last_ids(const std::string& store) {
    std::map<std::string, int64_t> out;
    for (const std::string& f : active_shards(store)) {
        const auto id = it::query_text(store + "/" + f, "SELECT coalesce(max(id), 0) FROM events");
        REQUIRE(id);
        out[f] = std::stoll(*id);
    }
    return out;
}

int64_t count_checkpoints(const std::string& path, int64_t after) {
    const auto n = it::query_text(path, std::string("SELECT count(*) FROM events WHERE event_type = '") +
                                            kCheckpointType + "' AND id > " + std::to_string(after));
    return n ? std::stoll(*n) : 0;
}

void wait_checkpoints(const std::string& store, size_t shards, int64_t n, const std::map<std::string, int64_t>& after,
                      const std::function<std::string()>& log) {
    const bool done = test_support::eventually(
        [&] {
            const auto files = active_shards(store);
            if (files.size() < shards) return false;
            for (const std::string& f : files) {
                const auto it = after.find(f);
                if (count_checkpoints(store + "/" + f, it == after.end() ? 0 : it->second) < n) return false;
            }
            return true;
        },
        std::chrono::seconds(30), std::chrono::milliseconds(100));
    INFO("waiting for " << n << " checkpoint(s) in each of " << shards << " shards of " << store << "; eventd log:\n"
                        << (log && !done ? log() : std::string()));
    REQUIRE(done);
}

// ---- the shared sealed store ----

namespace {

std::unique_ptr<SealedStore> make_stopped_store() {
    auto s = std::make_unique<SealedStore>();
    s->store = s->dir.str() + "/events";
    s->key = setup_sealing(s->store);
    s->early_keys = s->dir.str() + "/early-keys";
    fs::create_directories(s->early_keys);
    for (const char* name : {seal::kKeyFile, seal::kCertsFile}) fs::copy_file(s->store + "/" + name, s->early_keys + "/" + name);
    {
        it::Pipeline p({.cpus = 2,
                        .generate = "rate=500,payload=64",
                        .eventd = {{"CheckpointIntervalSeconds", 1}},
                        .store_dir = s->store});
        p.start_eventd();
        wait_checkpoints(s->store, 2, 5, {}, [&] { return p.eventd().log(); });
        p.stop_eventd();
    }
    s->shards = it::shard_files(s->store);
    REQUIRE(s->shards == std::vector<std::string>{"shard-0000.db", "shard-0001.db"});
    const VerifyRun v = verify(s->store, s->key);
    INFO(v);
    REQUIRE(v.exit_code == 0);
    return s;
}

}  // namespace

const SealedStore& stopped_store() {
    static std::unique_ptr<SealedStore> store;
    if (!store) store = make_stopped_store();  // a failed attempt throws and is tried again by the next case
    return *store;
}

std::unique_ptr<StoreCopy> copy_of_stopped_store() {
    const SealedStore& s = stopped_store();
    auto copy = std::make_unique<StoreCopy>();
    copy->store = copy->dir.str() + "/events";
    copy_store(s.store, copy->store);
    return copy;
}

}  // namespace eventd::seal_it

// One query-test environment: a temporary directory (0755) holding a real kmes-shimd (no
// generators: the rings stay quiet unless a test emits), the fixture store (fixture_store.hpp),
// eventd.json and a real eventd serving <dir>/query.sock, plus a copy of eventctl that every
// local user can execute (the build tree under /work need not be reachable by `nobody`).
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "support/eventctl_runner.hpp"
#include "support/eventd_fixture.hpp"
#include "support/fixture_store.hpp"
#include "support/shim_fixture.hpp"
#include "support/temp_dir.hpp"

namespace eventd::query_it {

struct EnvOptions {
    nlohmann::json eventd = nlohmann::json::object();  // eventd.json overrides (null removes a key)
    bool fixture = true;                               // build the fixture store first
    uint32_t cpus = 2;
    uint64_t filler_rows = 0;  // add_filler_shard(store, 3, n) when > 0
    std::string generate;      // kmes-shimd --generate spec (events on every ring); empty: quiet rings
    nlohmann::json kmes_config = nlohmann::json::object();  // kmes.json (e.g. a small BufferCapacity)
    // Called with store() once the shim runs and the fixture store is built, before eventd first
    // starts: what must be in the store from eventd's first start (`eventctl seal --setup`).
    std::function<void(const std::string& store)> before_eventd;
};

class QueryEnv {
public:
    explicit QueryEnv(EnvOptions options = {});  // REQUIREs eventd readiness
    ~QueryEnv();

    const std::string& dir() const { return dir_.str(); }
    std::string store() const { return dir_ / "events"; }
    std::string socket() const { return dir_ / "query.sock"; }
    std::string eventctl() const { return dir_ / "eventctl"; }
    const FixtureInfo& fixture() const { return fixture_; }
    kmes::it::ShimProcess& shim() { return *shim_; }
    eventd::it::EventdProcess& eventd() { return *eventd_; }

    // eventctl --socket <sock> --format <format> QUERY, as `as` (root when nullopt).
    RunResult query(const std::string& text, const std::optional<RunAs>& as = std::nullopt,
                    const std::string& format = "jsonl", std::chrono::milliseconds timeout = std::chrono::seconds(20));
    std::vector<std::string> query_argv(const std::string& text, const std::optional<RunAs>& as = std::nullopt,
                                        const std::string& format = "jsonl") const;

    // Rewrite eventd.json with `overrides` on top of this environment's base and SIGHUP eventd;
    // returns once eventd logged that `changed_key` changed.
    void reload(const nlohmann::json& overrides, const std::string& changed_key);
    // Stop eventd (clean exit CHECKed), return its log.
    std::string stop_eventd();
    void start_eventd();

private:
    nlohmann::json config(const nlohmann::json& overrides) const;

    test_support::TempDir dir_;
    std::unique_ptr<kmes::it::ShimProcess> shim_;
    FixtureInfo fixture_;
    nlohmann::json base_;
    std::unique_ptr<eventd::it::EventdProcess> eventd_;
};

// stdout of a jsonl run as parsed lines; a line that does not parse → a Catch2 FAIL naming it.
std::vector<nlohmann::json> parse_jsonl(const std::string& out);

}  // namespace eventd::query_it

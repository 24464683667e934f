#include "support/query_env.hpp"

#include <sys/stat.h>
#include <sys/wait.h>

#include <csignal>
#include <filesystem>
#include <sstream>

#include <catch2/catch.hpp>

#include "support/eventually.hpp"

namespace eventd::query_it {

QueryEnv::QueryEnv(EnvOptions options) {
    kmes::it::ShimOptions shim{.config = options.kmes_config, .cpus = options.cpus};
    if (!options.generate.empty()) shim.extra_args = {"--generate", options.generate};
    shim_ = kmes::it::ShimProcess::start(std::move(shim));
    if (options.fixture) fixture_ = build_fixture_store(store());
    if (options.filler_rows) add_filler_shard(store(), 3, options.filler_rows);
    // The fixture's timestamps reach back to 2026-03-01: retention must not touch them.
    base_ = {{"StorageShards", 2}, {"EventRetentionDays", 3650}};
    for (auto it = options.eventd.begin(); it != options.eventd.end(); ++it) base_[it.key()] = it.value();
    eventd::it::write_json_file(dir_ / "eventd.json", config(nlohmann::json::object()));
    std::filesystem::copy_file(eventctl_path(), eventctl(), std::filesystem::copy_options::overwrite_existing);
    chmod(eventctl().c_str(), 0755);
    if (options.before_eventd) options.before_eventd(store());
    start_eventd();
}

QueryEnv::~QueryEnv() {
    eventd_.reset();
    shim_.reset();
}

nlohmann::json QueryEnv::config(const nlohmann::json& overrides) const {
    nlohmann::json o = base_;
    for (auto it = overrides.begin(); it != overrides.end(); ++it) o[it.key()] = it.value();
    return eventd::it::eventd_config(dir(), shim_->socket_path(), o);
}

void QueryEnv::start_eventd() { eventd_ = eventd::it::EventdProcess::start(dir(), dir_ / "eventd.json"); }

std::string QueryEnv::stop_eventd() {
    const int status = eventd_->terminate();
    const std::string log = eventd_->log();
    INFO("eventd ended with " << kmes::it::describe_status(status) << "; log:\n" << log);
    CHECK((WIFEXITED(status) && WEXITSTATUS(status) == 0));
    eventd_.reset();
    return log;
}

void QueryEnv::reload(const nlohmann::json& overrides, const std::string& changed_key) {
    const std::string marker = "configuration key " + changed_key + " changed";
    const auto logged = [&] {
        size_t n = 0;
        const std::string log = eventd_->log();
        for (size_t at = log.find(marker); at != std::string::npos; at = log.find(marker, at + 1)) ++n;
        return n;
    };
    const size_t before = logged();
    eventd::it::write_json_file(dir_ / "eventd.json", config(overrides));
    eventd_->signal(SIGHUP);
    if (!test_support::eventually([&] { return logged() > before; }, std::chrono::seconds(10),
                                  std::chrono::milliseconds(20)))
        FAIL("eventd did not log \"" << marker << "\" after SIGHUP; log:\n" << eventd_->log());
}

std::vector<std::string> QueryEnv::query_argv(const std::string& text, const std::optional<RunAs>& as,
                                              const std::string& format) const {
    return command_as(as, {eventctl(), "--socket", socket(), "--format", format, text});
}

RunResult QueryEnv::query(const std::string& text, const std::optional<RunAs>& as, const std::string& format,
                          std::chrono::milliseconds timeout) {
    return run_command(query_argv(text, as, format), timeout);
}

std::vector<nlohmann::json> parse_jsonl(const std::string& out) {
    std::vector<nlohmann::json> records;
    std::istringstream in(out);
    std::string line;
    while (std::getline(in, line)) {
        if (line.empty()) continue;
        try {
            records.push_back(nlohmann::json::parse(line));
        } catch (const std::exception& e) {
            FAIL("eventctl printed a line that is not JSON: " << line << " (" << e.what() << ")");
        }
    }
    return records;
}

}  // namespace eventd::query_it

#include "support/shim_fixture.hpp"

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <stdexcept>

#include <catch2/catch.hpp>

namespace kmes::it {
namespace {

void write_file(const std::string& path, const std::string& text) {
    // Write in place (truncate + write + close): the shim's inotify watch sees IN_CLOSE_WRITE.
    std::ofstream out(path, std::ios::trunc);
    out << text;
    out.close();
    if (!out) throw std::runtime_error("cannot write " + path);
}

DaemonCommand shim_command(const ShimOptions& options, const test_support::TempDir& dir, const std::string& config_path,
                           const std::string& socket_path) {
    std::vector<std::string> args{path_from_env("KMES_SHIMD"), "--config", config_path, "--socket", socket_path};
    if (options.cpus) args.insert(args.end(), {"--cpus", std::to_string(options.cpus)});
    args.insert(args.end(), options.extra_args.begin(), options.extra_args.end());
    return {
        .name = "kmes-shimd",
        .args = std::move(args),
        .log_path = dir / "shim.log",
        .notify_path = dir / "notify.sock",
        .withheld_env = {},
        .ready_timeout = std::chrono::seconds(10),
        .stop_timeout = std::chrono::seconds(10),
    };
}

}  // namespace

ShimFiles::ShimFiles(const ShimOptions& options) {
    socket_path_ = options.socket_path.value_or(dir_ / "kmes.sock");
    std::filesystem::create_directories(dir_ / "etc");
    config_path_ = dir_ / "etc/kmes.json";
    config_file_ = config_path_;
    if (options.config_via_symlink) {
        std::filesystem::create_directories(dir_ / "real");
        config_file_ = dir_ / "real/kmes.json";
        std::filesystem::create_symlink(config_file_, config_path_);
    }
    write_file(config_file_, options.raw_config ? *options.raw_config : options.config.dump(2));
}

ShimProcess::ShimProcess(ShimOptions options)
    : ShimFiles(options), DaemonProcess(shim_command(options, dir_, config_path_, socket_path_)) {
    setenv("KMES_SOCKET", socket_path_.c_str(), 1);  // libkmes in this process talks to it
}

std::unique_ptr<ShimProcess> ShimProcess::start(ShimOptions options) {
    const bool wait_configured = options.wait_configured;
    auto shim = std::make_unique<ShimProcess>(std::move(options));
    std::string why;
    if (!shim->wait_ready(&why)) FAIL(why);
    if (wait_configured && !shim->wait_notification(" rings of ", std::chrono::seconds(10), &why)) FAIL(why);
    return shim;
}

void ShimProcess::write_config(const nlohmann::json& config) const { write_file(config_file_, config.dump(2)); }

void ShimProcess::write_raw_config(const std::string& text) const { write_file(config_file_, text); }

}  // namespace kmes::it

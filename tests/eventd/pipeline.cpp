#include "pipeline.hpp"

#include <signal.h>
#include <sys/wait.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>

#include <catch2/catch.hpp>

namespace eventd::it {

Pipeline::Pipeline(PipelineOptions options) : cpus_(options.cpus) {
    store_ = options.store_dir.empty() ? dir() + "/events" : options.store_dir;
    config_path_ = dir() + "/eventd.json";
    shim_options_ = {.config = options.kmes_config, .cpus = options.cpus, .socket_path = dir() + "/kmes.sock"};
    if (!options.generate.empty()) shim_options_.extra_args = {"--generate", options.generate};
    shim_ = kmes::it::ShimProcess::start(shim_options_);  // also points this process's libkmes at it
    boot_ = current_boot_id();
    watch_ = std::make_unique<RingWatch>(cpus_);
    write_eventd_config(options.eventd);
}

Pipeline::~Pipeline() {
    eventd_.reset();  // SIGTERM and a CHECKed clean exit, while the shim still runs
    watch_.reset();
    freeze_.reset();
}

void Pipeline::write_eventd_config(const nlohmann::json& overrides) {
    nlohmann::json o = overrides;
    if (!o.contains("EventStorePath")) o["EventStorePath"] = store_;
    write_json_file(config_path_, eventd_config(dir(), shim_->socket_path(), o));
}

EventdProcess& Pipeline::start_eventd() {
    REQUIRE(!eventd_running());
    eventd_ = EventdProcess::start(dir(), config_path_);
    return *eventd_;
}

std::string Pipeline::stop_eventd() {
    REQUIRE(eventd_);
    const int status = eventd_->terminate();
    const std::string log = eventd_->log();
    INFO("eventd ended with " << kmes::it::describe_status(status) << "; log:\n" << log);
    CHECK((WIFEXITED(status) && WEXITSTATUS(status) == 0));
    return log;
}

EventdProcess& Pipeline::spawn_eventd() {
    REQUIRE(!eventd_running());
    eventd_ = std::make_unique<EventdProcess>(dir(), config_path_);
    return *eventd_;
}

void Pipeline::kill_eventd() {
    REQUIRE(eventd_);
    const int status = eventd_->kill();
    REQUIRE((WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL));
}

Highest Pipeline::restart_shim() {
    REQUIRE_FALSE(freeze_);
    kmes::it::stop_process(shim_->pid());  // generators stop; the rings stay readable
    const Highest highest = watch_->highest();
    watch_.reset();
    const int status = shim_->kill();
    REQUIRE((WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL));
    shim_.reset();
    shim_ = kmes::it::ShimProcess::start(shim_options_);
    boot_ = current_boot_id();
    watch_ = std::make_unique<RingWatch>(cpus_);
    return highest;
}

Highest Pipeline::stop_emission() {
    if (!freeze_) freeze_.emplace(shim_->pid());
    return watch_->highest();
}

Highest Pipeline::finish(std::chrono::milliseconds timeout) {
    const Highest highest = stop_emission();
    std::string status;
    // The freeze may have stopped the shim between a publish and its wake-up (PSD-003 §5.1.8 step 9):
    // an idle drain of eventd would sleep on, that batch unread, until its 60 s bound. The test
    // gives the wake the frozen shim owes, at every poll (a drain between its last look at the
    // ring and its futex_wait misses one of them, not the next).
    const bool caught_up =
        wait_accounted(store_, boot_, highest, timeout, &status, [this] { watch_->wake_consumers(); });
    // What eventd itself says it holds (rings' positions, shards' commits) when it fell behind,
    // and where its threads wait (stopped, asleep on a ring, blocked on a channel or in SQLite).
    const std::string eventd_status = caught_up ? std::string() : eventctl_status();
    const std::string threads = caught_up ? std::string() : eventd_threads();
    INFO("eventd did not account for every emitted sequence:\n"
         << status << "eventctl status:\n"
         << eventd_status << "eventd threads:\n"
         << threads << "eventd log:\n"
         << eventd_->log());
    REQUIRE(caught_up);
    stop_eventd();
    return highest;
}

namespace {

// stdout and stderr of a shell command ("" when it cannot be run).
std::string command_output(const std::string& command) {
    std::string out;
    if (FILE* p = popen((command + " 2>&1").c_str(), "r")) {
        char buffer[4096];
        size_t n;
        while ((n = fread(buffer, 1, sizeof buffer, p)) > 0) out.append(buffer, n);
        pclose(p);
    }
    return out;
}

}  // namespace

std::string Pipeline::eventctl_status() const {
    const char* eventctl = std::getenv("EVENTCTL");
    if (eventctl == nullptr) return "(EVENTCTL is not set)\n";
    return command_output("timeout 10 '" + std::string(eventctl) + "' --socket '" + dir() + "/query.sock' status");
}

std::string Pipeline::eventd_threads() const {
    if (!eventd_) return "(no eventd)\n";
    const pid_t pid = eventd_->pid();
    const char state = kmes::it::process_state(pid);
    if (state == '?') return "(eventd " + std::to_string(pid) + " is gone)\n";
    std::string out = "eventd " + std::to_string(pid) + ": process state " + state + "\n";
    const std::filesystem::path tasks = "/proc/" + std::to_string(pid) + "/task";
    std::error_code error;
    for (const auto& task : std::filesystem::directory_iterator(tasks, error)) {
        const std::string dir = task.path().string();
        std::string comm = kmes::it::read_text(dir + "/comm");
        if (!comm.empty() && comm.back() == '\n') comm.pop_back();
        // /proc/<tid>/stat holds a thread's state as /proc/<pid>/stat a process's.
        const char thread_state = kmes::it::process_state(pid_t(std::stol(task.path().filename().string())));
        out += "thread " + task.path().filename().string() + " (" + comm + ") " + thread_state + ", waiting in " +
               kmes::it::read_text(dir + "/wchan") + "\n" + kmes::it::read_text(dir + "/stack");
    }
    if (command_output("command -v gdb").empty()) return out + "(gdb is not installed: no backtraces)\n";
    return out + command_output("timeout 60 gdb -p " + std::to_string(pid) + " -batch -ex 'thread apply all bt'");
}

}  // namespace eventd::it

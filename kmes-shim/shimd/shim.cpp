#include "shim.hpp"

#include <sched.h>
#include <signal.h>
#include <sys/random.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string_view>

#include <spdlog/spdlog.h>

#include "base/thread_boundary.hpp"

namespace kmes::shim {
namespace {
int64_t group_value(const std::optional<gid_t>& g) { return g ? int64_t(*g) : -1; }

// Test-only (KMES-SHIM.md "Test-only environment"): emitters may write the reserved event
// namespaces again, as a shim before issue 39 let them. The tests make with it the forged rows
// an older store can hold, and check that the verifier, retention, eventctl and the collector
// take them for ordinary rows. A build without sync points only says it ignores it.
bool reserved_types_allowed_for_tests() {
    const char* v = std::getenv("KMES_TEST_ALLOW_RESERVED_TYPES");
    if (!v || std::string_view(v) != "1") return false;
#ifdef KMES_SYNC_POINTS
    std::fprintf(stderr, "test-only KMES_TEST_ALLOW_RESERVED_TYPES=1: emitters may write the reserved event types\n");
    return true;
#else
    std::fprintf(stderr, "KMES_TEST_ALLOW_RESERVED_TYPES ignored: built without sync points (test-only)\n");
    return false;
#endif
}
}  // namespace

Shim::Shim(const ShimConfig& config)
    : config_(config),
      max_event_size_(ShimConfig{}.max_event_size),
      max_nesting_depth_(ShimConfig{}.max_nesting_depth),
      attach_group_(group_value(config.attach_group)),
      emit_group_(group_value(config.emit_group)),
      max_connections_per_user_(config.max_connections_per_user),
      request_timeout_ms_(config.request_timeout_ms),
      test_allow_reserved_types_(reserved_types_allowed_for_tests()),
      limiter_(ShimConfig{}.max_emit_rate) {
    // Until the "registry" is read, the §6.1 keys hold their compiled-in defaults (§6.1.3).
    const ShimConfig defaults;
    config_.buffer_capacity = defaults.buffer_capacity;
    config_.max_event_size = defaults.max_event_size;
    config_.max_nesting_depth = defaults.max_nesting_depth;
    config_.max_emit_rate = defaults.max_emit_rate;
}

base::Result<std::unique_ptr<Shim>> Shim::start(const ShimConfig& config) {
    std::unique_ptr<Shim> shim(new Shim(config));
    if (getrandom(shim->boot_id_.data(), shim->boot_id_.size(), 0) != 16) return base::errno_error("getrandom(boot id)");

    uint32_t cpus = config.cpus;
    if (cpus == 0) cpus = static_cast<uint32_t>(std::max(1L, sysconf(_SC_NPROCESSORS_ONLN)));
    // §5.1.2 boot rings: the compiled-in capacity, live and attachable at once.
    auto rings = RingSet::create(cpus, KMES_DEFAULT_BUFFER_CAPACITY, RingOptions{config.mlock, config.hugepages});
    if (!rings) return rings.error();
    shim->rings_ = std::move(*rings);

    if (base::Status s = shim->listen_on(config.socket_path); !s) return s.error();
    shim->acceptor_ = std::thread([raw = shim.get()] {
        base::run_guarded("kmes-shimd acceptor", [raw] { raw->accept_loop(); },
                          [raw](const std::string& why) { raw->fail(why); });
    });
    spdlog::info("kmes-shimd: {} rings of {} bytes, socket {}", cpus, KMES_DEFAULT_BUFFER_CAPACITY, config.socket_path);
    return shim;
}

Shim::~Shim() { stop(); }

void Shim::fail(const std::string& why) {
    {
        std::lock_guard lock(failure_mutex_);
        if (failure_) return;
        failure_ = why;
    }
    kill(getpid(), SIGTERM);  // main's signalfd takes it: the same orderly stop as a signal
}

std::optional<std::string> Shim::failure() const {
    std::lock_guard lock(failure_mutex_);
    return failure_;
}

void Shim::start_generators(const std::vector<GeneratorSpec>& specs) {
    for (const GeneratorSpec& spec : specs) {
        spdlog::info("built-in emitter: rate {}/s per CPU{}, payload {} B, origin class {}, {} type(s)", spec.rate,
                     spec.rate == 0 ? " (unlimited)" : "", spec.payload_size, spec.origin_class, spec.types.size());
        generators_.push_back(std::make_unique<Generator>(*rings_, spec));
    }
}

void Shim::apply_registry(const ConfigLoad& loaded) {
    std::lock_guard lock(config_mutex_);
    if (loaded.file_error) {
        spdlog::error("configuration not applied, values in force kept: {}", *loaded.file_error);
        return;
    }
    for (const Rejection& r : loaded.rejections) {
        spdlog::warn("configuration key {}: value {} rejected, keeping {}", r.key, r.rejected.dump(),
                     r.retained.dump());
        // PSD-003 §6.1.2: KMES emits an event through itself naming key, rejected and retained value.
        write_self_event("kmes.config_rejected",
                         {{"key", r.key}, {"rejected_value", r.rejected}, {"retained_value", r.retained}});
    }
    const ShimConfig& next = loaded.config;
    // Start-only keys: a change needs a restart (the ring count and socket are fixed at boot).
    auto start_only = [&](const char* key, bool changed) {
        if (changed) spdlog::warn("configuration key {} changed; it applies at the next start", key);
    };
    start_only("Cpus", next.cpus != config_.cpus);
    start_only("SocketPath", next.socket_path != config_.socket_path);
    start_only("Mlock", next.mlock != config_.mlock);
    start_only("Hugepages", next.hugepages != config_.hugepages);
    start_only("Generators", next.generators != config_.generators);

    max_event_size_.store(next.max_event_size, std::memory_order_relaxed);
    max_nesting_depth_.store(next.max_nesting_depth, std::memory_order_relaxed);
    attach_group_.store(group_value(next.attach_group), std::memory_order_relaxed);
    emit_group_.store(group_value(next.emit_group), std::memory_order_relaxed);
    max_connections_per_user_.store(next.max_connections_per_user, std::memory_order_relaxed);
    request_timeout_ms_.store(next.request_timeout_ms, std::memory_order_relaxed);
    if (next.max_emit_rate != config_.max_emit_rate) limiter_.set_rate(next.max_emit_rate);
    config_.max_event_size = next.max_event_size;
    config_.max_nesting_depth = next.max_nesting_depth;
    config_.max_emit_rate = next.max_emit_rate;
    config_.attach_group = next.attach_group;
    config_.emit_group = next.emit_group;
    config_.max_connections_per_user = next.max_connections_per_user;
    config_.request_timeout_ms = next.request_timeout_ms;

    if (next.buffer_capacity != rings_->capacity()) {
        // §5.1.9.4 swap; on allocation failure the rings stay as they are (§7.1.4).
        if (base::Status s = rings_->resize(next.buffer_capacity); !s) {
            spdlog::error("ring resize to {} bytes failed, keeping {}: {}", next.buffer_capacity, rings_->capacity(),
                          s.error().message);
            write_self_event("kmes.resize_failed", {{"key", "BufferCapacity"},
                                                    {"requested_capacity", next.buffer_capacity},
                                                    {"retained_capacity", rings_->capacity()},
                                                    {"error", s.error().message}});
        } else {
            spdlog::info("rings resized to {} bytes", next.buffer_capacity);
        }
    }
    config_.buffer_capacity = rings_->capacity();
    config_.audit = next.audit;
    apply_audit(next.audit);
}

void Shim::write_self_event(std::string_view type, const nlohmann::json& payload) {
    const std::vector<uint8_t> bytes = nlohmann::json::to_msgpack(payload);
    const EventInput event{type, bytes};
    const int cpu = sched_getcpu();
    rings_->write(cpu < 0 ? 0 : uint32_t(cpu), KMES_ORIGIN_KMES, {&event, 1}, Identity{});
}

}  // namespace kmes::shim

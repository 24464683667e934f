// A small timing harness for side-by-side measurements (docs/PERFORMANCE.md).
//
// Why not Google Benchmark: every number we report is a *ratio* against a floor measured in
// the same run (the machine is shared and absolute numbers drift). So the subject and its
// floors run in alternating chunks of a few milliseconds, and the reported ratio is the median
// of the ratios of neighbouring chunks — a noisy neighbour slows both sides of one ratio
// instead of skewing one column.
#pragma once

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace bench {

// Keep a value (or all memory) alive for the optimiser without costing an instruction.
template <class T>
inline void keep(const T& value) {
    asm volatile("" : : "r,m"(value) : "memory");
}
inline void clobber() { asm volatile("" : : : "memory"); }

// In-process benchmarks time the calling thread's CPU time, not wall time: on a shared
// 2-core machine a benchmark thread is descheduled often, and that must not count. (What a
// neighbour does to the caches still does.) Reading it is a real syscall (~0.2 µs), which
// is why it is read once per chunk of a few milliseconds, never per operation.
struct Clock {
    using time_point = uint64_t;  // ns of thread CPU time
    static time_point now() {
        struct timespec ts;
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
        return uint64_t(ts.tv_sec) * 1'000'000'000u + uint64_t(ts.tv_nsec);
    }
};
inline double seconds_since(Clock::time_point start) { return double(Clock::now() - start) * 1e-9; }

// Wall time, for what spans threads or processes (socket emission, wake-ups).
using WallClock = std::chrono::steady_clock;
inline double wall_seconds_since(WallClock::time_point start) {
    return std::chrono::duration<double>(WallClock::now() - start).count();
}

// Command-line knobs shared by every benchmark binary.
struct Options {
    double time = 2.0;         // seconds per case, shared by its side-by-side contenders
    double chunk_time = 1e-3;  // one timed sample; contenders alternate chunk by chunk
    bool quick = false;        // --quick: 0.2 s per case, for smoke runs

    static Options parse(int argc, char** argv) {
        Options o;
        for (int i = 1; i < argc; ++i) {
            std::string_view a = argv[i];
            if (a == "--quick") {
                o.quick = true;
                o.time = 0.2;
            } else if (a == "--time" && i + 1 < argc) {
                o.time = std::atof(argv[++i]);
            }
        }
        return o;
    }
};

inline double median(std::vector<double> v) {
    if (v.empty()) return 0;
    std::sort(v.begin(), v.end());
    const size_t m = v.size() / 2;
    return v.size() % 2 ? v[m] : (v[m - 1] + v[m]) / 2;
}

// The p-th percentile (0 < p ≤ 100) by nearest rank: a value that occurred; NAN when empty.
inline double percentile(std::vector<double> v, double p) {
    if (v.empty()) return NAN;
    std::sort(v.begin(), v.end());
    const size_t rank = size_t(std::ceil(p / 100.0 * double(v.size())));
    return v[std::min(v.size() - 1, rank ? rank - 1 : 0)];
}

// Samples of one measurement (ns per operation, one per chunk).
struct Series {
    std::vector<double> values;
    void add(double v) { values.push_back(v); }
    double med() const { return median(values); }
};

// Median of the ratios a[i] / b[i] of samples taken next to each other in time.
inline double ratio_median(const Series& a, const Series& b) {
    std::vector<double> r;
    for (size_t i = 0; i < a.values.size() && i < b.values.size(); ++i) r.push_back(a.values[i] / b.values[i]);
    return median(r);
}

// One side of a side-by-side measurement. `run(n)` performs about n operations and returns
// {seconds spent on them, operations done}; set-up inside it (re-filling a ring) is untimed.
struct Contender {
    std::function<std::pair<double, uint64_t>(uint64_t n)> run;
    Series ns;       // ns per operation, one sample per chunk
    uint64_t n = 0;  // operations per chunk, from calibration
};

// Convenience for contenders that are a tight loop of `op()`.
template <class Op>
std::function<std::pair<double, uint64_t>(uint64_t)> loop_of(Op op) {
    return [op](uint64_t n) mutable {
        const auto start = Clock::now();
        for (uint64_t i = 0; i < n; ++i) op();
        return std::pair{seconds_since(start), n};
    };
}

// Calibrate each contender to chunks of about chunk_time, then run them round-robin, one
// chunk each, until `time` has passed. On a shared machine a burst of load then hits both
// sides of a ratio alike instead of one column.
inline void interleave(const std::vector<Contender*>& contenders, const Options& options) {
    for (Contender* c : contenders) {
        uint64_t n = 1;
        for (;;) {
            auto [s, done] = c->run(n);
            if (s >= options.chunk_time || n >= (uint64_t{1} << 32)) break;
            n = std::max<uint64_t>(n + 1,
                                   s > options.chunk_time / 50 ? uint64_t(double(n) * options.chunk_time / s) : n * 4);
        }
        c->n = n;
    }
    const auto start = WallClock::now();
    do {
        for (Contender* c : contenders) {
            auto [s, done] = c->run(c->n);
            c->ns.add(s * 1e9 / double(std::max<uint64_t>(done, 1)));
        }
    } while (wall_seconds_since(start) < options.time);
}

inline std::string fmt(const char* format, double v) {
    char buf[64];
    std::snprintf(buf, sizeof buf, format, v);
    return buf;
}

// A Markdown table with aligned columns: readable in a terminal, pasteable into docs.
class Table {
public:
    explicit Table(std::vector<std::string> header) : rows_{std::move(header)} {}
    void add(std::vector<std::string> row) { rows_.push_back(std::move(row)); }
    void print(const std::string& title) const {
        std::vector<size_t> width;
        for (const auto& row : rows_)
            for (size_t c = 0; c < row.size(); ++c) {
                if (width.size() <= c) width.push_back(0);
                width[c] = std::max(width[c], row[c].size());
            }
        std::printf("\n### %s\n\n", title.c_str());
        for (size_t r = 0; r < rows_.size(); ++r) {
            std::printf("|");
            for (size_t c = 0; c < width.size(); ++c) {
                const std::string& cell = c < rows_[r].size() ? rows_[r][c] : std::string();
                std::printf(" %-*s |", int(width[c]), cell.c_str());
            }
            std::printf("\n");
            if (r == 0) {
                std::printf("|");
                for (size_t w : width) std::printf("%s|", std::string(w + 2, '-').c_str());
                std::printf("\n");
            }
        }
        std::fflush(stdout);
    }

private:
    std::vector<std::vector<std::string>> rows_;
};

inline std::string verdict(bool reached) { return reached ? "reached" : "MISSED"; }

}  // namespace bench

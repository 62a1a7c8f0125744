#include "dumpcmp/parallel.hpp"

#include <cstdlib>

namespace dumpcmp {

namespace {
std::atomic<unsigned> g_threads{0};

unsigned default_threads() noexcept {
    if (const char* env = std::getenv("DUMPCMP_NUM_THREADS")) {
        const long v = std::strtol(env, nullptr, 10);
        if (v > 0 && v < 4096) return static_cast<unsigned>(v);
    }
    const unsigned hw = std::thread::hardware_concurrency();
    return hw == 0 ? 1u : hw;
}
}  // namespace

unsigned num_threads() noexcept {
    const unsigned n = g_threads.load(std::memory_order_relaxed);
    return n != 0 ? n : default_threads();
}

void set_num_threads(unsigned n) noexcept { g_threads.store(n, std::memory_order_relaxed); }

}  // namespace dumpcmp

// Threads for the hot loops: a fixed split of the work into chunks, so partial results can be merged in chunk order
// and come out the same whatever the number of threads.
#pragma once
#include <algorithm>
#include <atomic>
#include <cstddef>
#include <exception>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

namespace dumpcmp {

// The process-wide thread count: DUMPCMP_NUM_THREADS if set, else the hardware's; set_num_threads overrides.
unsigned num_threads() noexcept;
void set_num_threads(unsigned n) noexcept;  // 0 = back to the default

// Threads that are always joined: by join(), else by the destructor, so an exception (or a thread the system
// refuses) never leaves a joinable std::thread to be destroyed, which would end the process (std::terminate).
class ThreadGroup {
public:
    ThreadGroup() = default;
    ThreadGroup(const ThreadGroup&) = delete;
    ThreadGroup& operator=(const ThreadGroup&) = delete;
    ~ThreadGroup() { join(); }

    // Runs fn on a new thread; false when none can be made (EAGAIN at the process's thread or memory-map limit,
    // no memory): the caller then does that share of the work itself.
    template <class Fn>
    bool spawn(Fn&& fn) noexcept {
        try {
            threads_.emplace_back(std::forward<Fn>(fn));
            return true;
        } catch (...) {
            return false;
        }
    }
    void join() noexcept {
        for (auto& t : threads_)
            if (t.joinable()) t.join();
        threads_.clear();
    }

private:
    std::vector<std::thread> threads_;
};

// Run fn(chunk) for chunk in [0, chunks) on up to `threads` threads (0 = num_threads()). Chunks are handed out in
// order from an atomic counter (on fewer threads when the system refuses some; the calling thread always works). The
// first exception thrown by any chunk is rethrown here after all threads stop.
template <class Fn>
void parallel_for(std::size_t chunks, Fn&& fn, unsigned threads = 0) {
    if (threads == 0) threads = num_threads();
    const std::size_t workers = std::min<std::size_t>(threads, chunks);
    if (workers <= 1) {
        for (std::size_t c = 0; c < chunks; ++c) fn(c);
        return;
    }
    std::atomic<std::size_t> next{0};
    std::atomic<bool> failed{false};
    std::exception_ptr error;
    std::mutex error_mutex;
    auto work = [&] {
        for (;;) {
            const std::size_t c = next.fetch_add(1, std::memory_order_relaxed);
            if (c >= chunks || failed.load(std::memory_order_relaxed)) return;
            try {
                fn(c);
            } catch (...) {
                std::lock_guard<std::mutex> lock(error_mutex);
                if (!error) error = std::current_exception();
                failed.store(true);
            }
        }
    };
    ThreadGroup pool;  // threads the system refuses are not waited for: this thread takes their chunks
    for (std::size_t i = 1; i < workers; ++i)
        if (!pool.spawn(work)) break;
    work();
    pool.join();
    if (error) std::rethrow_exception(error);
}

}  // namespace dumpcmp

namespace dumpcmp {
// The instruction set the hot loops run with on this CPU ("scalar", "avx2", "avx512"), capped by DUMPCMP_SIMD.
const char* simd_level_name() noexcept;
}  // namespace dumpcmp

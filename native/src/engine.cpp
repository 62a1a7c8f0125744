#include "dumpcmp/engine.hpp"

#include <algorithm>
#include <cstdlib>
#include <atomic>
#include <memory>
#include <stdexcept>
#include <string>
#include <system_error>
#include <thread>
#include <utility>
#include <vector>

#include "dumpcmp/layout.hpp"
#include "dumpcmp/parallel.hpp"

namespace dumpcmp {

namespace {

// Windows per round of parallel work: a round's partials are merged in order before the next round starts, so the
// partials take fixed memory however large the tensor.
constexpr std::size_t kWindowsPerRound = 256;

// Windows of `window` elements over [0, n): per_window(slot, first, count) fills the partial of `slot`, and
// merge_k(slot) folds it in, always in window order, so the result never depends on the threads nor on the order in
// which windows are read. Without `order`, windows are read in their own order, a round of kWindowsPerRound at a time
// (slot = the window's place in its round). With `order` (every window index once: storage_order), they are read in
// that order, and slot = the window's index: the caller holds a partial per window, each folded in (and free to be
// dropped) as soon as every window before it has been.
template <class PerWindow, class MergeInOrder>
void run_windows(std::uint64_t n, std::size_t window, unsigned threads, PerWindow&& per_window, MergeInOrder&& merge_k,
                 const std::vector<std::uint64_t>* order = nullptr) {
    const std::uint64_t windows = (n + window - 1) / window;
    std::vector<bool> done(order != nullptr ? windows : 0);
    std::uint64_t next = 0;  // with an order: the first window not yet merged
    for (std::uint64_t round = 0; round < windows; round += kWindowsPerRound) {
        const auto in_round = static_cast<std::size_t>(std::min<std::uint64_t>(kWindowsPerRound, windows - round));
        parallel_for(in_round, [&](std::size_t k) {
            const std::uint64_t w = order != nullptr ? (*order)[round + k] : round + k;
            const std::uint64_t first = w * window;
            per_window(order != nullptr ? static_cast<std::size_t>(w) : k, first,
                       static_cast<std::size_t>(std::min<std::uint64_t>(window, n - first)));
        }, threads);
        if (order == nullptr) {
            for (std::size_t k = 0; k < in_round; ++k) merge_k(k);
            continue;
        }
        for (std::size_t k = 0; k < in_round; ++k) done[(*order)[round + k]] = true;
        for (; next < windows && done[next]; ++next) merge_k(static_cast<std::size_t>(next));
    }
}

// A pair whose stored bytes reach this many is read in storage order (storage_order) and not faulted in ahead
// (compare_many): it may not fit in memory at once. DUMPCMP_STORAGE_ORDER_BYTES sets another size (the tests read
// small pairs in storage order with 0).
constexpr std::uint64_t kStorageOrderBytes = std::uint64_t{1} << 30;

std::uint64_t storage_order_bytes() noexcept {
    static const std::uint64_t bytes = [] {
        const char* v = std::getenv("DUMPCMP_STORAGE_ORDER_BYTES");
        char* end = nullptr;
        const unsigned long long n = v != nullptr && *v != '\0' ? std::strtoull(v, &end, 10) : 0;
        return end != nullptr && *end == '\0' ? static_cast<std::uint64_t>(n) : kStorageOrderBytes;
    }();
    return bytes;
}

// The windows of a side read through a layout plan, ordered by where their first element is stored; empty when the
// windows are best read in their own order (no plan, or a pair small enough for memory). A device layout scatters a
// window of the compared order over the stored tensor: in FRACTAL_NZ a row of an (m, n) matrix crosses every one of
// its n/16 tiles, and a row after row read sweeps the whole stored tensor for every row. Held in memory, that costs
// nothing; larger than memory, every sweep reads it from disk again (a 6 GB pair under 1.4 GiB of memory took 296 s
// instead of 5). In storage order the windows that share stored pages are read one after another, so each page is
// read from disk once per pass (docs/performance.md#larger-than-memory).
std::vector<std::uint64_t> storage_order(const TensorSource& x, const TensorSource& y, std::size_t window) {
    const TensorSource* planned = x.plan() != nullptr ? &x : (y.plan() != nullptr ? &y : nullptr);
    if (planned == nullptr || x.stored_bytes() + y.stored_bytes() < storage_order_bytes()) return {};
    const std::uint64_t n = x.count();
    const std::uint64_t windows = (n + window - 1) / window;
    std::vector<std::pair<std::uint64_t, std::uint64_t>> keyed(windows);
    for (std::uint64_t w = 0; w < windows; ++w) {
        std::uint64_t at = 0;
        planned->source_indices(w * window, 1, &at);
        keyed[w] = {at, w};
    }
    std::sort(keyed.begin(), keyed.end());
    std::vector<std::uint64_t> order(windows);
    for (std::uint64_t k = 0; k < windows; ++k) order[k] = keyed[k].second;
    return order;
}

struct ThreadScratch {
    SourceScratch x, y;
};
ThreadScratch& scratch() {
    thread_local ThreadScratch s;
    return s;
}

// A side read through tile transposes (NC1HWC0 -> NCHW and alike) whose rows (H*W positions of one channel) are
// longer than the window: each window would gather one channel out of every C0-element piece, reading the device
// block C0 times over and element by element. Its windows then hold whole blocks of the plan's tile rows (C0
// channels), up to this many elements per window and thread: much faster on such shapes
// (docs/performance.md#design-measurements).
constexpr std::uint64_t kMaxTileWindow = std::uint64_t{1} << 22;

std::size_t tile_window(const TensorSource& s, std::size_t window) {
    const Plan* p = s.plan();
    if (p == nullptr || p->kernel != 2 || p->tile_rows <= 0 || p->dims.size() < 2) return window;
    const auto block = static_cast<std::uint64_t>(p->tile_rows) * static_cast<std::uint64_t>(p->dims.back());
    if (block <= window || block > kMaxTileWindow) return window;
    return static_cast<std::size_t>(block);
}

// A side read through a layout plan is gathered into compared order once when the metrics will read it more than
// once (the cosine's and KLD's passes), up to this many bytes: the later passes then read plain memory instead of
// redoing the tile transposes of every window.
constexpr std::uint64_t kGatherOnceBytes = std::uint64_t{64} << 20;

// Room for the gathered sides, handed from one pair to the next when pairs run one after another (compare_many's
// large pairs). A fresh buffer per pair is fresh pages: the kernel zeroes them and the gather faults them in, one
// page at a time, on the comparison's threads. Handing them on leaves far fewer page faults
// (docs/performance.md#design-measurements); what is left are each batch's first pair's and the mapped files'.
class GatherRoom {
public:
    std::uint8_t* take(int side, std::size_t bytes) {
        Buffer& b = buffers_[side];
        if (b.size < bytes) {
            b.data.reset();  // the old one first: never both at once
            b.data.reset(new std::uint8_t[bytes]);
            b.size = bytes;
        }
        return b.data.get();
    }

private:
    struct Buffer {
        std::unique_ptr<std::uint8_t[]> data;
        std::size_t size = 0;
    };
    Buffer buffers_[2];
};

struct Gathered {
    std::unique_ptr<std::uint8_t[]> owned;  // empty when the bytes are a GatherRoom's
    TensorSource source;
};

// The compared order of `s` in one buffer of its stored data type (the room's for `side`, or its own), or nullptr
// (no plan, a packed type, too large).
std::unique_ptr<Gathered> gather_once(const TensorSource& s, unsigned threads, GatherRoom* room, int side) {
    const int bits = data_type_info(s.type()).bits;
    if (s.plan() == nullptr || bits < 8 || bits % 8 != 0) return nullptr;
    const auto elem = static_cast<std::uint64_t>(bits / 8);
    if (s.count() > kGatherOnceBytes / elem) return nullptr;
    const auto size = static_cast<std::size_t>(s.count() * elem);
    std::unique_ptr<std::uint8_t[]> owned;  // not zeroed first: convert() writes every byte
    std::uint8_t* bytes = nullptr;
    if (room != nullptr) {
        bytes = room->take(side, size);
    } else {
        owned.reset(new std::uint8_t[size]);
        bytes = owned.get();
    }
    // The layout codec's whole-tensor kernel: chunks of whole tile blocks, where the windows of the passes (whole
    // NumPy blocks) would cut channel rows and take the element-by-element path at every cut.
    convert(*s.plan(), s.data(), bytes, threads);
    return std::make_unique<Gathered>(Gathered{std::move(owned), TensorSource(bytes, s.type(), s.count())});
}

// Both sides' windows [first, first + count), in the form the metrics read, handed to fn(x_window, y_window).
template <class Fn>
void with_windows(const TensorSource& x, const TensorSource& y, std::uint64_t first, std::size_t count, Fn&& fn) {
    ThreadScratch& s = scratch();
    fn(x.read_window(first, count, s.x), y.read_window(first, count, s.y));
}

// compare_sources with a room for the gathered sides that outlives the call (nullptr: buffers of its own).
MetricResult compare_in(const TensorSource& x_in, const TensorSource& y_in, const CompareOptions& options,
                        GatherRoom* room) {
    if (x_in.count() != y_in.count())
        throw std::invalid_argument("element counts differ: " + std::to_string(x_in.count()) + " vs " +
                                    std::to_string(y_in.count()));
    if (options.chunk_elements == 0) throw std::invalid_argument("window size must be at least one element");
    const std::uint64_t n = x_in.count();
    std::size_t window =
        std::max(tile_window(x_in, options.chunk_elements), tile_window(y_in, options.chunk_elements));
    // The default mode's float32 sums are NumPy's blocks of kF32SumBlock elements: windows hold whole blocks.
    if (!options.precise) window = (window + kF32SumBlock - 1) / kF32SumBlock * kF32SumBlock;
    const bool both_bool = x_in.type() == DataType::BOOL && y_in.type() == DataType::BOOL;
    // More than one pass when the cosine's terms (default mode) or KLD are wanted: gather plan sides once. The
    // windows and the bytes they hold are the same either way, so are the results.
    const MetricMask later_passes = metric_bit(Metric::KullbackLeiblerDivergence) |
                                    (options.precise ? 0u : metric_bit(Metric::CosineSimilarity));
    std::unique_ptr<Gathered> gx, gy;
    if ((options.metrics & later_passes) != 0 && !both_bool) {
        gx = gather_once(x_in, options.threads, room, 0);
        gy = gather_once(y_in, options.threads, room, 1);
    }
    const TensorSource& x = gx ? gx->source : x_in;
    const TensorSource& y = gy ? gy->source : y_in;
    const MetricOptions mopt{options.metrics, options.scalar, both_bool, options.precise};

    const std::vector<std::uint64_t> order = storage_order(x, y, window);
    const std::vector<std::uint64_t>* ordered = order.empty() ? nullptr : &order;
    // a slot per window of a round (run_windows): a small pair has one window, and zeroing kWindowsPerRound slots of
    // partial sums (57 KB) took most of its fixed cost
    const std::size_t slots = ordered != nullptr ? order.size()
                                                 : static_cast<std::size_t>(std::min<std::uint64_t>(
                                                       kWindowsPerRound, (n + window - 1) / window));
    std::vector<MetricPartial> partials(slots);
    MetricPartial total;
    // Windows reach the metrics in their stored data type (fp32/fp16 read in place, fp16 decoded in registers);
    // a layout plan first gathers a window's bytes into compared order.
    run_windows(n, window, options.threads,
        [&](std::size_t k, std::uint64_t first, std::size_t count) {
            partials[k] = MetricPartial{};
            with_windows(x, y, first, count, [&](TensorSource::Window wx, TensorSource::Window wy) {
                accumulate_stored(wx.data, wx.type, wy.data, wy.type, 0, count, partials[k], options.precise);
            });
        },
        [&](std::size_t k) {
            merge(total, partials[k]);
            if (ordered != nullptr) partials[k] = MetricPartial{};  // its blocks are in total now
        },
        ordered);

    // KLD normalises by each side's min and max, known only after the first pass: a second pass over the data.
    const bool kld_wanted = (options.metrics & metric_bit(Metric::KullbackLeiblerDivergence)) && !both_bool;
    const KldParams params = kld_params(total, options.precise);
    KldPartial kld_total;
    std::vector<KldPartial> kparts(slots);
    auto pass = [&](const KldParams& p) {
        run_windows(n, window, options.threads,
            [&](std::size_t k, std::uint64_t first, std::size_t count) {
                kparts[k] = KldPartial{};
                with_windows(x, y, first, count, [&](TensorSource::Window wx, TensorSource::Window wy) {
                    accumulate_kld_stored(wx.data, wx.type, wy.data, wy.type, 0, count, p, kparts[k]);
                });
            },
            [&](std::size_t k) {
                merge(kld_total, kparts[k]);
                if (ordered != nullptr) kparts[k] = KldPartial{};
            },
            ordered);
    };
    const bool cosine_wanted = (options.metrics & metric_bit(Metric::CosineSimilarity)) && !options.scalar;
    if (options.precise || both_bool) {
        if (kld_wanted && params.needed) pass(params);
    } else {
        // The original's float32 arithmetic exactly: p and q summed (and the cosine's terms, which need pass 1's
        // norms), then the KLD terms, which need those sums.
        KldParams stage = params;
        stage.stage = 1;
        stage.kld = kld_wanted && params.needed;
        stage.cosine = cosine_wanted && cosine_terms_wanted(total, stage.nx32, stage.ny32);
        if (stage.kld || stage.cosine) pass(stage);
        if (stage.kld) {
            stage.stage = 2;
            stage.sp32 = fold_blocks(kld_total.p_blocks);
            stage.sq32 = fold_blocks(kld_total.q_blocks);
            pass(stage);
        }
    }
    return finalize(total, kld_wanted || !kld_total.c_blocks.empty() ? &kld_total : nullptr, mopt);
}

}  // namespace

MetricResult compare_sources(const TensorSource& x, const TensorSource& y, const CompareOptions& options) {
    return compare_in(x, y, options, nullptr);
}

MetricResult compare(const std::uint8_t* x, DataType tx, const std::uint8_t* y, DataType ty, std::uint64_t n,
                     const CompareOptions& options) {
    return compare_sources(TensorSource(x, tx, n), TensorSource(y, ty, n), options);
}

std::vector<JobOutcome> compare_many(const std::vector<CompareJob>& jobs, unsigned threads) {
    std::vector<JobOutcome> out(jobs.size());
    auto fault_in = [&](std::size_t i) {
        jobs[i].x->prefault();
        jobs[i].y->prefault();
    };
    GatherRoom room;  // the large pairs' (one at a time); small pairs, side by side, gather into their own
    auto run_one = [&](std::size_t i, unsigned inner_threads, GatherRoom* r) {
        try {
            CompareOptions o = jobs[i].options;
            o.threads = inner_threads;
            out[i].result = compare_in(*jobs[i].x, *jobs[i].y, o, r);
            out[i].ok = true;
        } catch (const std::exception& e) {
            out[i].error = e.what();
        }
    };
    std::vector<std::size_t> small, large;
    for (std::size_t i = 0; i < jobs.size(); ++i)
        (jobs[i].x->count() >= kLargePairElements ? large : small).push_back(i);
    // A pair that may not fit in memory is not faulted in ahead: pages faulted in ahead of the comparison would push
    // out the pages it is reading (storage_order).
    auto fits = [&](std::size_t i) {
        return jobs[i].x->stored_bytes() + jobs[i].y->stored_bytes() < storage_order_bytes();
    };
    // Faulting in the large pairs' pages (one read per page, kernel work on one core) runs on a thread of its own,
    // pair after pair, from the start. The comparison never waits for it: a pair it has not reached yet faults its
    // pages in as it reads them, on every thread, and the fault-ahead thread skips the pairs already begun. Waiting
    // for it (each pair joined the thread that faulted it in) left a core idle whenever faulting in a pair took
    // longer than comparing the one before it, and the first pair of every batch was faulted in on one core alone.
    std::atomic<std::size_t> begun{0};  // large pairs the comparison has started: all of them ends the thread's work
    ThreadGroup ahead;  // joined on every way out
    if (!large.empty()) {
        // no thread (the system refuses one): each pair faults its pages in as it reads them
        ahead.spawn([&] {
            for (std::size_t k = begun.load(std::memory_order_relaxed); k < large.size();
                 k = std::max(k + 1, begun.load(std::memory_order_relaxed)))
                if (fits(large[k])) fault_in(large[k]);
        });
    }
    parallel_for(small.size(), [&](std::size_t k) {
        fault_in(small[k]);
        run_one(small[k], 1, nullptr);
    }, threads);
    for (std::size_t k = 0; k < large.size(); ++k) {
        begun.store(k + 1, std::memory_order_relaxed);
        run_one(large[k], threads, &room);
    }
    ahead.join();
    return out;
}

}  // namespace dumpcmp

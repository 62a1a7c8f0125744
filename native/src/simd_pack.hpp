// Fixed logical lane sets held in registers of the level's native width.
//
// The metrics kernels reduce in eight double lanes (sixteen float lanes) in a fixed order, on every level, so that
// all levels give the same bits. A 64-byte GCC vector expresses that directly, but below AVX-512 GCC 12 splits such
// vectors itself and does it badly (spills, shuffles, element-wise compares). A Pack holds the same logical lanes
// as N explicit vectors of the target's own width: lane j lives in part j / per, element j % per. Every operator
// works part by part, so each logical lane sees exactly the operations it would in one wide vector.
#pragma once

#include <cstddef>
#include <cstdint>

#define DUMPCMP_AI __attribute__((always_inline)) inline

// Runs the statement once per part with k a compile-time constant (no loop for the optimisers to unroll first:
// the parts must be separate registers from the start). N is 1, 2 or 4.
#define DUMPCMP_EACH(N, ...)                                                       \
    do {                                                                           \
        { constexpr std::size_t k = 0; __VA_ARGS__; }                              \
        if constexpr ((N) > 1) { constexpr std::size_t k = 1; __VA_ARGS__; }       \
        if constexpr ((N) > 2) { constexpr std::size_t k = 2; __VA_ARGS__; }       \
        if constexpr ((N) > 3) { constexpr std::size_t k = 3; __VA_ARGS__; }       \
    } while (0)

namespace dumpcmp::detail {

template <class T, std::size_t Bytes>
struct Native {
    typedef T type __attribute__((vector_size(Bytes)));
};

// The integer type of a comparison's result for lanes of T.
template <class T> struct MaskOf;
template <> struct MaskOf<double> { using type = long long; };
template <> struct MaskOf<long long> { using type = long long; };
template <> struct MaskOf<unsigned long long> { using type = long long; };
template <> struct MaskOf<float> { using type = std::int32_t; };
template <> struct MaskOf<std::int32_t> { using type = std::int32_t; };
template <> struct MaskOf<std::uint32_t> { using type = std::int32_t; };

template <class T, std::size_t Bytes, std::size_t N>
struct Pack {
    using V = typename Native<T, Bytes>::type;
    static constexpr std::size_t per = Bytes / sizeof(T);
    static constexpr std::size_t lanes = per * N;
    V p[N];

    DUMPCMP_AI T operator[](std::size_t j) const noexcept { return p[j / per][j % per]; }
    DUMPCMP_AI void set(std::size_t j, T v) noexcept { p[j / per][j % per] = v; }
    // Every lane v. Subtracting +0 is exact for every v (-0 included) and folds to a broadcast.
    static DUMPCMP_AI Pack splat(T v) noexcept {
        Pack r;
        DUMPCMP_EACH(N, r.p[k] = v - V{});
        return r;
    }
    static DUMPCMP_AI Pack zero() noexcept {
        Pack r;
        DUMPCMP_EACH(N, r.p[k] = V{});
        return r;
    }
};

// Same lanes, another element type of the same size: the bits unchanged.
template <class To, class T, std::size_t B, std::size_t N>
DUMPCMP_AI Pack<To, B, N> bitcast(const Pack<T, B, N>& a) noexcept {
    static_assert(sizeof(To) == sizeof(T), "bit casts keep the lanes");
    Pack<To, B, N> r;
    DUMPCMP_EACH(N, r.p[k] = (typename Pack<To, B, N>::V)a.p[k]);
    return r;
}

#define DUMPCMP_PACK_BINARY(op)                                                                              \
    template <class T, std::size_t B, std::size_t N>                                                         \
    DUMPCMP_AI Pack<T, B, N> operator op(const Pack<T, B, N>& a, const Pack<T, B, N>& b) noexcept {          \
        Pack<T, B, N> r;                                                                                     \
        DUMPCMP_EACH(N, r.p[k] = a.p[k] op b.p[k]);                                                          \
        return r;                                                                                            \
    }                                                                                                        \
    template <class T, std::size_t B, std::size_t N>                                                         \
    DUMPCMP_AI Pack<T, B, N> operator op(const Pack<T, B, N>& a, T b) noexcept {                             \
        Pack<T, B, N> r;                                                                                     \
        DUMPCMP_EACH(N, r.p[k] = a.p[k] op b);                                                               \
        return r;                                                                                            \
    }                                                                                                        \
    template <class T, std::size_t B, std::size_t N>                                                         \
    DUMPCMP_AI Pack<T, B, N> operator op(T a, const Pack<T, B, N>& b) noexcept {                             \
        Pack<T, B, N> r;                                                                                     \
        DUMPCMP_EACH(N, r.p[k] = a op b.p[k]);                                                               \
        return r;                                                                                            \
    }                                                                                                        \
    template <class T, std::size_t B, std::size_t N>                                                         \
    DUMPCMP_AI Pack<T, B, N>& operator op##=(Pack<T, B, N>& a, const Pack<T, B, N>& b) noexcept {            \
        DUMPCMP_EACH(N, a.p[k] = a.p[k] op b.p[k]);                                                          \
        return a;                                                                                            \
    }
DUMPCMP_PACK_BINARY(+)
DUMPCMP_PACK_BINARY(-)
DUMPCMP_PACK_BINARY(*)
DUMPCMP_PACK_BINARY(/)
DUMPCMP_PACK_BINARY(&)
DUMPCMP_PACK_BINARY(|)
#undef DUMPCMP_PACK_BINARY

template <class T, std::size_t B, std::size_t N>
DUMPCMP_AI Pack<T, B, N> operator~(const Pack<T, B, N>& a) noexcept {
    Pack<T, B, N> r;
    DUMPCMP_EACH(N, r.p[k] = ~a.p[k]);
    return r;
}
template <class T, std::size_t B, std::size_t N>
DUMPCMP_AI Pack<T, B, N> operator>>(const Pack<T, B, N>& a, int s) noexcept {
    Pack<T, B, N> r;
    DUMPCMP_EACH(N, r.p[k] = a.p[k] >> s);
    return r;
}
template <class T, std::size_t B, std::size_t N>
DUMPCMP_AI Pack<T, B, N> operator<<(const Pack<T, B, N>& a, int s) noexcept {
    Pack<T, B, N> r;
    DUMPCMP_EACH(N, r.p[k] = a.p[k] << s);
    return r;
}

template <class T, std::size_t B, std::size_t N>
using MaskPack = Pack<typename MaskOf<T>::type, B, N>;

template <class T, std::size_t B, std::size_t N>
DUMPCMP_AI MaskPack<T, B, N> operator<(const Pack<T, B, N>& a, const Pack<T, B, N>& b) noexcept {
    MaskPack<T, B, N> r;
    DUMPCMP_EACH(N, r.p[k] = a.p[k] < b.p[k]);
    return r;
}
template <class T, std::size_t B, std::size_t N>
DUMPCMP_AI MaskPack<T, B, N> operator==(const Pack<T, B, N>& a, T b) noexcept {
    MaskPack<T, B, N> r;
    DUMPCMP_EACH(N, r.p[k] = a.p[k] == b);
    return r;
}

// mask ? a : b lane by lane (mask lanes all ones or all zeros).
template <class M, class T, std::size_t B, std::size_t N>
DUMPCMP_AI Pack<T, B, N> pick(const Pack<M, B, N>& mask, const Pack<T, B, N>& a, const Pack<T, B, N>& b) noexcept {
    Pack<T, B, N> r;
    DUMPCMP_EACH(N, r.p[k] = mask.p[k] ? a.p[k] : b.p[k]);
    return r;
}

}  // namespace dumpcmp::detail
